"""The ledger gates a-h of a continuation plan (docs/reference/continuation.md#gates).

Why one function per gate: the plan reports *every* blocker, in gate order, so each gate is an
independent check that only adds to the :class:`GateVerdicts` it is given; the plan builder
calls them in the documented order. These gates judge the source ledger itself (Phase 0's
verdict, permissions, the boundary's high-water, identities, the terminal fact) and the two
host verdicts about it (readable, terminal repair). Pure: no I/O, never mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from maka_es.continuation.plan_models import ContinuationFacts, TerminalPolicy
from maka_es.resume.models import Diagnostic, DiagnosticCode, ResumePlan, ResumeRejectionReason
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.report import RuntimeEventInput, decode_events
from maka_es.wire.run_header import (
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)

__all__ = [
    "GateVerdicts",
    "continuation_identity_reused_gate",
    "ledger_empty_gate",
    "ledger_readable_gate",
    "pending_permission_gate",
    "phase0_gate",
    "runtime_identity_gate",
    "runtime_offset_gate",
    "terminal_boundary_consistent",
    "terminal_repair_gate",
]


class GateVerdicts:
    """Accumulates diagnostics and reasons in gate order (reasons de-duplicated)."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.reasons: dict[ResumeRejectionReason, None] = {}

    def park(
        self,
        code: ResumeRejectionReason,
        message: str,
        *,
        event_id: str | None = None,
        detail: dict[str, JsonValue] | None = None,
    ) -> None:
        self.note(code, message, event_id=event_id, detail=detail)
        self.reasons.setdefault(code)

    def note(
        self,
        code: DiagnosticCode,
        message: str,
        *,
        event_id: str | None = None,
        detail: dict[str, JsonValue] | None = None,
    ) -> None:
        self.diagnostics.append(
            Diagnostic(code=code, message=message, event_id=event_id, detail=detail)
        )

    def fired(self, code: ResumeRejectionReason) -> bool:
        return code in self.reasons


def terminal_boundary_consistent(
    header: RunHeader, events: Sequence[RuntimeEventInput], policy: TerminalPolicy = "strict"
) -> bool:
    """Whether the source header and ledger agree on one terminal fact (gate h).

    ``strict`` (HEAD, default): the header is terminal; exactly one non-partial terminal event
    carries the header's session/run/turn; it has a terminal status with a derivable fact
    (failure class / abort source, docs/reference/ledger.md#terminal-rules); it is the last
    event; the header matches it.
    ``status_only`` (Original P1): the header is terminal and exactly one non-partial terminal
    event exists whose status maps to the header's status.
    """
    if not header.is_terminal:
        return False
    decoded = decode_events(events)
    if policy == "status_only":
        terminals = [event for event in decoded if not event.partial and event.is_terminal]
        return len(terminals) == 1 and run_status_for_terminal_event(terminals[0]) == header.status
    matching = [
        event
        for event in decoded
        if not event.partial
        and event.is_terminal
        and event.session_id == header.session_id
        and event.run_id == header.run_id
        and event.turn_id == header.turn_id
    ]
    if len(matching) != 1:
        return False
    terminal = matching[0]
    # header_matches_terminal refuses an incomplete fact (no status, class or abort source)
    return decoded[-1].id == terminal.id and header_matches_terminal(header, terminal)


def _pending_permissions(events: Sequence[RuntimeEvent]) -> list[Diagnostic]:
    """Requests without a later decision, accepted answer or accepted closure."""
    pending: dict[str, RuntimeEvent] = {}
    for event in events:
        actions = event.actions
        if event.partial or actions is None:
            continue
        request_id = actions.permission_request_id
        if request_id is not None:
            pending[request_id] = event
        for resolved in (
            actions.permission_decision,
            actions.permission_answer_accepted,
            actions.permission_closure_accepted,
        ):
            if resolved is not None:
                pending.pop(resolved.request_id, None)
    return [
        Diagnostic(
            code="pending_permission",
            message="permission request has no committed decision",
            event_id=event.id,
            detail={"requestId": request_id},
        )
        for request_id, event in pending.items()
    ]


def phase0_gate(gates: GateVerdicts, legacy: ResumePlan) -> None:
    """(a) legacy path: the Phase 0 verdict over the source ledger, its reasons first."""
    gates.diagnostics.extend(legacy.diagnostics)
    for reason in legacy.rejection_reasons:
        gates.reasons.setdefault(reason)
    if legacy.disposition != "safe_replay" and not legacy.rejection_reasons:
        gates.reasons.setdefault("dangling_tool_state")  # fail closed on a reasonless block


def pending_permission_gate(gates: GateVerdicts, events: Sequence[RuntimeEvent]) -> None:
    """(b) ``pending_permission``: a permission request nobody answered."""
    pending = _pending_permissions(events)
    gates.diagnostics.extend(pending)
    if pending:
        gates.reasons.setdefault("pending_permission")


def runtime_offset_gate(
    gates: GateVerdicts, expected_high_water: int | None, last_event_seq: int
) -> None:
    """(c) composite path only (the legacy path checks it inside Phase 0)."""
    if expected_high_water is not None and expected_high_water != last_event_seq:
        gates.park(
            "runtime_offset_mismatch",
            "persisted runtime high-water does not match the immutable continuation boundary",
            detail={"expected": expected_high_water, "actual": last_event_seq},
        )


def ledger_empty_gate(gates: GateVerdicts, source: RuntimeEvent | None) -> None:
    """(d) ``runtime_ledger_empty``: nothing to continue from."""
    if source is None:
        gates.park(
            "runtime_ledger_empty", "safe-boundary continuation requires at least one RuntimeEvent"
        )


def runtime_identity_gate(
    gates: GateVerdicts, events: Sequence[RuntimeEvent], source: RuntimeEvent | None
) -> None:
    """(e) ``runtime_identity_mismatch``: the ledger holds more than one execution."""
    if source is None:
        return
    mismatched = next((e for e in events if e.identity != source.identity), None)
    if mismatched is not None:
        gates.park(
            "runtime_identity_mismatch",
            "RuntimeEvent ledger contains more than one source execution identity",
            event_id=mismatched.id,
        )


def continuation_identity_reused_gate(
    gates: GateVerdicts, facts: ContinuationFacts, source: RuntimeEvent | None
) -> None:
    """(f) ``continuation_identity_reused``: the target must not reuse any source id."""
    if source is None:
        return
    fresh = facts.continuation_identity
    if (
        fresh.invocation_id == source.invocation_id
        or fresh.run_id == source.run_id
        or fresh.turn_id == source.turn_id
    ):
        gates.park(
            "continuation_identity_reused",
            "continuation must use fresh invocation, run, and turn identities",
        )


def ledger_readable_gate(gates: GateVerdicts, facts: ContinuationFacts) -> None:
    """(g) ``runtime_ledger_unreadable``: the host could not read the ledger reliably."""
    if not facts.ledger_readable:
        gates.park("runtime_ledger_unreadable", "RuntimeEvent ledger could not be read reliably")


def terminal_repair_gate(
    gates: GateVerdicts, facts: ContinuationFacts, events: Sequence[RuntimeEvent]
) -> None:
    """(h) ``terminal_repair_failed``: the host's repair failed, or (with a source header) the
    header and the ledger do not form one terminal boundary."""
    if not facts.terminal_repair_succeeded:
        gates.park(
            "terminal_repair_failed", "source run terminal repair did not complete successfully"
        )
    elif facts.source_header is not None and not terminal_boundary_consistent(
        facts.source_header, events, facts.terminal_policy
    ):
        gates.park(
            "terminal_repair_failed",
            "source run header and its terminal RuntimeEvent do not form one consistent boundary",
        )
