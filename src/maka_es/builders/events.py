"""``Events``: every builder on one spine and timestamp, as wire dicts or decoded models.

Why one class: a test or host that builds a ledger by hand needs the same identity and clock on
every event, and the same shapes as the store writes (docs/reference/wire.md#examples). The
module-level functions are the builders of ``Events.wire()`` (spine ``s1 / i1 / r1 / t1``,
``ts`` 1000) for one-off events.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from maka_es.builders.conversation import ConversationEvents
from maka_es.builders.kit import EventT
from maka_es.builders.spine import Spine
from maka_es.builders.tool_facts import ToolFacts
from maka_es.wire.events import RuntimeEvent


def _as_wire(event: dict[str, Any]) -> dict[str, Any]:
    """Wire dicts are handed back unvalidated: a test may build a deliberately bad event."""
    return event


class Events(ConversationEvents[EventT], ToolFacts[EventT]):
    """Conversation events and tool facts on ``spine`` at ``ts``.

    ``Events.wire(spine, ts)`` hands back wire dicts (what ``append_event`` and the tool
    commands take); ``Events.decoded(spine, ts)`` hands back validated ``RuntimeEvent`` models
    (what the pure planners and resolvers are tested with).
    """

    @staticmethod
    def wire(spine: Spine | None = None, ts: float = 1000) -> Events[dict[str, Any]]:
        return Events(spine or Spine(), ts, _as_wire)

    @staticmethod
    def decoded(spine: Spine | None = None, ts: float = 1000) -> Events[RuntimeEvent]:
        return Events(spine or Spine(), ts, RuntimeEvent.model_validate)

    def at(self, ts: float) -> Events[EventT]:
        """The same builders at another timestamp."""
        return dataclasses.replace(self, ts=ts)


_ONE_OFF = Events.wire()

event = _ONE_OFF.event
user = _ONE_OFF.user
text = _ONE_OFF.text
thinking = _ONE_OFF.thinking
permission_request = _ONE_OFF.permission_request
permission_decision = _ONE_OFF.permission_decision
terminal = _ONE_OFF.terminal
continuation_start = _ONE_OFF.continuation_start
state_delta_continuation_start = _ONE_OFF.state_delta_continuation_start
call = _ONE_OFF.call
dispatch = _ONE_OFF.dispatch
response = _ONE_OFF.response
bound_response = _ONE_OFF.bound_response
refusal = _ONE_OFF.refusal
reconcile = _ONE_OFF.reconcile
completed_decision = _ONE_OFF.completed_decision
parked_decision = _ONE_OFF.parked_decision
completed_bundle = _ONE_OFF.completed_bundle
parked_bundle = _ONE_OFF.parked_bundle
