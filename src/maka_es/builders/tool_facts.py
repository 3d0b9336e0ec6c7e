"""Builders of the tool journal's facts: calls, dispatch (T1), responses (T2, pre-T1 refusals)
and the recovery bundle (docs/reference/tool-journal.md#recovery-facts).

Tool facts are about a provider call, so the call id comes first and the event id is derived
the way the store derives it: ``<operationId>_dispatch`` / ``_response`` / ``_reconcile`` /
``_decision``, with ``call-<callId>``, ``response-<callId>`` and ``refusal-<callId>`` for the
events a host names itself. ``operation_id`` defaults to what T1 would compute for the call on
this spine (``operation_id_for``).
"""

from __future__ import annotations

from typing import Any

from maka_es.builders.kit import (
    OK_RESULT,
    SAMPLE_DIGEST,
    SHELL_ARGS,
    EventKit,
    EventT,
    fresh,
    visibility,
)
from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1
from maka_es.wire.facts import (
    decision_payload,
    dispatch_wire,
    reconcile_payload,
    recovery_wire,
    response_wire,
    tool_refs,
)

__all__ = ["ToolFacts", "tool_refs"]


class ToolFacts(EventKit[EventT]):
    """Tool-journal facts on this kit's spine; see the module docstring for the naming."""

    def call(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        args: Any = SHELL_ARGS,
        *,
        event_id: str | None = None,
        operation_id: str | None = None,
        t1: bool = False,
        parent: tuple[str, str] | None = None,
        step_id: str | None = None,
        with_refs: bool = False,
        hidden: bool = False,
        **overrides: Any,
    ) -> EventT:
        """A function_call (``args`` default ``{"command": "do-it"}``). It carries ``refs``
        when bound to an operation (``operation_id``, or ``t1=True`` for the one T1 computes),
        given a ``parent`` or the model ``step_id``, or asked ``with_refs`` (then just
        ``toolCallId``) (docs/reference/wire.md#example-call)."""
        if t1:
            operation_id = self._operation(call_id, operation_id)
        content = {
            "kind": "function_call",
            "id": call_id,
            "name": name,
            "args": fresh(args),
        }
        fields: dict[str, Any] = {"content": content, **visibility(hidden)}
        if with_refs or operation_id is not None or parent is not None or step_id is not None:
            fields["refs"] = tool_refs(call_id, operation_id, parent)
            if step_id is not None:
                fields["refs"]["stepId"] = step_id
        return self._emit(event_id or f"call-{call_id}", "model", "agent", fields, overrides)

    def dispatch(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        args: Any = SHELL_ARGS,
        *,
        event_id: str | None = None,
        operation_id: str | None = None,
        args_hash: str | None = None,
        recovery_mode: str = "never_auto_retry",
        parent: tuple[str, str] | None = None,
        hidden: bool = False,
        **overrides: Any,
    ) -> EventT:
        """The T1 dispatch fact of the call ``(call_id, name, args)``; ``args_hash`` defaults
        to ``canonical_args_hash(name, args)`` (docs/reference/wire.md#example-dispatch)."""
        op = self._operation(call_id, operation_id)
        wire = dispatch_wire(
            self.spine.identity,
            event_id=event_id or f"{op}_dispatch",
            ts=self.ts,
            call_id=call_id,
            tool_name=name,
            operation_id=op,
            args_hash=args_hash or canonical_args_hash(name, fresh(args)),
            recovery_mode=recovery_mode,
            protocol=TOOL_BOUNDARY_PROTOCOL_V1,
            parent=parent,
        )
        return self._fact(wire, visibility(hidden), overrides)

    def response(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        result: Any = OK_RESULT,
        *,
        event_id: str | None = None,
        is_error: bool | None = None,
        operation_id: str | None = None,
        with_refs: bool = False,
        hidden: bool = False,
        **overrides: Any,
    ) -> EventT:
        """A function_response (``result`` default ``{"kind": "text", "text": "ok"}``;
        ``isError`` only when ``is_error`` is given). ``refs`` as for :meth:`call`."""
        wire = response_wire(
            self.spine.identity,
            event_id=event_id or f"response-{call_id}",
            ts=self.ts,
            call_id=call_id,
            tool_name=name,
            result=fresh(result),
            is_error=is_error,
        )
        bound = with_refs or operation_id is not None
        refs = {"refs": tool_refs(call_id, operation_id)} if bound else {}
        return self._fact(wire, visibility(hidden), refs, overrides)

    def bound_response(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        result: Any = OK_RESULT,
        *,
        event_id: str | None = None,
        is_error: bool | None = None,
        operation_id: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """The T2 outcome: a response bound by ``refs`` to its operation, id
        ``<operationId>_response`` (docs/reference/wire.md#example-response)."""
        op = self._operation(call_id, operation_id)
        return self.response(
            call_id,
            name,
            result,
            event_id=event_id or f"{op}_response",
            is_error=is_error,
            operation_id=op,
            **overrides,
        )

    def refusal(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        reason: str = "permission denied",
        *,
        event_id: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A pre-T1 refusal: an error response without ``refs`` for a call that never crossed
        T1, id ``refusal-<callId>`` (the resolver settles it as ``pre_t1_synthetic``)."""
        return self.response(
            call_id,
            name,
            reason,
            event_id=event_id or f"refusal-{call_id}",
            is_error=True,
            **overrides,
        )

    def reconcile(
        self,
        call_id: str = "tool-1",
        observation: str = "matches_expected_state",
        *,
        event_id: str | None = None,
        operation_id: str | None = None,
        payload_operation_id: str | None = None,
        digest: str = SAMPLE_DIGEST,
        **overrides: Any,
    ) -> EventT:
        """A reconcile result: what the tool's reconciler observed, id
        ``<operationId>_reconcile``. ``payload_operation_id`` lets a test make the payload
        disagree with ``refs`` (docs/reference/tool-journal.md#bundle-example)."""
        op = self._operation(call_id, operation_id)
        payload = reconcile_payload(payload_operation_id or op, observation, digest)
        return self._recovery(call_id, op, event_id or f"{op}_reconcile", payload, overrides)

    def completed_decision(
        self,
        call_id: str,
        evidence: list[str],
        outcome_event_id: str,
        *,
        event_id: str | None = None,
        operation_id: str | None = None,
        payload_operation_id: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A ``completed`` recovery decision settled by outcome ``outcome_event_id``, id
        ``<operationId>_decision`` (docs/reference/tool-journal.md#bundle-example)."""
        op = self._operation(call_id, operation_id)
        payload = decision_payload(
            payload_operation_id or op,
            "completed",
            "reconcile_matches_expected_state",
            evidence,
            outcome_event_id,
        )
        return self._recovery(call_id, op, event_id or f"{op}_decision", payload, overrides)

    def parked_decision(
        self,
        call_id: str,
        evidence: list[str],
        reason_code: str = "reconcile_diverged",
        *,
        event_id: str | None = None,
        operation_id: str | None = None,
        payload_operation_id: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A ``parked`` recovery decision (no outcome), id ``<operationId>_decision``."""
        op = self._operation(call_id, operation_id)
        payload = decision_payload(payload_operation_id or op, "parked", reason_code, evidence)
        return self._recovery(call_id, op, event_id or f"{op}_decision", payload, overrides)

    def _recovery(
        self,
        call_id: str,
        operation_id: str,
        event_id: str,
        payload: dict[str, Any],
        overrides: dict[str, Any],
    ) -> EventT:
        wire = recovery_wire(
            self.spine.identity,
            event_id=event_id,
            ts=self.ts,
            call_id=call_id,
            operation_id=operation_id,
            payload=payload,
        )
        return self._fact(wire, overrides)

    def evidence(self, call_id: str, *, call_event_id: str | None = None) -> list[str]:
        """``[call, dispatch, reconcile]`` event ids: the evidence every decision of
        ``call_id``'s operation cites (a completed one adds its outcome)."""
        op = self.spine.operation_id(call_id)
        return [call_event_id or f"call-{call_id}", f"{op}_dispatch", f"{op}_reconcile"]

    def completed_bundle(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        result: Any = OK_RESULT,
        *,
        call_event_id: str | None = None,
    ) -> dict[str, EventT]:
        """A valid completed bundle for ``call_id``: the keyword arguments ``reconcile``,
        ``outcome`` and ``decision`` of ``commit_tool_recovery_bundle``."""
        outcome_id = self.spine.fact_id(call_id, "response")
        evidence = [*self.evidence(call_id, call_event_id=call_event_id), outcome_id]
        return {
            "reconcile": self.reconcile(call_id),
            "outcome": self.bound_response(call_id, name, result),
            "decision": self.completed_decision(call_id, evidence, outcome_id),
        }

    def parked_bundle(
        self,
        call_id: str = "tool-1",
        observation: str = "diverged",
        *,
        call_event_id: str | None = None,
    ) -> dict[str, EventT]:
        """A valid parked bundle (no outcome). Its reason is ``reconcile_<observation>``, the
        only one a parked decision may give for that observation
        (docs/reference/tool-journal.md#recovery-facts)."""
        evidence = self.evidence(call_id, call_event_id=call_event_id)
        return {
            "reconcile": self.reconcile(call_id, observation),
            "decision": self.parked_decision(call_id, evidence, f"reconcile_{observation}"),
        }
