"""The lane classifier reads which wire keys a model was given from its fields, without dumping
it (every reload classifies every event): those keys are exactly the keys of ``to_wire()``."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from maka_es.testing.strategies import runtime_event_dicts
from maka_es.wire.events import RuntimeEvent, _set_keys


@given(runtime_event_dicts())
def test_set_keys_are_the_keys_of_to_wire(event: dict[str, Any]) -> None:
    decoded = RuntimeEvent.model_validate(event)
    for model in (decoded, decoded.actions, decoded.refs, decoded.content):
        if model is not None:
            assert _set_keys(model) == frozenset(model.to_wire())
    if decoded.actions is not None and decoded.actions.state_delta is not None:
        assert decoded.actions.state_delta == decoded.actions.to_wire()["stateDelta"]
