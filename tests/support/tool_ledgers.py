"""Shared tool-fact prefixes for resolver and snapshot tests: one settled operation and one
completed recovery bundle, the two shapes every fold-equivalence test starts from."""

from __future__ import annotations

from maka_es.testing.builders import Events
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1
from maka_es.wire.events import RuntimeEvent

ARGS = {"command": "do-it"}


def settled_and_bundled(ev: Events[RuntimeEvent]) -> list[RuntimeEvent]:
    """A user message declaring T1; ``op-1`` settled by its response; ``op-2`` (reconcile
    mode) settled by a completed recovery bundle."""
    return [
        ev.user("run it", event_id="u", marker=T1),
        ev.call("call-1", event_id="c1", with_refs=True),
        ev.dispatch("call-1", event_id="d1", operation_id="op-1"),
        ev.response("call-1", "Bash", "ok", event_id="r1", operation_id="op-1"),
        ev.call("call-2", "Bash", ARGS, event_id="c2", with_refs=True),
        ev.dispatch(
            "call-2", "Bash", ARGS, event_id="d2", operation_id="op-2", recovery_mode="reconcile"
        ),
        ev.reconcile("call-2", event_id="rc2", operation_id="op-2"),
        ev.response("call-2", "Bash", "ok", event_id="o2", operation_id="op-2"),
        ev.completed_decision(
            "call-2",
            evidence=["c2", "d2", "rc2", "o2"],
            outcome_event_id="o2",
            event_id="dc2",
            operation_id="op-2",
        ),
    ]
