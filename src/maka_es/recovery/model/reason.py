"""Why an interrupted run stopped, said in the reference runtime's vocabulary.

The vocabulary: docs/reference/continuation.md#recovery-reason and
docs/reference/continuation.md#recovered-terminal.

A recovered terminal is a wire fact: the reference reads its ``stateDelta.recoveryReason`` and
``stateDelta.lastEventType`` too. The reference classifies from its AgentRun operational ledger
(``run_started``, ``tool_started``, ``model_stream_completed``, ``permission_requested``, ...),
which maka_es does not keep. So each committed RuntimeEvent is mapped to the AgentRun event the
reference writes alongside it, and the reference's rule is applied to the last mapped event and
the header's status:

===========================================  ==========================
last RuntimeEvent                            AgentRun event type
===========================================  ==========================
continuation start (V2 or Original P1)       ``run_started``
user / host message (not a steering message)  ``run_started``
model ``function_call``, T1 dispatch fact     ``tool_started``
``function_response`` (``isError``)           ``tool_completed`` (``tool_failed``)
model text / thinking                        ``model_stream_completed``
error content (not terminal)                 ``model_stream_failed``
permission request                           ``permission_requested``
permission decision / answer / closure       ``permission_decided``
anything else (recovery facts, steering,     none: the reference writes no AgentRun event
token usage, user questions, workspace       for it, so the event before it decides
facts, state deltas)
===========================================  ==========================

The rule, in the reference's order: a completed model stream is
``model_stream_completed_without_runtime_terminal``; a header ``waiting_for_user`` or a pending
permission is ``stale_user_wait``; a started tool is ``tool_interrupted``; a ``created`` or
``running`` header (or an early-lifecycle event, or no event at all) is ``run_interrupted``;
anything else is ``non_terminal_run_recovered``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from maka_es.wire.events import RuntimeEvent

#: AgentRun events of a run's early lifecycle (the reference: "the run was interrupted").
EARLY_LIFECYCLE_TYPES: Final = frozenset(
    {
        "run_created",
        "run_started",
        "turn_started",
        "model_resolved",
        "model_stream_started",
        "run_status_changed",
    }
)
#: AgentRun events that leave the run waiting for the user.
USER_WAIT_TYPES: Final = frozenset({"permission_requested", "permission_failed"})


def reference_event_type(event: RuntimeEvent) -> str | None:
    """The AgentRun event type the reference writes alongside ``event`` (``None``: none)."""
    actions = event.actions
    if actions is not None:
        if actions.continuation_start is not None or (
            (actions.state_delta or {}).get("continuationStart") is True
        ):
            return "run_started"
        if actions.tool_dispatch is not None:
            return "tool_started"
        if actions.permission_request is not None:
            return "permission_requested"
        if (
            actions.permission_decision is not None
            or actions.permission_answer_accepted is not None
            or actions.permission_closure_accepted is not None
        ):
            return "permission_decided"
    return _content_event_type(event)


def _content_event_type(event: RuntimeEvent) -> str | None:
    content = event.content
    if content is None:
        return None
    if content.kind == "function_call":
        return "tool_started"
    if content.kind == "function_response":
        return "tool_failed" if getattr(content, "is_error", None) else "tool_completed"
    if content.kind == "error":
        return "model_stream_failed"
    if event.role == "user":
        return None if getattr(content, "steering", None) else "run_started"
    if event.role == "model" and content.kind in {"text", "thinking"}:
        return "model_stream_completed"
    return None


def last_reference_event_type(events: Sequence[RuntimeEvent]) -> str | None:
    """The type of the last AgentRun event the reference would have for this ledger."""
    return _newest_reference_event_type(reversed(events))


def _newest_reference_event_type(newest_first: Iterable[RuntimeEvent]) -> str | None:
    for event in newest_first:
        event_type = reference_event_type(event)
        if event_type is not None:
            return event_type
    return None


def recovery_reason(header_status: str, events: Sequence[RuntimeEvent]) -> tuple[str, str | None]:
    """``(recoveryReason, lastEventType)`` of a run that has no terminal fact."""
    return recovery_reason_newest_first(header_status, reversed(events))


def recovery_reason_newest_first(
    header_status: str, newest_first: Iterable[RuntimeEvent]
) -> tuple[str, str | None]:
    """:func:`recovery_reason` over the events from the last one back, read only as far as the
    last event the reference has (a snapshot-restored run's history stays unread; ADR 0012)."""
    last = _newest_reference_event_type(newest_first)
    if last == "model_stream_completed":
        return "model_stream_completed_without_runtime_terminal", last
    if header_status == "waiting_for_user" or last in USER_WAIT_TYPES:
        return "stale_user_wait", last
    if last == "tool_started":
        return "tool_interrupted", last
    if header_status in {"created", "running"} or last is None or last in EARLY_LIFECYCLE_TYPES:
        return "run_interrupted", last
    return "non_terminal_run_recovered", last
