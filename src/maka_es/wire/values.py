"""Value models: frozen, exact-key values shared by every capability's pure models (plans,
diagnostics, decisions, host observations).

Why not ``WireModel``: that base refuses explicit ``None`` because absent and ``null`` differ on
the RuntimeEvent wire; a value instead always carries every key (``null`` when absent), so a
reader never has to distinguish "missing" from "not applicable". (Not "report": that word is
the HTML run report's, :mod:`maka_es.report`.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from maka_es.wire.events import RuntimeEvent, as_runtime_event

#: What the resolver and projections accept: decoded events or plain wire mappings.
RuntimeEventInput = RuntimeEvent | Mapping[str, Any]


class ValueModel(BaseModel):
    """Frozen, exact-shape value model: snake_case attributes, camelCase aliases.

    Not a ``WireModel``: that base refuses explicit ``None`` because absent and ``null`` differ
    on the RuntimeEvent wire; values instead always carry every key (``null`` when absent).
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )


def decode_events(events: Iterable[RuntimeEventInput]) -> tuple[RuntimeEvent, ...]:
    """Decode every input to a ``RuntimeEvent`` without touching the caller's objects.

    A mapping that is not a valid RuntimeEvent raises ``InvalidRuntimeEventError``: the
    projections only ever reason about well-formed facts, and a malformed committed row is a
    storage problem the reader must surface, not something to classify around.
    """
    return tuple(
        event if isinstance(event, RuntimeEvent) else as_runtime_event(dict(event))
        for event in events
    )
