"""Write rules every append to a run obeys, and the generic append command.

Why shared: the generic append, T1, T2, the recovery bundle and a continuation's start all add
RuntimeEvents to the same ledger, and must agree on what an exact retry is, which identity an
event must carry, and when the run is sealed (ledger.md#write-rules). Each command here is pure:
it reads a :class:`~maka_es.ledger.run_state.RunState` and returns the facts to save; the state
changes only when the saved facts are folded back in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from maka_es.errors import (
    EventIdConflictError,
    EventIdentityMismatchError,
    PartialEventRefusedError,
    ReservedFactError,
    RunSealedError,
    RuntimeOffsetMismatchError,
    TerminalConflictError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
)
from maka_es.ledger.facts import RuntimeEventRecorded, StoredFact, payload_digest_of
from maka_es.ledger.run_state import RunState
from maka_es.tooljournal.resolution import ResolverIssue
from maka_es.wire.codec import canonical_payload
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV2

__all__ = [
    "AppendDecision",
    "check_high_water",
    "check_tool_ledger",
    "decide_append",
    "decide_claim_repair_start",
    "event_facts",
    "refuse_issue",
    "require_healthy_tool_ledger",
    "reserved_reason",
]


@dataclass(frozen=True, slots=True)
class AppendDecision:
    """What an append would do: the facts to save, how many events were exact retries, and
    the run's high-water once they are saved (decided with them: the result of the command,
    never read back from an aggregate after the commit)."""

    facts: tuple[StoredFact, ...]
    appended: tuple[RuntimeEvent, ...]
    retried: int
    high_water: int


def reserved_reason(event: RuntimeEvent) -> str | None:
    """Why a generic append may not carry this event (``None``: it may)."""
    actions = event.actions
    if actions is not None:
        if actions.tool_dispatch is not None:
            return "toolDispatch"
        if actions.tool_recovery is not None:
            return "toolRecovery"
        if actions.continuation_start is not None:
            return "continuationStart"
        if actions.workspace_fact is not None:
            return "workspaceFact"
    if (
        event.function_response is not None
        and event.refs is not None
        and event.refs.operation_id is not None
    ):
        return "operation-bound function_response"
    return None


def decide_append(
    run: RunState,
    events: Sequence[RuntimeEvent],
    *,
    committed_at: float,
    expected_high_water: int | None = None,
) -> AppendDecision:
    """Validate a generic batch and return the facts that commit it (all or nothing).

    Reserved facts (dispatch, operation-bound responses, recovery facts, continuation
    starts, workspace facts) have their own commands and are refused here; tool-bearing
    events must not introduce a RecoveryResolver issue.
    """
    check_high_water(run, expected_high_water)
    decision = event_facts(run, events, committed_at)
    for event in decision.appended:
        reason = reserved_reason(event)
        if reason is not None:
            raise ReservedFactError(
                f"event {event.id}: {reason} is written only by its own store command",
                detail={"eventId": event.id, "fact": reason},
            )
    check_tool_ledger(run, decision.appended)
    return decision


def decide_claim_repair_start(
    run: RunState, start: RuntimeEvent, *, committed_at: float
) -> AppendDecision:
    """Event 1 of a claimed continuation target that was created but never started: the
    claim-repair start (continuation.md#claim-repair). Only an empty run whose
    ``continuationSource`` names the start's claim takes it; an exact retry is a no-op."""
    fact = start.actions.continuation_start if start.actions is not None else None
    source = run.header.continuation_source
    if (
        fact is None
        or fact.provenance != "claim_repair"
        or not isinstance(source, ContinuationSourceV2)
        or source.claim_id != fact.claim_id
    ):
        raise ReservedFactError(
            f"event {start.id} is not the claim-repair start of run {run.run_id}'s claim",
            detail={"eventId": start.id, "fact": "continuationStart"},
        )
    decision = event_facts(run, [start], committed_at)
    if decision.appended and run.high_water != 0:
        raise ReservedFactError(
            f"run {run.run_id} already started; a repair start must be its first event",
            detail={"eventId": start.id, "fact": "continuationStart"},
        )
    check_tool_ledger(run, decision.appended)
    return decision


def check_high_water(run: RunState, expected_high_water: int | None) -> None:
    """An append that names the high-water it was planned against fails if the run moved."""
    if expected_high_water is not None and expected_high_water != run.high_water:
        raise RuntimeOffsetMismatchError(
            f"expected high-water {expected_high_water}, run {run.run_id} has {run.high_water}",
            detail={
                "expectedRuntimeEventHighWater": expected_high_water,
                "actualRuntimeEventHighWater": run.high_water,
            },
        )


def require_healthy_tool_ledger(run: RunState) -> None:
    """Fail-stop (tool-journal.md#fail-stop): once the ledger holds a resolver issue, no tool
    write (not even an exact retry) is acknowledged, because the ledger can no longer prove
    what happened."""
    if run.resolver.has_issues:
        first = run.resolver.issues[0]
        raise ToolLedgerCorruptionError(
            f"run {run.run_id} already holds tool-ledger corruption ({first.code} at "
            f"{first.event_id}); tool-bearing writes are refused",
            detail={"issueCode": first.code, "eventId": first.event_id},
        )


def refuse_issue(issue: ResolverIssue) -> ToolLedgerRejectionError:
    """The refusal of a write that would introduce ``issue`` (its code is the issue's)."""
    return ToolLedgerRejectionError(
        f"event {issue.event_id} would introduce {issue.code}",
        code=issue.code,
        detail={"eventId": issue.event_id, "issueCode": issue.code},
    )


def check_tool_ledger(run: RunState, events: Sequence[RuntimeEvent]) -> None:
    """Fail-stop on a corrupt ledger; refuse a batch that would introduce an issue."""
    touches_tools = any(
        run.resolver.lane_of(e).is_tool_lane or e.protocol_marker is not None for e in events
    )
    if not touches_tools:
        return
    require_healthy_tool_ledger(run)
    issues = run.resolver.issues_if_fed(events)
    if issues:
        raise refuse_issue(issues[0])


def event_facts(
    run: RunState, events: Sequence[RuntimeEvent], committed_at: float
) -> AppendDecision:
    """Envelope rules shared by every write: exact retries are skipped; identity, partial
    and sealing are checked; new events become ``RuntimeEventRecorded`` facts."""
    facts: list[StoredFact] = []
    appended: list[RuntimeEvent] = []
    retried = 0
    batch_ids: dict[str, str] = {}
    terminal_seen = run.terminal_event is not None
    for event in events:
        payload, plain = canonical_payload(event)
        if _is_exact_retry(run, event, payload, batch_ids):
            retried += 1
            continue
        _check_writable(run, event, terminal_seen)
        terminal_seen = event.is_terminal
        batch_ids[event.id] = payload
        appended.append(event)
        fact = RuntimeEventRecorded(
            originator_id=run.id,
            originator_version=run.version + len(facts) + 1,
            event_seq=run.high_water + len(facts) + 1,
            event_id=event.id,
            payload=payload,
            committed_at=committed_at,
            payload_digest=payload_digest_of(payload),
        )
        facts.append(fact.with_decided_event(event) if plain else fact)
    return AppendDecision(tuple(facts), tuple(appended), retried, run.high_water + len(appended))


def _is_exact_retry(
    run: RunState, event: RuntimeEvent, payload: str, batch: Mapping[str, str]
) -> bool:
    existing = batch.get(event.id)
    if existing is None:
        existing = run.committed_payload(event.id)
    if existing is None:
        return False
    if existing != payload:
        raise EventIdConflictError(
            f"event id {event.id} is already committed with different content",
            detail={"eventId": event.id},
        )
    return True


def _check_writable(run: RunState, event: RuntimeEvent, terminal_seen: bool) -> None:
    """A new event must carry the run's identity, be complete, and find the run unsealed."""
    _check_identity(run, event)
    if event.partial:
        raise PartialEventRefusedError(
            f"event {event.id} is partial; streaming chunks are never committed facts",
            detail={"eventId": event.id},
        )
    if run.sealed_by is not None:
        raise RunSealedError(
            f"run {run.run_id} is the source of continuation claim {run.sealed_by}; "
            f"{event.id} refused",
            detail={"eventId": event.id, "claimId": run.sealed_by},
        )
    if terminal_seen:
        if event.is_terminal:
            raise TerminalConflictError(
                f"run {run.run_id} already has a terminal event; {event.id} is a second",
                detail={"eventId": event.id},
            )
        raise RunSealedError(
            f"run {run.run_id} is sealed by its terminal event; {event.id} refused",
            detail={"eventId": event.id},
        )


def _check_identity(run: RunState, event: RuntimeEvent) -> None:
    header = run.header
    expected = {
        "sessionId": header.session_id,
        "runId": header.run_id,
        "turnId": header.turn_id,
        "invocationId": header.invocation_id,
    }
    actual = {
        "sessionId": event.session_id,
        "runId": event.run_id,
        "turnId": event.turn_id,
        "invocationId": event.invocation_id,
    }
    wrong = sorted(k for k, v in expected.items() if v is not None and actual[k] != v)
    if wrong:
        raise EventIdentityMismatchError(
            f"event {event.id} does not belong to run {run.run_id}: {', '.join(wrong)} differ",
            detail={"eventId": event.id, "fields": wrong},
        )
