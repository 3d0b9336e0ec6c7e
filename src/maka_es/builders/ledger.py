"""``LedgerBuilder``: one run's ledger, appended event by event, as the host and store write it.

Why: most tests need a short valid ledger in order. The builder numbers the events a host names
itself (``<prefix><n>``, ``ts = base_ts + n``) and gives the facts the store authors the store's
names (``<operationId>_dispatch`` ...), so a hand-built ledger reads like a committed one
(docs/reference/wire.md#examples). Deterministic: no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from maka_es.builders.events import Events
from maka_es.builders.kit import OK_RESULT, SHELL_ARGS
from maka_es.builders.spine import Spine
from maka_es.wire.events import RuntimeEvent

Wire = dict[str, Any]


def event_ids(events: Iterable[RuntimeEvent | Mapping[str, Any]]) -> list[str]:
    """The ids of ``events`` (models or wire dicts), in order: what ledger assertions compare."""
    return [e["id"] if isinstance(e, Mapping) else e.id for e in events]


@dataclass
class LedgerBuilder:
    """Appends wire dicts to ``events``; every method returns the event it appended."""

    spine: Spine = field(default_factory=Spine)
    prefix: str = "e"
    base_ts: int = 1000
    events: list[Wire] = field(default_factory=list)

    def _kit(self) -> Events[Wire]:
        return Events.wire(self.spine, self.base_ts + len(self.events) + 1)

    def _id(self, event_id: str | None) -> str:
        return event_id or f"{self.prefix}{len(self.events) + 1}"

    def add(self, event: Wire) -> Wire:
        """Append an event built elsewhere (a deliberately odd one, say)."""
        self.events.append(event)
        return event

    def decoded(self) -> list[RuntimeEvent]:
        """The ledger so far as validated ``RuntimeEvent`` models."""
        return [RuntimeEvent.model_validate(event) for event in self.events]

    def event(self, *, event_id: str | None = None, **fields: Any) -> Wire:
        """A bare envelope (system role and author unless ``role`` / ``author`` say otherwise)
        plus ``fields`` as top-level wire keys."""
        return self.add(self._kit().event(self._id(event_id), **fields))

    def user(
        self,
        text: str = "fix the port",
        *,
        marker: bool | str | None = False,
        event_id: str | None = None,
        **kw: Any,
    ) -> Wire:
        """A user message; ``marker=True`` declares the T1 protocol (on a run's first event)."""
        return self.add(self._kit().user(self._id(event_id), text, marker=marker, **kw))

    def model_text(
        self, text: str = "working on it", *, event_id: str | None = None, **kw: Any
    ) -> Wire:
        """Model text (role ``model``, author ``agent``)."""
        return self.add(self._kit().text(self._id(event_id), text, **kw))

    def thinking(
        self, text: str = "thinking it over", *, event_id: str | None = None, **kw: Any
    ) -> Wire:
        """Model reasoning; pass ``signature=`` for a provider that replays signed thinking."""
        return self.add(self._kit().thinking(self._id(event_id), text, **kw))

    def call(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        args: Any = SHELL_ARGS,
        *,
        event_id: str | None = None,
        **kw: Any,
    ) -> Wire:
        """A function_call without ``refs`` (pre-T1), unless ``kw`` asks for them."""
        return self.add(self._kit().call(call_id, name, args, event_id=self._id(event_id), **kw))

    def t1_call(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        args: Any = SHELL_ARGS,
        *,
        recovery_mode: str = "never_auto_retry",
        event_id: str | None = None,
    ) -> Wire:
        """What T1 commits: the call bound to its operation, then its dispatch fact at the same
        ``ts`` (docs/reference/wire.md#example-call). Returns the call."""
        kit = self._kit()
        call = self.add(kit.call(call_id, name, args, event_id=self._id(event_id), t1=True))
        self.add(kit.dispatch(call_id, name, args, recovery_mode=recovery_mode))
        return call

    def dispatch(
        self, call_id: str = "tool-1", name: str = "Bash", args: Any = SHELL_ARGS, **kw: Any
    ) -> Wire:
        """A dispatch fact alone (id ``<operationId>_dispatch``)."""
        return self.add(self._kit().dispatch(call_id, name, args, **kw))

    def response(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        result: Any = OK_RESULT,
        *,
        is_error: bool | None = None,
        event_id: str | None = None,
        **kw: Any,
    ) -> Wire:
        """A function_response without ``refs`` (pre-T1 or unmarked), unless ``kw`` asks."""
        kit = self._kit()
        event = kit.response(
            call_id, name, result, event_id=self._id(event_id), is_error=is_error, **kw
        )
        return self.add(event)

    def bound_response(
        self, call_id: str = "tool-1", name: str = "Bash", result: Any = OK_RESULT, **kw: Any
    ) -> Wire:
        """The T2 outcome (id ``<operationId>_response``)."""
        return self.add(self._kit().bound_response(call_id, name, result, **kw))

    def refusal(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        reason: str = "permission denied",
        *,
        event_id: str | None = None,
        **kw: Any,
    ) -> Wire:
        """A pre-T1 refusal: an error response without ``refs`` (the host names it)."""
        refusal = self._kit().refusal(call_id, name, reason, event_id=self._id(event_id), **kw)
        return self.add(refusal)

    def evidence(self, call_id: str = "tool-1") -> list[str]:
        """``[call, dispatch, reconcile]`` ids of ``call_id``'s operation in this ledger."""
        calls = [
            e["id"]
            for e in self.events
            if e.get("content", {}).get("kind") == "function_call" and e["content"]["id"] == call_id
        ]
        return self._kit().evidence(call_id, call_event_id=calls[-1] if calls else None)

    def reconcile(
        self,
        call_id: str = "tool-1",
        observation: str = "matches_expected_state",
        **kw: Any,
    ) -> Wire:
        """The reconcile result of ``call_id``'s operation (id ``<operationId>_reconcile``)."""
        return self.add(self._kit().reconcile(call_id, observation, **kw))

    def completed_decision(self, call_id: str = "tool-1", **kw: Any) -> Wire:
        """A completed decision citing this ledger's call, dispatch, reconcile and outcome."""
        outcome_id = self.spine.fact_id(call_id, "response")
        evidence = [*self.evidence(call_id), outcome_id]
        return self.add(self._kit().completed_decision(call_id, evidence, outcome_id, **kw))

    def parked_decision(
        self, call_id: str = "tool-1", reason_code: str = "reconcile_diverged", **kw: Any
    ) -> Wire:
        """A parked decision citing this ledger's call, dispatch and reconcile."""
        kit = self._kit()
        return self.add(kit.parked_decision(call_id, self.evidence(call_id), reason_code, **kw))

    def permission_request(
        self, request_id: str | None = None, *, event_id: str | None = None, **kw: Any
    ) -> Wire:
        """A tool permission request; ``request_id`` defaults to the event's own id."""
        kit = self._kit()
        return self.add(kit.permission_request(self._id(event_id), request_id, **kw))

    def permission_decision(
        self,
        request_id: str,
        decision: Literal["allow", "deny"] = "allow",
        *,
        event_id: str | None = None,
        **kw: Any,
    ) -> Wire:
        """The decision that closes ``request_id``."""
        kit = self._kit()
        return self.add(kit.permission_decision(self._id(event_id), request_id, decision, **kw))

    def terminal(
        self, status: str = "completed", *, event_id: str | None = None, **kw: Any
    ) -> Wire:
        """The terminal event; a ``failed`` one carries ``provider_error`` content by default."""
        return self.add(self._kit().terminal(self._id(event_id), status, **kw))

    def continuation_start(self, source: Spine, high_water: int, **kw: Any) -> Wire:
        """The V2 start fact (id ``<runId>-start``) continuing ``source``."""
        return self.add(self._kit().continuation_start(source, high_water, **kw))

    def state_delta_continuation_start(self, **kw: Any) -> Wire:
        """The ``stateDelta.continuationStart`` start form (id ``<runId>-start``)."""
        return self.add(self._kit().state_delta_continuation_start(**kw))
