"""Startup recovery: make every interrupted run terminal, and say what was done.

The rules: docs/reference/continuation.md#startup-recovery; the decision: ADR 0012.

Call it when a host starts, before new turns run: at that moment no run of this store is live
in this host. What it may repair, and what it must leave alone:

* a run whose terminal RuntimeEvent is durable but whose header lags: the header is repaired
  from the event (no new event); a failed fact without a failure class gives the header
  ``app_restarted``;
* a run with no terminal event: a recovered ``failed`` terminal (``app_restarted``,
  ``recoveryReason`` and ``lastEventType`` in the reference's vocabulary, see
  ``recovery_reason``) is appended, then the header; the operations that stayed indeterminate
  keep the run's history ``blocked`` for Phase 0;
* a terminal header whose ledger has no terminal event (another writer, an old store): a
  recovered ``failed`` terminal ``missing_terminal_event``, then the header follows it;
* a claimed continuation whose target was never started (claim only, or created without a
  start): a deterministic ``claim_repair`` start and a failed terminal
  ``continuation_abandoned_before_provider_dispatch``, then the header; the provider is never
  called by recovery. A repair interrupted after its start is finished with the same terminal;
* a continuation or fork started by runtime admission that holds nothing but its start: the
  recovered terminal ``run_interrupted`` (``start_only_ended``) once its owner is gone, else
  left alone (``left_live_start``); the rule: ``recovery.start_only``, ADR 0035. One whose
  agent loop committed more than its start (a model turn, a tool call) is recovered like any
  agent run: tools settled first, then the recovered terminal (ADR 0020).

Before any of that seals a run, the tool catalogue settles what it can prove, for every run
about to be ended (``recovery.tool_settlement``; ADR 0019): a run whose unsettled operation the
catalogue could not settle but a recovery with the right tool could is left unsealed
(``left_unreconciled``, naming the operation, the tool and why). Sealing it would make a landed
write unreconcilable for good. A run whose interrupted call only an operator can settle
(``never_auto_retry``, ...) is left unsealed too (``left_awaiting_operator``), so the operator
can still attest it after any number of restarts.

Several hosts may share one store, and a live host may sweep periodically: a run this
application instance holds is left alone, another host's run under a live lease too, one whose
owner's lease expired is taken over first (``recovery.ownership``; ADR 0021).

Every repair uses deterministic ids, so a recovery interrupted by another crash converges when
it runs again, and running it twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from maka_es import failpoints
from maka_es.continuation.claim import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
)
from maka_es.continuation.claims import Claims
from maka_es.ledger.run import Run
from maka_es.recovery.ownership import sort_by_owner
from maka_es.recovery.reason import recovery_reason_newest_first
from maka_es.recovery.report import (
    Repair,
    StartupRecoveryReport,
    recovered_terminal_id,
    repair_id,
)
from maka_es.recovery.start_only import (
    is_bare_continuation_start,
    may_end_bare_start,
    owner_is_gone,
    start_fact,
)
from maka_es.recovery.tool_settlement import (
    ToolSettlement,
    awaits_only_the_operator,
    settle_run_tools,
)
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import (
    ContinuationSourceV2,
    RunHeader,
    header_matches_terminal,
    terminal_event,
    terminal_failure_class,
    terminal_header_patch,
)

ABANDONED = "continuation_abandoned_before_provider_dispatch"
APP_RESTARTED = "app_restarted"
MISSING_TERMINAL = "missing_terminal_event"
MISSING_TERMINAL_MESSAGE = "terminal run header had no terminal RuntimeEvent"


def claim_boundary(claim: ContinuationClaim) -> SourceBoundary:
    """The source boundary a claim recorded."""
    return claim.source_boundary


def claim_target(claim: ContinuationClaim) -> ContinuationTarget:
    return ContinuationTarget(
        str(claim.target["invocationId"]), claim.target_run_id, str(claim.target["turnId"])
    )


def header_belongs_to_claim(header: RunHeader, claim: ContinuationClaim) -> bool:
    """Whether ``header`` is the claimed target as the claim describes it (identity, V2
    source on the claimed boundary), so recovery may write into it."""
    source = header.continuation_source
    boundary = claim_boundary(claim)
    target = claim_target(claim)
    return (
        (header.session_id, header.invocation_id, header.turn_id)
        == (boundary.session_id, target.invocation_id, target.turn_id)
        and isinstance(source, ContinuationSourceV2)
        and (source.claim_id, source.boundary_digest) == (claim.claim_id, boundary.manifest_digest)
        and (source.source_run_id, source.source_runtime_event_high_water)
        == (boundary.run_id, boundary.high_water)
    )


class StartupRecovery:
    """Runs the repairs over every run the application knows (see module docstring)."""

    def __init__(
        self,
        claims: Claims,
        tool_runtime: ToolRuntime | None = None,
        *,
        end_start_only_continuations: bool = True,
    ) -> None:
        self.claims = claims
        self.ledger = claims.ledger
        self.tool_runtime = tool_runtime
        self.end_start_only = end_start_only_continuations

    def run(
        self, run_ids: list[str] | None = None, claim_ids: list[str] | None = None
    ) -> StartupRecoveryReport:
        """Repair ``run_ids`` and the claims ``claim_ids`` (default: every run and claim).

        The tool catalogue settles every run about to be ended first, before anything is
        sealed (ADR 0019); a run it holds is reported ``left_unreconciled`` and not touched.
        """
        listed = run_ids if run_ids is not None else self.ledger.all_run_ids()
        candidates, repairs = self._take_ownership(listed)
        settlements = self._settle_tools(candidates)
        repairs += [repair for settlement in settlements for repair in settled_repairs(settlement)]
        claim_repairs = self._repair_claims(claim_ids)
        repairs.extend(claim_repairs)
        skipped = {r.run_id for r in claim_repairs}
        skipped.update(s.run_id for s in settlements if s.holds_run)
        for run_id in candidates:
            if run_id in skipped:
                continue
            repair = self._repair_run(run_id)
            if repair is not None:
                repairs.append(repair)
        return StartupRecoveryReport(tuple(repairs))

    def _take_ownership(
        self, run_ids: list[str], would_write: Callable[[str], bool] | None = None
    ) -> tuple[list[str], list[Repair]]:
        """The runs this host may repair, and the report lines of the others (ADR 0021); an
        expired owner's run is taken over when ``would_write`` (default :meth:`_would_write`)."""
        sorting = sort_by_owner(self.ledger, run_ids, would_write or self._would_write)
        repairs = [Repair(run_id, kind, detail) for run_id, kind, detail in sorting.report]
        return sorting.kept, repairs

    # -- tools ------------------------------------------------------------------------------------

    def _settle_tools(self, run_ids: list[str]) -> list[ToolSettlement]:
        """Settle the tool operations of every run recovery would end (see module docstring)."""
        settlements = []
        for run_id in run_ids:
            if self._would_end(run_id):
                settlement = settle_run_tools(self.ledger, self.tool_runtime, run_id)
                if settlement is not None:
                    settlements.append(settlement)
        return settlements

    def _would_end(self, run_id: str) -> bool:
        """Whether :meth:`_repair_run` would append a terminal to ``run_id`` once its owner is
        gone: no terminal event, not sealed by a claim; a bare continuation start only under
        its rule (``recovery.start_only``). Tools are settled first when this says yes."""
        run = self.ledger.load_run(run_id)
        if run.terminal_event is not None or run.sealed_by is not None:
            return False
        # a bare start is one event: a longer run's history is not read (ADR 0012)
        if run.high_water == 1 and is_bare_continuation_start(run.header, run.events):
            return may_end_bare_start(run, end_start_only_continuations=self.end_start_only)
        return True

    def _would_write(self, run_id: str) -> bool:
        """Whether recovery writes to ``run_id`` once its owner is gone: it would end it, and
        its tools do not leave it to the operator. Only then does the ownership step take an
        expired owner's run over (ADR 0021). A run awaiting only the operator gets no write;
        taken over by a sweeping host, it would fence every attestation and fork from another
        host id while that host lives. The operator's action takes it over itself."""
        return self._would_end(run_id) and not awaits_only_the_operator(
            self.ledger.load_run(run_id)
        )

    # -- claims -----------------------------------------------------------------------------------

    def _repair_claims(self, claim_ids: list[str] | None) -> list[Repair]:
        if claim_ids is None:
            claims = list(self.claims.all_claims())
        else:
            claims = [c for c in (self.claims.get_claim(i) for i in claim_ids) if c is not None]
        repairs = (self._repair_unstarted_claim(claim) for claim in claims)
        return [repair for repair in repairs if repair is not None]

    def _repair_unstarted_claim(self, claim: ContinuationClaim) -> Repair | None:
        """Claim only: create the claimed target with the repair start. Target created but
        never started: give it the repair start. Then the repair terminal (both cases). A
        target that already has events is handled as a run."""
        target_run_id = claim.target_run_id
        if not self.ledger.run_exists(target_run_id):
            header = self._claimed_header(claim)
            start = self._commit_repair_start(claim, header, create=True)
        elif self.ledger.read_run_events(target_run_id):
            return None
        else:
            header = self.ledger.get_run_header(target_run_id)
            if header.is_terminal or not header_belongs_to_claim(header, claim):
                # not the target this claim describes: writing into it would invent facts
                return Repair(target_run_id, "left_claim_conflict", {"claimId": claim.claim_id})
            start = self._commit_repair_start(claim, header, create=False)
        failpoints.hit(failpoints.AFTER_CLAIM_REPAIR_START)
        return self._end_claim_repair(claim.claim_id, claim.claimed_at, header, start)

    def _claimed_header(self, claim: ContinuationClaim) -> RunHeader:
        """The header of a claimed target whose run was never created
        (docs/reference/continuation.md#target-header)."""
        boundary = claim_boundary(claim)
        source: RunHeader = self.ledger.get_run_header(boundary.run_id)
        return continuation_header(
            source,
            boundary,
            claim_target(claim),
            workspace_identity=source.workspace_identity or "",
            claimed_at=claim.claimed_at,
        )

    def _commit_repair_start(
        self, claim: ContinuationClaim, header: RunHeader, *, create: bool
    ) -> RuntimeEvent:
        """Build and commit the ``claim_repair`` start of ``claim``
        (docs/reference/continuation.md#claim-repair: ``ts`` = ``claimedAt``, deterministic id, no
        protocol marker). The ONE place a repair start is made: whatever else a repair start must
        record belongs here. ``create``: the target run does not exist yet and is created with it,
        in one save."""
        start = continuation_start_event(
            claim_boundary(claim),
            claim_target(claim),
            event_id=repair_id("start", claim.claim_id),
            ts=claim.claimed_at,
            provenance="claim_repair",
        )
        if create:
            self.claims.create_claimed_run(header, start)
        else:
            self.claims.start_claimed_run(header.run_id, start)
        return start

    def _end_claim_repair(
        self, claim_id: str, claimed_at: float, header: RunHeader, start: RuntimeEvent
    ) -> Repair:
        """The deterministic repair terminal, then the failed header (``end_run``). Also
        finishes a repair that a crash interrupted after its start: same id, same fact."""
        self.ledger.end_run(
            header.run_id,
            terminal_event(
                header.spine,
                event_id=repair_id("terminal", claim_id),
                ts=max(start.ts + 1, claimed_at + 1),
                status="failed",
                failure_class=ABANDONED,
                state_delta={"recovered": True, "recoveryReason": ABANDONED},
            ),
        )
        return Repair(header.run_id, "claim_repaired", {"claimId": claim_id})

    # -- runs -------------------------------------------------------------------------------------

    def _repair_run(self, run_id: str) -> Repair | None:
        """Repair one run; its history is read only for a run with a terminal event or a
        single event (an interrupted run's reason reads from its last event back, ADR 0012)."""
        run = self.ledger.load_run(run_id)
        header: RunHeader = run.header
        # the Run tracks its first terminal event: none tracked means none committed
        terminals = [] if run.terminal_event is None else [e for e in run.events if e.is_terminal]
        if len(terminals) > 1:
            return Repair(run_id, "left_ambiguous", {"terminalEvents": len(terminals)})
        if header.is_terminal:
            if not terminals:
                return self._recover_missing_terminal(header)
            if header_matches_terminal(header, terminals[0]):
                return None
            return self._repair_header(header, terminals[0], MISSING_TERMINAL)
        if terminals:
            return self._repair_header(header, terminals[0], APP_RESTARTED)
        events = run.events if run.high_water == 1 else ()
        if is_bare_continuation_start(header, events):
            start = events[0].actions.continuation_start if events[0].actions else None
            if start is None or start.provenance == "runtime_admission":
                return self._repair_start_only(run)
            claim = self.claims.get_claim(start.claim_id)
            claimed_at = events[0].ts if claim is None else claim.claimed_at
            return self._end_claim_repair(start.claim_id, claimed_at, header, events[0])
        return self._recover_terminal(header, run.events_newest_first())

    def end_forked_source(self, run_id: str) -> bool:
        """End a run the operator forks while it awaits the operator (ADR 0022 amendment): the
        fork is the operator's decision to abandon the uncertain call, so the source gets the
        recovered terminal (the call stays indeterminate in its history, and the fork's claim
        then seals it). ``False``, nothing written, when its owner is live."""
        candidates, _ = self._take_ownership([run_id], self._would_end)
        if run_id not in candidates:
            return False
        run = self.ledger.load_run(run_id)
        if run.terminal_event is None and not run.header.is_terminal:
            self._recover_terminal(run.header, run.events_newest_first())
        return True

    def _repair_start_only(self, run: Run) -> Repair:
        """A continuation or fork that holds only its runtime-admission start: ended with the
        recovered terminal when its owner is gone (``start_only_ended``; the provider may have
        been called, so ``run_interrupted``, never "before provider dispatch"), else left
        alone (``left_live_start``: the reference's rule; ADR 0035)."""
        if not (
            may_end_bare_start(run, end_start_only_continuations=self.end_start_only)
            and owner_is_gone(self.ledger.ownership, run)
        ):
            return Repair(run.run_id, "left_live_start")
        reason, last_type = self._append_recovered_terminal(run.header, iter(run.events))
        detail: dict[str, Any] = {"recoveryReason": reason, "lastEventType": last_type}
        start = start_fact(run)
        if start is not None:
            detail["claimId"] = start.claim_id
        return Repair(run.run_id, "start_only_ended", detail)

    def _recover_terminal(self, header: RunHeader, newest_first: Iterator[RuntimeEvent]) -> Repair:
        """No terminal fact: the recovered terminal (the tools settled what they could before,
        in :meth:`_settle_tools`; what stays indeterminate keeps Phase 0 ``blocked``)."""
        reason, _ = self._append_recovered_terminal(header, newest_first)
        return Repair(header.run_id, "terminal_recovered", {"recoveryReason": reason})

    def _append_recovered_terminal(
        self, header: RunHeader, newest_first: Iterator[RuntimeEvent]
    ) -> tuple[str, str | None]:
        """End the run with the recovered terminal; ``(recoveryReason, lastEventType)`` it
        recorded (docs/reference/continuation.md#recovered-terminal)."""
        reason, last_type = recovery_reason_newest_first(header.status, newest_first)
        delta: dict[str, Any] = {"recovered": True, "recoveryReason": reason}
        if last_type is not None:
            delta["lastEventType"] = last_type
        self.ledger.end_run(
            header.run_id,
            terminal_event(
                header.spine,
                event_id=recovered_terminal_id(header.run_id),
                ts=self.ledger.now_ms(),
                status="failed",
                failure_class=APP_RESTARTED,
                state_delta=delta,
            ),
        )
        return reason, last_type

    def _recover_missing_terminal(self, header: RunHeader) -> Repair:
        """A terminal header no terminal event backs: the recovered failed terminal
        ``missing_terminal_event`` at the header's completion time, then the header follows
        it (a header is derived authority; the ledger must say how the run ended)."""
        ts = header.completed_at if header.completed_at is not None else header.updated_at
        self.ledger.end_run(
            header.run_id,
            terminal_event(
                header.spine,
                event_id=recovered_terminal_id(header.run_id),
                ts=ts,
                status="failed",
                failure_class=MISSING_TERMINAL,
                state_delta={"recovered": True, "recoveryReason": MISSING_TERMINAL},
                message=MISSING_TERMINAL_MESSAGE,
            ),
        )
        return Repair(header.run_id, "terminal_recovered", {"recoveryReason": MISSING_TERMINAL})

    def _repair_header(
        self, header: RunHeader, terminal: RuntimeEvent, default_failure_class: str
    ) -> Repair:
        """The header follows the durable terminal fact; nothing new is written to the ledger.
        A failed fact that carries no failure class gives the header ``default_failure_class``
        (``app_restarted`` for an interrupted run, ``missing_terminal_event`` for a terminal
        header the fact contradicts)."""
        patch = terminal_header_patch(header, terminal)
        if patch is None:
            return Repair(header.run_id, "left_ambiguous", {"terminalEventId": terminal.id})
        if patch["status"] == "failed" and terminal_failure_class(terminal, header) is None:
            patch["failureClass"] = default_failure_class
        if not header_matches_terminal(
            RunHeader.model_validate({**header.to_wire(), **patch}), terminal
        ):
            return Repair(header.run_id, "left_ambiguous", {"terminalEventId": terminal.id})
        self.ledger.update_run_header(header.run_id, patch)
        return Repair(header.run_id, "header_repaired", {"status": patch["status"]})


def settled_repairs(settlement: ToolSettlement) -> list[Repair]:
    """The report lines of one run's tool settlement: what the tools wrote
    (``tools_recovered``), and why the run is left unsealed (``left_unreconciled``: a tool is
    missing or failed; ``left_awaiting_operator``: only an operator can settle a call)."""
    repairs = []
    if settlement.settled:
        actions = [
            {
                "operationId": action.operation_id,
                "toolName": action.tool_name,
                "action": action.action,
                "reason": action.reason,
            }
            for action in settlement.settled
        ]
        repairs.append(Repair(settlement.run_id, "tools_recovered", {"actions": actions}))
    if settlement.held:
        detail: dict[str, Any] = {"operations": list(settlement.held)}
        if settlement.error_class is not None:
            detail["errorClass"] = settlement.error_class
        repairs.append(Repair(settlement.run_id, "left_unreconciled", detail))
    if settlement.awaiting_operator:
        # an interrupted never_auto_retry (...) call: unsealed, so it can still be attested
        waiting = {"operations": list(settlement.awaiting_operator)}
        repairs.append(Repair(settlement.run_id, "left_awaiting_operator", waiting))
    return repairs
