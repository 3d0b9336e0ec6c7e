"""Deterministic builders of RuntimeEvents and run headers for tests, over ``wire/facts.py``.

Why: a hand-typed event is easy to get subtly wrong (a missing ``refs`` key, a role that puts
it in another lane), and a test built on a wrong event tests something else. These builders
write exactly the shapes of docs/reference/wire.md#examples through the dict layer of
:mod:`maka_es.wire.facts` (the one place a fact is spelled), with the ids the store gives its
own facts, and never read a clock or a random source.

One API, declared once on :class:`FactBuilder`, with two faces:

* :class:`LedgerBuilder` - one run's ledger appended in order: the events a host names are
  numbered ``<prefix><n>`` at ``ts = base_ts + n``; every method returns the event it appended.
* :class:`Events` - the same methods for one-off facts on one spine and ``ts``:
  ``Events.wire(...)`` hands back wire dicts, ``Events.decoded(...)`` validated models; the
  events a host names get fixed default ids (``user-1``, ``call-<callId>`` ...).

Every method takes ``event_id=`` as a keyword (the store names its own facts
``<operationId>_dispatch`` / ``_response`` / ``_reconcile`` / ``_decision``) and
``**overrides``: wire (camelCase) top-level keys that replace what the builder wrote, for the
odd case a test needs (``partial=True``, ``refs={...}``, ``ts=5``).

* :class:`Spine` - the identity of one run's events (defaults ``s1 / i1 / r1 / t1``).
* :func:`run_header` - a valid AgentRun header with defaults.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from maka_es.wire.codec import canonical_args_hash, operation_id_for
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1, RuntimeEvent
from maka_es.wire.facts import (
    continuation_start_wire,
    decision_payload,
    dispatch_wire,
    envelope,
    reconcile_payload,
    recovery_wire,
    response_wire,
    terminal_wire,
    tool_refs,
)

__all__ = [
    "SAMPLE_DIGEST",
    "Events",
    "FactBuilder",
    "FactKind",
    "LedgerBuilder",
    "Spine",
    "event_ids",
    "run_header",
]

EventT = TypeVar("EventT")
Wire = dict[str, Any]

#: Placeholder ``sha256:`` digest for facts whose digest a test does not care about.
SAMPLE_DIGEST = "sha256:" + "a" * 64

#: The author that writes each provider-history role when nothing else is said.
AUTHOR_OF_ROLE = {"user": "user", "model": "agent", "tool": "tool", "system": "system"}

#: Default ``args`` of a call (and of a permission request): a shell command.
SHELL_ARGS: Mapping[str, Any] = {"command": "do-it"}
#: Default ``result`` of a response: text content, as a tool usually answers.
OK_RESULT: Mapping[str, Any] = {"kind": "text", "text": "ok"}

#: The facts the store names after their operation: ``<operationId>_<kind>``
#: (docs/reference/wire.md#example-dispatch, docs/reference/tool-journal.md#bundle-example).
FactKind = Literal["dispatch", "response", "reconcile", "decision"]


@dataclass(frozen=True)
class Spine:
    """Session, invocation, run and turn of one run (defaults ``s1 / i1 / r1 / t1``).

    Why a value object: an event's four identity keys must agree with its run header and with
    every other event of the run (docs/reference/wire.md#envelope)."""

    session_id: str = "s1"
    invocation_id: str = "i1"
    run_id: str = "r1"
    turn_id: str = "t1"

    @property
    def identity(self) -> dict[str, str]:
        """The four identity keys as they appear on the wire (camelCase)."""
        return {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }

    def envelope(self, event_id: str, ts: float, role: str, author: str) -> dict[str, Any]:
        """The required keys of a non-partial RuntimeEvent on this spine."""
        return envelope(self.identity, event_id, ts, role, author)

    def operation_id(self, call_id: str) -> str:
        """The operation id T1 gives provider call ``call_id`` of this invocation
        (docs/reference/wire.md#operation-id)."""
        return operation_id_for(self.invocation_id, call_id)

    def fact_id(self, call_id: str, kind: FactKind) -> str:
        """The event id the store gives the ``kind`` fact of ``call_id``'s operation."""
        return f"{self.operation_id(call_id)}_{kind}"


def fresh(value: Any) -> Any:
    """``value`` deep-copied, so two events never share a mutable ``args`` / ``result`` and a
    caller's constant (or a builder default) stays untouched. ``None`` stays a JSON null."""
    return copy.deepcopy(value)


def visibility(hidden: bool) -> dict[str, Any]:
    """Envelope keys of a Code Mode fact the model never sees (docs/reference/wire.md#envelope)."""
    return {"origin": "code_mode", "modelVisibility": "hidden"} if hidden else {}


def marker_actions(marker: bool | str | None) -> dict[str, Any]:
    """``actions`` declaring the tool-boundary protocol: ``True`` is T1, a string is written
    as given (to test an unknown marker), ``False`` / ``None`` is no marker
    (docs/reference/tool-journal.md#protocol-marker)."""
    if marker is None or marker is False:
        return {}
    boundary = TOOL_BOUNDARY_PROTOCOL_V1 if marker is True else marker
    return {"runtimeProtocol": {"toolBoundary": boundary}}


def event_ids(events: Iterable[RuntimeEvent | Mapping[str, Any]]) -> list[str]:
    """The ids of ``events`` (models or wire dicts), in order: what ledger assertions compare."""
    return [e["id"] if isinstance(e, Mapping) else e.id for e in events]


def run_header(spine: Spine | None = None, **overrides: Any) -> dict[str, Any]:
    """A minimal valid header (status ``running``) for ``spine``; ``overrides`` are wire
    (camelCase) keys such as ``status``, ``failureClass``, ``continuationSource``
    (docs/reference/ledger.md#run-header)."""
    spine = spine or Spine()
    header: dict[str, Any] = {
        "runId": spine.run_id,
        "sessionId": spine.session_id,
        "turnId": spine.turn_id,
        "invocationId": spine.invocation_id,
        "status": "running",
        "backendKind": "fake",
        "llmConnectionSlug": "test-connection",
        "modelId": "test-model",
        "cwd": "/workspace",
        "permissionMode": "ask",
        "createdAt": 1000,
        "updatedAt": 1000,
    }
    header.update(overrides)
    return header


class FactBuilder(Generic[EventT]):
    """Every builder method, declared once; a face says where ids, ``ts`` and results go.

    A face gives the spine, the timestamp of the next event (:meth:`_now`), the id of an event
    a host names when the caller gives none (:meth:`_host_id`), the id of a call's own event
    (:meth:`_call_event_id`), and what to do with a finished wire dict (:meth:`_finish`).
    """

    spine: Spine

    def _now(self) -> float:
        raise NotImplementedError

    def _host_id(self, event_id: str | None, fallback: str) -> str:
        raise NotImplementedError

    def _call_event_id(self, call_id: str) -> str:
        return f"call-{call_id}"

    def _finish(self, wire: Wire) -> EventT:
        raise NotImplementedError

    def _emit(
        self,
        event_id: str,
        role: str,
        author: str,
        fields: Mapping[str, Any],
        overrides: Mapping[str, Any],
    ) -> EventT:
        return self._fact(
            self.spine.envelope(event_id, self._now(), role, author), fields, overrides
        )

    def _fact(self, wire: Wire, *extra: Mapping[str, Any]) -> EventT:
        """A fact spelled by ``maka_es.wire.facts``, plus ``extra`` keys (visibility, then
        the caller's overrides) in that order, handed back through the face."""
        for fields in extra:
            wire.update(fields)
        return self._finish(wire)

    def _operation(self, call_id: str, operation_id: str | None) -> str:
        return self.spine.operation_id(call_id) if operation_id is None else operation_id

    # --- Conversation: user and model content, permission facts, terminals, starts -------

    def event(
        self,
        *,
        event_id: str | None = None,
        role: str = "system",
        author: str = "system",
        **overrides: Any,
    ) -> EventT:
        """A bare envelope (a system note unless told otherwise); ``overrides`` add the rest."""
        return self._emit(self._host_id(event_id, "event-1"), role, author, {}, overrides)

    def user(
        self,
        text: str = "fix the port",
        *,
        event_id: str | None = None,
        marker: bool | str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A user message; ``marker`` declares the T1 protocol on a run's first event
        (docs/reference/wire.md#example-user)."""
        fields: dict[str, Any] = {"content": {"kind": "text", "text": text}}
        actions = marker_actions(marker)
        if actions:
            fields["actions"] = actions
        return self._emit(self._host_id(event_id, "user-1"), "user", "user", fields, overrides)

    def text(
        self,
        text: str = "working on it",
        *,
        event_id: str | None = None,
        role: str = "model",
        **overrides: Any,
    ) -> EventT:
        """Text content in ``role``'s lane (model text by default), written by that role's
        usual author."""
        content = {"content": {"kind": "text", "text": text}}
        event_id = self._host_id(event_id, "text-1")
        return self._emit(event_id, role, AUTHOR_OF_ROLE[role], content, overrides)

    def thinking(
        self,
        text: str = "thinking it over",
        *,
        event_id: str | None = None,
        signature: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """Model reasoning; a ``signature`` is what a provider needs to accept it on replay."""
        content: dict[str, Any] = {"kind": "thinking", "text": text}
        if signature is not None:
            content["signature"] = signature
        event_id = self._host_id(event_id, "thinking-1")
        return self._emit(event_id, "model", "agent", {"content": content}, overrides)

    def permission_request(
        self,
        request_id: str | None = None,
        *,
        event_id: str | None = None,
        tool_call_id: str = "tool-1",
        tool_name: str = "Bash",
        category: str = "shell",
        reason: str | None = None,
        args: Any = SHELL_ARGS,
        remember_for_turn_allowed: bool = False,
        **overrides: Any,
    ) -> EventT:
        """A ``tool_permission`` request (``requestId`` defaults to the event id); until a
        decision closes it, a continuation parks (docs/reference/wire.md#permission-facts)."""
        event_id = self._host_id(event_id, "permission-1")
        request = {
            "kind": "tool_permission",
            "requestId": event_id if request_id is None else request_id,
            "toolUseId": tool_call_id,
            "toolName": tool_name,
            "category": category,
            "reason": category if reason is None else reason,
            "args": fresh(args),
            "rememberForTurnAllowed": remember_for_turn_allowed,
        }
        fields = {"actions": {"permissionRequest": request}}
        return self._emit(event_id, "system", "system", fields, overrides)

    def permission_decision(
        self,
        request_id: str,
        decision: Literal["allow", "deny"] = "allow",
        *,
        event_id: str | None = None,
        tool_name: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """The decision that closes request ``request_id``
        (docs/reference/wire.md#example-permission)."""
        payload: dict[str, Any] = {"requestId": request_id, "decision": decision}
        if tool_name is not None:
            payload["toolName"] = tool_name
        fields = {"actions": {"permissionDecision": payload}}
        event_id = self._host_id(event_id, f"decision-{request_id}")
        return self._emit(event_id, "system", "system", fields, overrides)

    def terminal(
        self,
        status: str = "completed",
        *,
        event_id: str | None = None,
        error_code: str | None = "provider_error",
        message: str = "provider failed",
        failure_class: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """The event that ends the invocation. A ``failed`` one carries error content
        ``error_code`` (``None``: no content); ``failure_class`` also records
        ``stateDelta.failureClass``, which the header derives from
        (docs/reference/wire.md#example-terminal, docs/reference/ledger.md#terminal-rules)."""
        wire = terminal_wire(
            self.spine.identity,
            event_id=self._host_id(event_id, "terminal-1"),
            ts=self._now(),
            status=status,
            error_code=error_code if status == "failed" else None,
            message=message,
            state_delta=None if failure_class is None else {"failureClass": failure_class},
        )
        return self._fact(wire, overrides)

    def continuation_start(
        self,
        source: Spine,
        high_water: int,
        *,
        event_id: str | None = None,
        claim_id: str = "claim-1",
        boundary_digest: str = SAMPLE_DIGEST,
        prefix_digest: str = SAMPLE_DIGEST,
        provider_replay_digest: str = SAMPLE_DIGEST,
        provenance: Literal["runtime_admission", "claim_repair"] = "runtime_admission",
        marker: bool | None = None,
        **overrides: Any,
    ) -> EventT:
        """The V2 start fact, event 1 of a continuation of ``source`` at ``high_water``; id
        ``<runId>-start``. Real digests come from the planner; the defaults are placeholders.
        A runtime admission declares the T1 marker unless ``marker`` says otherwise
        (docs/reference/continuation.md#start-fact)."""
        declare = provenance == "runtime_admission" if marker is None else marker
        wire = continuation_start_wire(
            self.spine.identity,
            event_id=f"{self.spine.run_id}-start" if event_id is None else event_id,
            ts=self._now(),
            provenance=provenance,
            claim_id=claim_id,
            boundary_digest=boundary_digest,
            source_spine=source.identity,
            source_high_water=high_water,
            source_prefix_digest=prefix_digest,
            provider_replay_digest=provider_replay_digest,
            tool_boundary=TOOL_BOUNDARY_PROTOCOL_V1 if declare else None,
        )
        return self._fact(wire, overrides)

    def state_delta_continuation_start(
        self,
        *,
        event_id: str | None = None,
        source: Spine | None = None,
        high_water: int | None = None,
        marker: bool = False,
        **overrides: Any,
    ) -> EventT:
        """The Original P1 start form (``stateDelta.continuationStart``), still recognised by
        planning and recovery though never written by maka_es; ``source`` adds the
        ``refs.source*`` keys (docs/reference/continuation.md#start-fact)."""
        fields: dict[str, Any] = {
            "actions": {"stateDelta": {"continuationStart": True}, **marker_actions(marker)}
        }
        if source is not None:
            refs: dict[str, Any] = {
                "sourceInvocationId": source.invocation_id,
                "sourceRunId": source.run_id,
                "sourceTurnId": source.turn_id,
            }
            if high_water is not None:
                refs["sourceRuntimeEventHighWater"] = high_water
            fields["refs"] = refs
        start_id = f"{self.spine.run_id}-start" if event_id is None else event_id
        return self._emit(start_id, "system", "system", fields, overrides)

    # --- Tool journal: calls, dispatch (T1), responses (T2, pre-T1 refusals), recovery ----

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
        content = {"kind": "function_call", "id": call_id, "name": name, "args": fresh(args)}
        fields: dict[str, Any] = {"content": content, **visibility(hidden)}
        if with_refs or operation_id is not None or parent is not None or step_id is not None:
            fields["refs"] = tool_refs(call_id, operation_id, parent)
            if step_id is not None:
                fields["refs"]["stepId"] = step_id
        event_id = self._host_id(event_id, f"call-{call_id}")
        return self._emit(event_id, "model", "agent", fields, overrides)

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
        """The T1 dispatch fact of the call ``(call_id, name, args)``, id
        ``<operationId>_dispatch``; ``args_hash`` defaults to ``canonical_args_hash(name,
        args)`` (docs/reference/wire.md#example-dispatch)."""
        op = self._operation(call_id, operation_id)
        wire = dispatch_wire(
            self.spine.identity,
            event_id=event_id or f"{op}_dispatch",
            ts=self._now(),
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
            event_id=self._host_id(event_id, f"response-{call_id}"),
            ts=self._now(),
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
        T1, named by the host (the resolver settles it as ``pre_t1_synthetic``)."""
        event_id = self._host_id(event_id, f"refusal-{call_id}")
        return self.response(call_id, name, reason, event_id=event_id, is_error=True, **overrides)

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
        call_id: str = "tool-1",
        *,
        evidence: list[str] | None = None,
        outcome_event_id: str | None = None,
        event_id: str | None = None,
        operation_id: str | None = None,
        payload_operation_id: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A ``completed`` recovery decision settled by ``outcome_event_id`` (default the
        operation's T2 response), id ``<operationId>_decision``; ``evidence`` defaults to
        :meth:`evidence` plus the outcome (docs/reference/tool-journal.md#bundle-example)."""
        outcome = outcome_event_id or self.spine.fact_id(call_id, "response")
        cited = [*self.evidence(call_id), outcome] if evidence is None else evidence
        op = self._operation(call_id, operation_id)
        payload = decision_payload(
            payload_operation_id or op,
            "completed",
            "reconcile_matches_expected_state",
            cited,
            outcome,
        )
        return self._recovery(call_id, op, event_id or f"{op}_decision", payload, overrides)

    def parked_decision(
        self,
        call_id: str = "tool-1",
        reason_code: str = "reconcile_diverged",
        *,
        evidence: list[str] | None = None,
        event_id: str | None = None,
        operation_id: str | None = None,
        payload_operation_id: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A ``parked`` recovery decision (no outcome), id ``<operationId>_decision``;
        ``evidence`` defaults to :meth:`evidence`."""
        cited = self.evidence(call_id) if evidence is None else evidence
        op = self._operation(call_id, operation_id)
        payload = decision_payload(payload_operation_id or op, "parked", reason_code, cited)
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
            ts=self._now(),
            call_id=call_id,
            operation_id=operation_id,
            payload=payload,
        )
        return self._fact(wire, overrides)

    def evidence(self, call_id: str = "tool-1", *, call_event_id: str | None = None) -> list[str]:
        """``[call, dispatch, reconcile]`` event ids: the evidence every decision of
        ``call_id``'s operation cites (a completed one adds its outcome)."""
        op = self.spine.operation_id(call_id)
        call = call_event_id or self._call_event_id(call_id)
        return [call, f"{op}_dispatch", f"{op}_reconcile"]

    def completed_bundle(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        result: Any = OK_RESULT,
        *,
        call_event_id: str | None = None,
    ) -> dict[str, EventT]:
        """A valid completed bundle for ``call_id``: the keyword arguments ``reconcile``,
        ``outcome`` and ``decision`` of ``commit_tool_recovery_bundle`` (a LedgerBuilder
        appends them as well)."""
        outcome_id = self.spine.fact_id(call_id, "response")
        evidence = [*self.evidence(call_id, call_event_id=call_event_id), outcome_id]
        return {
            "reconcile": self.reconcile(call_id),
            "outcome": self.bound_response(call_id, name, result),
            "decision": self.completed_decision(
                call_id, evidence=evidence, outcome_event_id=outcome_id
            ),
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
            "decision": self.parked_decision(
                call_id, f"reconcile_{observation}", evidence=evidence
            ),
        }


def _as_wire(event: Wire) -> Wire:
    """Wire dicts are handed back unvalidated: a test may build a deliberately bad event."""
    return event


@dataclass(frozen=True)
class Events(FactBuilder[EventT]):
    """The builders for one-off facts on ``spine`` at ``ts``, each passed through ``finish``.

    ``Events.wire(spine, ts)`` hands back wire dicts (what ``append_event`` and the tool
    commands take); ``Events.decoded(spine, ts)`` hands back validated ``RuntimeEvent`` models
    (what the pure planners and resolvers are tested with)."""

    spine: Spine
    ts: float
    finish: Callable[[Wire], EventT]

    @staticmethod
    def wire(spine: Spine | None = None, ts: float = 1000) -> Events[Wire]:
        return Events(spine or Spine(), ts, _as_wire)

    @staticmethod
    def decoded(spine: Spine | None = None, ts: float = 1000) -> Events[RuntimeEvent]:
        return Events(spine or Spine(), ts, RuntimeEvent.model_validate)

    def at(self, ts: float) -> Events[EventT]:
        """The same builders at another timestamp."""
        return dataclasses.replace(self, ts=ts)

    def _now(self) -> float:
        return self.ts

    def _host_id(self, event_id: str | None, fallback: str) -> str:
        return event_id or fallback

    def _finish(self, wire: Wire) -> EventT:
        return self.finish(wire)


@dataclass
class LedgerBuilder(FactBuilder[Wire]):
    """One run's ledger, appended event by event, as the host and store write it.

    Why: most tests need a short valid ledger in order. The events a host names itself are
    numbered ``<prefix><n>`` at ``ts = base_ts + n``; the facts the store authors get the
    store's names (``<operationId>_dispatch`` ...), so a built ledger reads like a committed
    one (docs/reference/wire.md#examples). Every method returns the event it appended."""

    spine: Spine = field(default_factory=Spine)
    prefix: str = "e"
    base_ts: int = 1000
    events: list[Wire] = field(default_factory=list)

    def _now(self) -> float:
        return self.base_ts + len(self.events) + 1

    def _host_id(self, event_id: str | None, fallback: str) -> str:
        return event_id or f"{self.prefix}{len(self.events) + 1}"

    def _call_event_id(self, call_id: str) -> str:
        calls = [
            e["id"]
            for e in self.events
            if e.get("content", {}).get("kind") == "function_call" and e["content"]["id"] == call_id
        ]
        return calls[-1] if calls else f"call-{call_id}"

    def _finish(self, wire: Wire) -> Wire:
        return self.add(wire)

    def add(self, event: Wire) -> Wire:
        """Append an event built elsewhere (a deliberately odd one, say)."""
        self.events.append(event)
        return event

    def decoded(self) -> list[RuntimeEvent]:
        """The ledger so far as validated ``RuntimeEvent`` models."""
        return [RuntimeEvent.model_validate(event) for event in self.events]

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
        call = self.call(call_id, name, args, event_id=event_id, t1=True)
        self.dispatch(call_id, name, args, recovery_mode=recovery_mode, ts=call["ts"])
        return call
