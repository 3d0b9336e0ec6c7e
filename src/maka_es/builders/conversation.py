"""Builders of the events a run's conversation is made of: user and model content, permission
facts, terminals and continuation starts (shapes: docs/reference/wire.md#examples)."""

from __future__ import annotations

from typing import Any, Literal

from maka_es.builders.kit import AUTHOR_OF_ROLE, SAMPLE_DIGEST, SHELL_ARGS, EventKit, EventT, fresh
from maka_es.builders.spine import Spine
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1
from maka_es.wire.facts import continuation_start_wire, terminal_wire


def marker_actions(marker: bool | str | None) -> dict[str, Any]:
    """``actions`` declaring the tool-boundary protocol: ``True`` is T1, a string is written
    as given (to test an unknown marker), ``False`` / ``None`` is no marker
    (docs/reference/tool-journal.md#protocol-marker)."""
    if marker is None or marker is False:
        return {}
    boundary = TOOL_BOUNDARY_PROTOCOL_V1 if marker is True else marker
    return {"runtimeProtocol": {"toolBoundary": boundary}}


class ConversationEvents(EventKit[EventT]):
    """Conversation events: the event id comes first, because the host chooses it."""

    def event(
        self, event_id: str, *, role: str = "system", author: str = "system", **overrides: Any
    ) -> EventT:
        """A bare envelope (a system note unless told otherwise); ``overrides`` add the rest."""
        return self._emit(event_id, role, author, {}, overrides)

    def user(
        self,
        event_id: str = "user-1",
        text: str = "fix the port",
        *,
        marker: bool | str | None = None,
        **overrides: Any,
    ) -> EventT:
        """A user message; ``marker`` declares the T1 protocol on a run's first event
        (docs/reference/wire.md#example-user)."""
        fields: dict[str, Any] = {"content": {"kind": "text", "text": text}}
        actions = marker_actions(marker)
        if actions:
            fields["actions"] = actions
        return self._emit(event_id, "user", "user", fields, overrides)

    def text(
        self, event_id: str, text: str = "working on it", *, role: str = "model", **overrides: Any
    ) -> EventT:
        """Text content in ``role``'s lane, written by that role's usual author."""
        content = {"content": {"kind": "text", "text": text}}
        return self._emit(event_id, role, AUTHOR_OF_ROLE[role], content, overrides)

    def thinking(
        self,
        event_id: str,
        text: str = "thinking it over",
        *,
        signature: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """Model reasoning; a ``signature`` is what a provider needs to accept it on replay."""
        content: dict[str, Any] = {"kind": "thinking", "text": text}
        if signature is not None:
            content["signature"] = signature
        return self._emit(event_id, "model", "agent", {"content": content}, overrides)

    def permission_request(
        self,
        event_id: str,
        request_id: str | None = None,
        *,
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
        event_id: str,
        request_id: str,
        decision: Literal["allow", "deny"] = "allow",
        *,
        tool_name: str | None = None,
        **overrides: Any,
    ) -> EventT:
        """The decision that closes request ``request_id``
        (docs/reference/wire.md#example-permission)."""
        payload: dict[str, Any] = {"requestId": request_id, "decision": decision}
        if tool_name is not None:
            payload["toolName"] = tool_name
        fields = {"actions": {"permissionDecision": payload}}
        return self._emit(event_id, "system", "system", fields, overrides)

    def terminal(
        self,
        event_id: str = "terminal-1",
        status: str = "completed",
        *,
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
            event_id=event_id,
            ts=self.ts,
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
            ts=self.ts,
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

    def legacy_continuation_start(
        self,
        event_id: str | None = None,
        *,
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
