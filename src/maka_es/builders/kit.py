"""The base every event builder shares: a spine, a timestamp and what to hand back.

Why generic over the result: hosts append wire dicts (``Events.wire``), while tests of the pure
planners want decoded ``RuntimeEvent`` models (``Events.decoded``). One set of builders serves
both, so the two can never drift apart.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from maka_es.builders.spine import Spine

EventT = TypeVar("EventT")

#: Placeholder ``sha256:`` digest for facts whose digest a test does not care about.
SAMPLE_DIGEST = "sha256:" + "a" * 64

#: The author that writes each provider-history role when nothing else is said.
AUTHOR_OF_ROLE = {"user": "user", "model": "agent", "tool": "tool", "system": "system"}


#: Default ``args`` of a call (and of a permission request): a shell command.
SHELL_ARGS: Mapping[str, Any] = {"command": "do-it"}
#: Default ``result`` of a response: text content, as a tool usually answers.
OK_RESULT: Mapping[str, Any] = {"kind": "text", "text": "ok"}


def fresh(value: Any) -> Any:
    """``value`` deep-copied, so two events never share a mutable ``args`` / ``result`` and a
    caller's constant (or a builder default) stays untouched. ``None`` stays a JSON null."""
    return copy.deepcopy(value)


def visibility(hidden: bool) -> dict[str, Any]:
    """Envelope keys of a Code Mode fact the model never sees (docs/reference/wire.md#envelope)."""
    return {"origin": "code_mode", "modelVisibility": "hidden"} if hidden else {}


@dataclass(frozen=True)
class EventKit(Generic[EventT]):
    """Builds events on ``spine`` at ``ts`` and passes each through ``finish``.

    Every builder method takes ``**overrides``: wire (camelCase) top-level keys that replace
    what the builder wrote, for the odd case a test needs (``partial=True``, ``refs={...}``,
    ``ts=5``). Nothing here reads a clock or a random source: the same call always builds the
    same event.
    """

    spine: Spine
    ts: float
    finish: Callable[[dict[str, Any]], EventT]

    def _emit(
        self,
        event_id: str,
        role: str,
        author: str,
        fields: Mapping[str, Any],
        overrides: Mapping[str, Any],
    ) -> EventT:
        return self._fact(self.spine.envelope(event_id, self.ts, role, author), fields, overrides)

    def _fact(self, wire: dict[str, Any], *extra: Mapping[str, Any]) -> EventT:
        """A fact spelled by ``maka_es.wire.facts``, plus ``extra`` keys (visibility, then
        the caller's overrides) in that order, handed back through ``finish``."""
        for fields in extra:
            wire.update(fields)
        return self.finish(wire)

    def _operation(self, call_id: str, operation_id: str | None) -> str:
        return self.spine.operation_id(call_id) if operation_id is None else operation_id
