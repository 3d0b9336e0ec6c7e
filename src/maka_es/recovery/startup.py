"""Startup recovery: make every interrupted run terminal, and say what was done (the report, its
repairs, and the steps: tool settlement, ownership, the start-only rule).

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
  left alone (``left_live_start``); the rule: *The start-only rule* below, ADR 0035. One whose
  agent loop committed more than its start (a model turn, a tool call) is recovered like any
  agent run: tools settled first, then the recovered terminal (ADR 0020).

Before any of that seals a run, the tool catalogue settles what it can prove, for every run
about to be ended (*Tool settlement* below; ADR 0019): a run whose unsettled operation the
catalogue could not settle but a recovery with the right tool could is left unsealed
(``left_unreconciled``, naming the operation, the tool and why). Sealing it would make a landed
write unreconcilable for good. A run whose interrupted call only an operator can settle
(``never_auto_retry``, ...) is left unsealed too (``left_awaiting_operator``), so the operator
can still attest it after any number of restarts.

Several hosts may share one store, and a live host may sweep periodically: a run this
application instance holds is left alone, another host's run under a live lease too, one whose
owner's lease expired is taken over first (*Ownership* below; ADR 0021).

Every repair uses deterministic ids, so a recovery interrupted by another crash converges when
it runs again, and running it twice changes nothing.

**The report**: one ``Repair`` per run or claim recovery touched, in a
``StartupRecoveryOutcome``. The ids recovery writes are derived once, deterministically
(``repair_id``, ``recovered_terminal_id``), so a repair that a crash interrupted converges to
the same facts (docs/reference/continuation.md#claim-repair).

**Tool settlement**, the first step, run before anything is sealed (ADR 0019): a recovered
terminal seals its run, and a sealed run accepts no recovery bundle and no T2 any more. A
``Write`` that landed before the crash can then never be settled from what the file shows, and
every continuation of the run parks for good. So, for every run recovery is about to end:

1. when the run has operations with T1 and no T2, the application's
   :class:`~maka_es.tooljournal.runtime.ToolRuntime` recovers them (reconcile, or re-execute an
   idempotent / replay-safe tool with the same operation id;
   docs/reference/continuation.md#tool-settlement);
2. what is still unsettled is then sorted: an operation whose recorded recovery mode is one that
   recovery settles by itself (``reconcile``, ``idempotent``, ``replay_safe``) but which this
   recovery could not settle (its tool is not in the catalogue, the catalogue's tool has another
   recovery mode than the one recorded at T1, or the tool runtime failed on the run) *holds* the
   run: it is not sealed, and the report says which operation, which tool and why. A later
   recovery with the right catalogue settles it. Every other unsettled operation
   (``never_auto_retry``, ``outcome_unknown``, ``reattach``) stays indeterminate and holds the
   run *awaiting the operator*: only an operator can decide those, and a sealed run could no
   longer take the attested outcome (ADR 0019 and ADR 0022, amendments of 2026-12-01). Once
   attested, the attestation finishes the run's recovery.

A store fault while settling is raised: no run has been sealed at that point, so nothing is
lost, and the next start repeats the whole recovery.

**Ownership**: which runs a recovering host may repair, when several hosts share one store
(docs/reference/continuation.md#run-ownership, ADR 0021). Ending a run is a write, and a write
to a run another host owns under a live lease would end that host's live run. So recovery sorts
its candidates first: a run owned by another host whose lease is live is left alone
(``left_live_owner``); one whose owner's lease expired is taken over (``owner_taken_over``: one
save at the run's next version, the store picks one winner between two recovering hosts)
before recovery writes anything to it (a recovered terminal, or a lagging header made to follow
its terminal event: the former owner's late header write is then fenced, not raced), unless
this host's own heartbeat just waited on a locked store: the owner's lease may have lapsed
only because nobody could write, so the takeover waits for a later sweep (``left_live_owner``
with ``deferred: store_was_locked``); this
host's own runs of its previous incarnation and ownerless runs are kept as they are. A run
this application instance holds (created or took over, at the run's current epoch) is its own
live run, whichever thread is running it: it is left alone (``left_own_live_run``), so a live
host may call ``recover()`` periodically to sweep for dead hosts' runs. A run recovery would
not write to is never taken over.

**The start-only rule**: when a continuation that committed nothing but its start may be ended
(ADR 0035; docs/reference/continuation.md#ledger-repair). Such a run (a continuation or an
operator's fork killed before or during its first model call) has no fact that says whether
its provider is still running. The reference therefore leaves it alone for good. maka_es
records who owns a run (ADR 0021): once recovery's ownership step has run, a run that is this
host's own is the run of a previous process of this host, or one just taken over from a host
whose lease expired (whose late writes are fenced). Its owner is gone, so recovery ends it. A
run without a recorded owner has no such proof and keeps the reference's rule, as does every
run when the host asks for it (``end_start_only_continuations=False``). A claim-repair start is
recovery's own write and is always finished (docs/reference/continuation.md#claim-repair).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from maka_es import failpoints, telemetry
from maka_es.continuation.claims import (
    Claims,
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
    is_continuation_start,
)
from maka_es.errors import MakaError, StoreRefusal
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.model.ownership import RunOwner
from maka_es.ledger.model.run import Run
from maka_es.ledger.ports import is_store_fault
from maka_es.ledger.service import Ledger
from maka_es.recovery.model.reason import recovery_reason_newest_first
from maka_es.telemetry import (
    DETAIL_REASON,
    REASON,
    RECOVERY_DECISION_SPAN,
    RECOVERY_SPAN,
    REPAIRS,
    RUN_ID,
)
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.runtime import RecoveryAction, ToolRuntime
from maka_es.wire.events import ContinuationStartV2, RuntimeEvent
from maka_es.wire.run_header import (
    ContinuationSourceV2,
    RunHeader,
    header_matches_terminal,
    terminal_event,
    terminal_failure_class,
    terminal_header_patch,
)

# === the report and its deterministic ids =========================================================

RepairKind = Literal[
    "header_repaired",
    "terminal_recovered",
    "claim_repaired",
    "start_only_ended",
    "left_live_start",
    "left_ambiguous",
    "left_claim_conflict",
    "tools_recovered",
    "left_unreconciled",
    "left_awaiting_operator",
    "left_live_owner",
    "left_own_live_run",
    "owner_taken_over",
]

#: Repair kinds that report a run left as it was (nothing written for it).
LEFT_KINDS = frozenset(
    {"left_live_start", "left_ambiguous", "left_claim_conflict", "left_unreconciled"}
    | {"left_live_owner", "left_awaiting_operator", "left_own_live_run"}
)


@dataclass(frozen=True)
class Repair:
    run_id: str
    kind: RepairKind
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StartupRecoveryOutcome:
    """What ``recover()`` did, one :class:`Repair` per change or deliberate non-change, in the
    order it made them: the host logs it and needs nothing else to decide."""

    repairs: tuple[Repair, ...]

    @property
    def changed_anything(self) -> bool:
        return any(r.kind not in LEFT_KINDS for r in self.repairs)


def repair_id(kind: str, claim_id: str) -> str:
    """Deterministic repair ids ``continuation-repair-<kind>-<32 hex>``
    (docs/reference/continuation.md#claim-repair)."""
    digest = hashlib.sha256(f"maka.continuation-repair.{kind}.v1\0{claim_id}".encode()).hexdigest()
    return f"continuation-repair-{kind}-{digest[:32]}"


def recovered_terminal_id(run_id: str) -> str:
    """The deterministic id of the terminal recovery writes for a run (one per run, ever)."""
    return f"{run_id}-recovered-terminal"


# === tool settlement: the catalogue settles what it can, before any seal ==========================

#: Recovery modes recovery settles by itself when it has the tool (docs/reference/tool-journal.md).
SELF_SETTLING_MODES: Final = frozenset({"reconcile", "idempotent", "replay_safe"})

#: Why an unsettled operation holds its run unsealed (``left_unreconciled`` detail ``reason``).
TOOL_NOT_IN_CATALOGUE: Final = "tool_not_in_catalogue"
RECOVERY_MODE_CHANGED: Final = "recovery_mode_changed"
TOOL_RECOVERY_FAILED: Final = "tool_recovery_failed"


@dataclass(frozen=True)
class ToolSettlement:
    """What settling one run's tool operations did, and what holds the run unsealed."""

    run_id: str
    #: What the tool runtime wrote (completed, parked or re-executed operations).
    settled: tuple[RecoveryAction, ...]
    #: ``{operationId, toolName, recoveryMode, reason}`` of each operation that holds the run.
    held: tuple[dict[str, Any], ...]
    #: The stable name of the tool runtime's failure on this run, if it failed.
    error_class: str | None = None
    #: ``{operationId, toolName, recoveryMode}`` of each operation only an operator can settle.
    awaiting_operator: tuple[dict[str, Any], ...] = ()

    @property
    def holds_run(self) -> bool:
        return bool(self.held or self.awaiting_operator)


def awaits_only_the_operator(run: Run) -> bool:
    """Whether recovery would leave ``run`` to the operator and write nothing to it: some
    operation is unsettled, and every unsettled one is of a mode no tool settles
    (``never_auto_retry``, ...; ``left_awaiting_operator``)."""
    modes = [op.recovery_mode for op in run.tool_operations if op.is_unsettled]
    return bool(modes) and all(mode not in SELF_SETTLING_MODES for mode in modes)


def unsettled_operations(ledger: Ledger, run_id: str) -> list[ToolOperationState]:
    """Operations of ``run_id`` with T1 and neither T2 nor a recovery decision (read on the
    commands' cached Run while no command runs, so recovery folds a run once, see
    :meth:`Ledger.read_run`)."""
    return ledger.read_run(run_id, _unsettled)


def _unsettled(run: Run) -> list[ToolOperationState]:
    return [op for op in run.tool_operations if op.is_unsettled]


def settle_run_tools(
    ledger: Ledger, tool_runtime: ToolRuntime | None, run_id: str
) -> ToolSettlement | None:
    """Settle ``run_id``'s unsettled operations with ``tool_runtime`` (``None``: an empty
    catalogue), then say which of the rest hold the run. ``None``: nothing was unsettled."""
    if not unsettled_operations(ledger, run_id):
        return None
    settled: tuple[RecoveryAction, ...] = ()
    error_class: str | None = None
    if tool_runtime is not None:
        try:
            report = tool_runtime.recover(run_id, call_events=_call_events(ledger, run_id))
        except Exception as exc:
            if is_store_fault(exc):
                raise  # nothing is sealed yet: the next start repeats the whole recovery
            error_class = exc.code if isinstance(exc, MakaError) else type(exc).__name__
        else:
            settled = tuple(a for a in report.actions if a.action != "left_indeterminate")
    catalogue = tool_runtime.tools if tool_runtime is not None else {}
    held, awaiting = [], []
    for operation in unsettled_operations(ledger, run_id):
        named = {
            "operationId": operation.operation_id,
            "toolName": operation.tool_name,
            "recoveryMode": operation.recovery_mode,
        }
        if operation.recovery_mode not in SELF_SETTLING_MODES:
            awaiting.append(named)
            continue
        reason = _hold_reason(operation, catalogue, error_class)
        if reason is not None:
            held.append({**named, "reason": reason})
    return ToolSettlement(run_id, settled, tuple(held), error_class, tuple(awaiting))


def _call_events(ledger: Ledger, run_id: str) -> dict[str, RuntimeEvent]:
    """The call events of ``run_id``'s unsettled operations, read from the run's last event
    back and only as far as the oldest of them: an interrupted call is near the end, and a run
    restored from a snapshot is not read whole (ADR 0012, ADR 0032). The last event with an id
    wins, as in a map of every event."""
    wanted = {op.call_event_id for op in unsettled_operations(ledger, run_id)}
    wanted.discard(None)
    if not wanted:
        return {}
    return ledger.read_run(run_id, lambda run: _newest_with_ids(run, wanted))


def _newest_with_ids(run: Run, wanted: set[str | None]) -> dict[str, RuntimeEvent]:
    found: dict[str, RuntimeEvent] = {}
    for event in run.events_newest_first():
        if event.id in wanted:
            found[event.id] = event
            wanted.discard(event.id)
            if not wanted:
                break
    return found


def _hold_reason(
    operation: ToolOperationState, catalogue: dict[str, Any], error_class: str | None
) -> str | None:
    """Why ``operation`` (of a self-settling mode) keeps its run unsealed; ``None`` when the
    tool runtime settled all it could and sealing loses nothing."""
    tool = catalogue.get(operation.tool_name)
    if tool is None:
        return TOOL_NOT_IN_CATALOGUE
    if tool.recovery_mode != operation.recovery_mode:
        return RECOVERY_MODE_CHANGED
    if error_class is not None:
        return TOOL_RECOVERY_FAILED
    return None


# === ownership: which runs this host may repair ===================================================

OwnershipKind = Literal["left_live_owner", "left_own_live_run", "owner_taken_over"]


@dataclass
class OwnerSorting:
    """Runs recovery may repair (``kept``) and the repair lines of the ownership step."""

    kept: list[str] = field(default_factory=list)
    repairs: list[tuple[str, OwnershipKind, dict[str, Any]]] = field(default_factory=list)


def header_lags(run: Run) -> bool:
    """Whether recovery would repair the run's header from its terminal event, or give a
    terminal header its missing terminal event (docs/reference/continuation.md#ledger-repair)."""
    terminal = run.terminal_event
    if terminal is None:
        return run.header.is_terminal
    return not header_matches_terminal(run.header, terminal)


def sort_by_owner(
    ledger: Ledger, run_ids: list[str], would_end: Callable[[str], bool]
) -> OwnerSorting:
    """Sort ``run_ids`` by owner (see module docstring); ``would_end``: whether recovery
    would append a terminal to the run. Only runs recovery writes to are taken over."""
    ownership = ledger.ownership
    sorting = OwnerSorting()
    if ownership is None:
        sorting.kept.extend(run_ids)
        return sorting
    for run_id in run_ids:
        verdict, owner, lags = ledger.read_run(
            run_id, lambda run: (ownership.verdict(run), run.owner, header_lags(run))
        )
        if verdict == "held":
            assert owner is not None
            detail = {"ownerHostId": owner.host_id, "ownerEpoch": owner.epoch}
            sorting.repairs.append((run_id, "left_own_live_run", detail))
            continue
        if verdict == "expired" and (lags or would_end(run_id)):
            previous = owner
            if ownership.take_over(run_id):
                owner = ledger.read_run(run_id, _owner)
                assert previous is not None
                assert owner is not None
                detail = {"previousHostId": previous.host_id, "epoch": owner.epoch}
                sorting.repairs.append((run_id, "owner_taken_over", detail))
                sorting.kept.append(run_id)
                continue
            owner = ledger.read_run(run_id, _owner)  # another host took it over first, or deferred
        elif verdict != "live":
            sorting.kept.append(run_id)
            continue
        assert owner is not None
        left: dict[str, Any] = {"ownerHostId": owner.host_id, "ownerEpoch": owner.epoch}
        if verdict == "expired" and ownership.store_waited_recently():
            left["deferred"] = "store_was_locked"
        sorting.repairs.append((run_id, "left_live_owner", left))
    return sorting


def _owner(run: Run) -> RunOwner | None:
    return run.owner


# === the start-only rule ==========================================================================


def is_bare_continuation_start(header: RunHeader, events: Sequence[RuntimeEvent]) -> bool:
    """A continuation run that holds its start fact and nothing else: no provider turn of its
    agent loop was committed (docs/reference/continuation.md#ledger-repair). Only such a run
    is left to the start-only rule; one that went further is recovered like any interrupted
    run (ADR 0020)."""
    return (
        header.continuation_source is not None
        and len(events) == 1
        and is_continuation_start(events[0])
    )


def start_fact(run: Run) -> ContinuationStartV2 | None:
    """The V2 start fact of a bare start (``None``: the Original P1 form)."""
    actions = run.events[0].actions
    return actions.continuation_start if actions is not None else None


def may_end_bare_start(run: Run, *, end_start_only_continuations: bool) -> bool:
    """Whether recovery ends this bare start once its owner is gone: a claim-repair start
    always; a runtime-admission one under the start-only rule, when an owner is recorded."""
    start = start_fact(run)
    if start is not None and start.provenance == "claim_repair":
        return True
    return end_start_only_continuations and run.owner is not None


def owner_is_gone(ownership: HostLeases | None, run: Run) -> bool:
    """Whether ``run``'s owner is proven gone, asked after the ownership step (which leaves
    other hosts' live runs and the runs this instance is running alone, and takes over expired
    ones): the run is this host's previous incarnation's, or this recovery just took it over
    from an expired owner (both ``own``: a run recovery took over is no live turn)."""
    return ownership is not None and ownership.verdict(run) == "own"


def _done(repair: Repair | None) -> Callable[[], Repair | None]:
    """A repair decided with nothing to write."""
    return lambda: repair


# === startup recovery =============================================================================

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
    ) -> StartupRecoveryOutcome:
        """Repair ``run_ids`` and the claims ``claim_ids`` (default: every run and claim).

        The tool catalogue settles every run about to be ended first, before anything is
        sealed (ADR 0019); a run it holds is reported ``left_unreconciled`` and not touched.
        One span for the recovery, one per decision (ADR 0043).
        """
        with telemetry.span(RECOVERY_SPAN) as span:
            outcome = self._recover(run_ids, claim_ids)
            span.set(REPAIRS, len(outcome.repairs))
            return outcome

    def _recover(
        self, run_ids: list[str] | None, claim_ids: list[str] | None
    ) -> StartupRecoveryOutcome:
        listed = run_ids if run_ids is not None else self.ledger.all_run_ids()
        candidates, repairs = self._take_ownership(listed)
        settlements = self._settle_tools(candidates)
        repairs += [repair for settlement in settlements for repair in settled_repairs(settlement)]
        self._decided(repairs)
        claim_repairs = self._repair_claims(claim_ids)
        self._decided(claim_repairs)
        repairs.extend(claim_repairs)
        skipped = {r.run_id for r in claim_repairs}
        skipped.update(s.run_id for s in settlements if s.holds_run)
        for run_id in candidates:
            if run_id in skipped:
                continue
            repair = self._repair_run(run_id)
            if repair is not None:
                self._decided([repair])
                repairs.append(repair)
        return StartupRecoveryOutcome(tuple(repairs))

    def _decided(self, repairs: Sequence[Repair]) -> None:
        """A span per decision, with its reason code, linked to its run's recorded trace."""
        if not telemetry.tracing_enabled():
            return
        for repair in repairs:
            attributes: dict[str, object] = {RUN_ID: repair.run_id, REASON: repair.kind}
            attributes[DETAIL_REASON] = repair.detail.get("reason")
            origin = (self.ledger.trace_context(repair.run_id),)
            with telemetry.span(RECOVERY_DECISION_SPAN, attributes, links=origin.__iter__):
                pass

    def _take_ownership(
        self, run_ids: list[str], would_write: Callable[[str], bool] | None = None
    ) -> tuple[list[str], list[Repair]]:
        """The runs this host may repair, and the repair lines of the others (ADR 0021); an
        expired owner's run is taken over when ``would_write`` (default :meth:`_would_write`)."""
        sorting = sort_by_owner(self.ledger, run_ids, would_write or self._would_write)
        repairs = [Repair(run_id, kind, detail) for run_id, kind, detail in sorting.repairs]
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
        its rule (the start-only rule above). Tools are settled first when this says yes."""
        return self.ledger.read_run(run_id, self._ends)

    def _ends(self, run: Run) -> bool:
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
        return self._would_end(run_id) and not self.ledger.read_run(
            run_id, awaits_only_the_operator
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
        single event (an interrupted run's reason reads from its last event back, ADR 0012).
        Decided on a view of the Run (:meth:`Ledger.read_run`: the commands' cached Run the
        earlier steps read, no fold of its own), written after the view.

        Another process (an operator's ``attest`` or ``end-run``, another host's sweep) may end
        the run between the view and the write: the store refuses the second terminal, and this
        sweep then has nothing left to do on the run (``None``), as ``end-run`` does; any other
        refusal, and every store fault, still raises."""
        try:
            return self.ledger.read_run(run_id, self._repair_of)()
        except StoreRefusal:  # the store's verdict on a write (a fault is no verdict)
            if self.ledger.load_run(run_id).terminal_event is None:
                raise
            return None

    def _repair_of(self, run: Run) -> Callable[[], Repair | None]:
        """What :meth:`_repair_run` writes for ``run``: every value is read from the Run here,
        the returned step only writes."""
        header: RunHeader = run.header
        # the Run tracks its first terminal event: none tracked means none committed
        terminals = [] if run.terminal_event is None else [e for e in run.events if e.is_terminal]
        if len(terminals) > 1:
            return _done(Repair(run.run_id, "left_ambiguous", {"terminalEvents": len(terminals)}))
        if header.is_terminal:
            if not terminals:
                return lambda: self._recover_missing_terminal(header)
            if header_matches_terminal(header, terminals[0]):
                return _done(None)
            return lambda: self._repair_header(header, terminals[0], MISSING_TERMINAL)
        if terminals:
            return lambda: self._repair_header(header, terminals[0], APP_RESTARTED)
        events = tuple(run.events) if run.high_water == 1 else ()
        if is_bare_continuation_start(header, events):
            start = events[0].actions.continuation_start if events[0].actions else None
            if start is None or start.provenance == "runtime_admission":
                return self._repair_start_only(run)
            claim = self.claims.get_claim(start.claim_id)
            claimed_at = events[0].ts if claim is None else claim.claimed_at
            return lambda: self._end_claim_repair(start.claim_id, claimed_at, header, events[0])
        reason = recovery_reason_newest_first(header.status, run.events_newest_first())
        return lambda: self._terminal_recovered(header, reason)

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

    def _repair_start_only(self, run: Run) -> Callable[[], Repair | None]:
        """A continuation or fork that holds only its runtime-admission start: ended with the
        recovered terminal when its owner is gone (``start_only_ended``; the provider may have
        been called, so ``run_interrupted``, never "before provider dispatch"), else left
        alone (``left_live_start``: the reference's rule; ADR 0035). Decided on ``run``; the
        returned step writes."""
        if not (
            may_end_bare_start(run, end_start_only_continuations=self.end_start_only)
            and owner_is_gone(self.ledger.ownership, run)
        ):
            return _done(Repair(run.run_id, "left_live_start"))
        header, start = run.header, start_fact(run)
        recorded = recovery_reason_newest_first(header.status, iter(tuple(run.events)))

        def end() -> Repair:
            reason, last_type = self._append_recovered_terminal(header, recorded)
            detail: dict[str, Any] = {"recoveryReason": reason, "lastEventType": last_type}
            if start is not None:
                detail["claimId"] = start.claim_id
            return Repair(header.run_id, "start_only_ended", detail)

        return end

    def _recover_terminal(self, header: RunHeader, newest_first: Iterator[RuntimeEvent]) -> Repair:
        """No terminal fact: the recovered terminal (the tools settled what they could before,
        in :meth:`_settle_tools`; what stays indeterminate keeps Phase 0 ``blocked``)."""
        recorded = recovery_reason_newest_first(header.status, newest_first)
        return self._terminal_recovered(header, recorded)

    def _terminal_recovered(self, header: RunHeader, recorded: tuple[str, str | None]) -> Repair:
        """:meth:`_recover_terminal` with its reason read before (``recorded``)."""
        reason, _ = self._append_recovered_terminal(header, recorded)
        return Repair(header.run_id, "terminal_recovered", {"recoveryReason": reason})

    def _append_recovered_terminal(
        self, header: RunHeader, recorded: tuple[str, str | None]
    ) -> tuple[str, str | None]:
        """End the run with the recovered terminal; ``recorded`` is its ``(recoveryReason,
        lastEventType)`` (``recovery_reason_newest_first`` of the run's events, read before;
        docs/reference/continuation.md#recovered-terminal)."""
        reason, last_type = recorded
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
    """The repair lines of one run's tool settlement: what the tools wrote
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
