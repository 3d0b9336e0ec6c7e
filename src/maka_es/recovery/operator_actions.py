"""Operator actions on a parked or abandoned run: attest an indeterminate operation's outcome,
fork the run before an uncertain call (ADR 0022), end a start-only run whose process is gone
(ADR 0035; ``maka-es end-run RUN``).

Why a service apart from startup recovery: recovery never settles an unknown outcome by itself
(docs/reference/tool-journal.md#recovery-modes); only a person who looked at the world can.
:class:`OperatorActions` is the one door for that decision: it validates it, commits it through
the tool journal's command (one save, one winner) and reports it to telemetry with identities
and codes only. The decision itself lives in
:meth:`maka_es.ledger.model.run.Run.decide_attestation`.

**Fork**: a new run from the last safe boundary before an uncertain call. Why a fork and not a
rewrite: an operation whose outcome nobody knows (a ``never_auto_retry`` call sealed by
recovery, docs/reference/tool-journal.md#recovery-modes) blocks its run for good, and history
is never rewritten. An operator who accepts to abandon that call forks: a new run continues
the source's committed prefix up to the call, exactly as a continuation would (the same
lineage pinning, composite replay and suffix trimming,
docs/reference/continuation.md#composite-replay), so the model item that issued the call and
everything after it are left out of the fork's replay; the source stays byte for byte as it is.
Why through a claim: the fork claims its boundary with ``Claims.admit`` (ONE save of the claim,
the source's seal, the fork run with its V2 start fact as event 1 and the ``RunForked``
provenance), so a fork and a continuation of the same source race on the store's uniqueness
(ADR 0010) and exactly one wins.

**End-run**: startup recovery ends a start-only run at a restart, but an operator who knows the
process is gone (an abandoned fork execution, a host that will not come back) should not have
to restart a host or sweep the whole store. :func:`end_start_only_run` asks the same rule
recovery asks, for this one run, and runs recovery's own repair on it, so the terminal written
is recovery's (``<runId>-recovered-terminal``, ``run_interrupted``) and a later restart finds
nothing left to do. It is stricter than a restart on one point: a run whose owner still holds
a live lease is refused even when that owner is this host id, because the command runs beside
the host, not instead of it. Every refusal is typed and writes nothing; of two processes
ending the same run, the store lets one write and the other answers ``run_already_ended``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from maka_es import failpoints, telemetry
from maka_es.continuation.claims import (
    Claims,
    ContinuationTarget,
    RunReader,
    SourceBoundary,
    source_boundary,
)
from maka_es.continuation.executor import ContinuationExecutor, ContinuationOutcome
from maka_es.continuation.lineage import checked_history_turns, read_lineage
from maka_es.continuation.model.replay import CompositeReplay, build_composite_replay
from maka_es.errors import LineagePark, MakaError, RunEndRefusedError, RunForkRefusedError
from maka_es.ledger.model.facts import RunForked, fork_stream_id
from maka_es.ledger.model.ownership import decide_take_over
from maka_es.ledger.model.run import Run
from maka_es.ledger.ports import STORE_FAULTS, RunStore
from maka_es.ledger.service import Ledger, ToolCommands
from maka_es.providers.protocol import Provider
from maka_es.recovery.startup import (
    Repair,
    StartupRecovery,
    StartupRecoveryOutcome,
    is_bare_continuation_start,
    start_fact,
)
from maka_es.resume.models import ResumePlan
from maka_es.resume.plan import cyclic_gc_paused, plan_over_resolution
from maka_es.telemetry import (
    ATTEST_SPAN,
    CLAIM_ID,
    FORK_SPAN,
    OPERATION_ID,
    OUTCOME,
    RUN_ID,
    TARGET_RUN_ID,
    OperatorAttestedEvent,
    RunForkedEvent,
    Telemetry,
)
from maka_es.tooljournal.model.attestation import OperatorAttestation, validate_attestation_input
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV2, RunHeader

__all__ = [
    "AFTER_FORK_COMMITTED",
    "AFTER_FORK_TAKEN",
    "AttestationOutcome",
    "OperatorActions",
    "ForkOutcome",
    "RunForks",
    "EndRunOutcome",
    "end_start_only_run",
    "operator_commands",
]


# === attest an indeterminate outcome =======================================================


@dataclass(frozen=True, slots=True)
class AttestationOutcome:
    """What ``attest_operation`` did: ``created=False`` when the same decision was already
    committed (``attestation`` is then the first one, with its original time)."""

    run_id: str
    operation_id: str
    created: bool
    attestation: OperatorAttestation
    #: What finishing the run's recovery did once nothing awaited an operator any more
    #: (``terminal_recovered``, or why the run was left); empty when nothing was due.
    recovery: tuple[Repair, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "created": self.created,
            **self.attestation.to_detail(),
            "recovery": [{"kind": r.kind, "detail": r.detail} for r in self.recovery],
        }


class OperatorActions:
    """Typed, recorded operator actions over the tool journal (see module docstring)."""

    def __init__(
        self,
        ledger: Ledger,
        tool_commands: ToolCommands,
        telemetry: Telemetry,
        recover_run: Callable[[str], StartupRecoveryOutcome] | None = None,
    ) -> None:
        self._ledger = ledger
        self._tools = tool_commands
        self._telemetry = telemetry
        self._recover_run = recover_run

    def attest_operation(
        self,
        run_id: str,
        operation_id: str,
        *,
        applied: bool,
        result: Any = None,
        actor: str,
        note: str = "",
    ) -> AttestationOutcome:
        """Record that the indeterminate operation took effect (``applied=True``, with the
        ``result`` the model should see) or did not (``applied=False``); see
        :meth:`maka_es.ledger.service.ToolCommands.attest_operation`. A refusal raises a
        typed error and writes nothing. When nothing else of the run awaits a decision, the
        run's recovery is finished (see :meth:`_finish_recovery`)."""
        with telemetry.span(
            ATTEST_SPAN,
            {RUN_ID: run_id, OPERATION_ID: operation_id},
            links=lambda: (self._ledger.trace_context(run_id),),
        ) as span:
            self._take_over_if_owner_gone(run_id, operation_id, (actor, note, applied, result))
            commit, attestation = self._tools.attest_operation(
                run_id, operation_id, applied=applied, result=result, actor=actor, note=note
            )
            span.set(OUTCOME, "applied" if applied else "not_applied")
            if commit.created:
                self._emit(run_id, attestation)
            recovery = self._finish_recovery(run_id)
        return AttestationOutcome(
            run_id, commit.operation_id, commit.created, attestation, recovery
        )

    def _take_over_if_owner_gone(
        self, run_id: str, operation_id: str, decision: tuple[str, str, bool, Any]
    ) -> None:
        """A dead host's run awaiting the operator still names that host as its owner
        (recovery writes nothing to it, so it takes it over from nobody, ADR 0021), and a write
        of another host id is fenced: an attestation that will be accepted (valid input, the
        operation unsettled in an unended run) takes the run over first when its owner's lease
        has expired. A live owner's run is not taken: the attestation is then refused
        ``run_owner_fenced`` with nothing written, as before."""
        ownership = self._ledger.ownership
        if ownership is None or not self._ledger.run_exists(run_id):
            return
        validate_attestation_input(*decision)
        run = self._ledger.load_run(run_id)
        unsettled = {op.operation_id for op in run.tool_operations if op.is_unsettled}
        if (
            operation_id in unsettled
            and run.terminal_event is None
            and run.sealed_by is None
            and ownership.verdict(run) == "expired"
        ):
            ownership.take_over(run_id)

    def _finish_recovery(self, run_id: str) -> tuple[Repair, ...]:
        """Startup recovery left the run unsealed only because an operator had to decide
        (``left_awaiting_operator``, ADR 0019 amendment). Once no operation of it is unsettled,
        recover that one run now (same rules: ownership, tools first, the deterministic
        recovered terminal), so the next continuation sees the attested result. Also run on an
        exact retry: it finishes a recovery a crash interrupted after the attestation."""
        if self._recover_run is None:
            return ()
        run = self._ledger.load_run(run_id)
        if run.terminal_event is not None or run.sealed_by is not None:
            return ()
        if any(op.is_unsettled for op in run.tool_operations):
            return ()  # another call still awaits its own attestation
        return self._recover_run(run_id).repairs

    def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        """The Phase 0 plan of the run with its attestations as ``operator_attested``
        diagnostics. Why here: the events and the attestations are read from ONE load of the
        run, so a plan never names an attestation whose response it does not hold. The
        collector is paused while the run's events are read and planned (ADR 0045)."""
        with cyclic_gc_paused():
            run = self._ledger.load_run(run_id)
            return plan_over_resolution(
                run.events, run.resolution(), expected_high_water, run.attestations
            )

    def _emit(self, run_id: str, attestation: OperatorAttestation) -> None:
        """Telemetry is best-effort: an actor that is not a telemetry identity drops the event."""
        try:
            event = OperatorAttestedEvent(
                session_id=self._ledger.get_run_header(run_id).session_id,
                run_id=run_id,
                operation_id=attestation.operation_id,
                actor=attestation.actor,
                outcome="applied" if attestation.applied else "not_applied",
            )
        except ValidationError:
            return
        self._telemetry.emit(event)


# === fork a run before an uncertain call ==========================================================


@dataclass(frozen=True, slots=True)
class ForkOutcome:
    """What ``fork_run`` did: ``created=False`` when the same fork was already committed
    (the report is then the first one, with its original time)."""

    source_run_id: str
    fork_run_id: str
    claim_id: str
    high_water: int
    abandoned_operation_id: str
    actor: str
    note: str
    forked_at: int
    created: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "sourceRunId": self.source_run_id,
            "forkRunId": self.fork_run_id,
            "claimId": self.claim_id,
            "highWater": self.high_water,
            "abandonedOperationId": self.abandoned_operation_id,
            "actor": self.actor,
            "note": self.note,
            "forkedAt": self.forked_at,
            "created": self.created,
        }


def _fork_report(fact: RunForked, *, created: bool) -> ForkOutcome:
    return ForkOutcome(
        fact.source_run_id,
        fact.fork_run_id,
        fact.claim_id,
        fact.high_water,
        fact.abandoned_operation_id,
        fact.actor,
        fact.note,
        int(fact.forked_at),
        created,
    )


@dataclass(slots=True)
class _ForkRecord:
    """The fork stream as an aggregate (the store's repository reads its ``version``)."""

    fact: RunForked
    version: int


def _project_fork(current: _ForkRecord | None, facts: Iterable[Any]) -> _ForkRecord | None:
    for fact in facts:
        if isinstance(fact, RunForked):
            current = _ForkRecord(fact, fact.originator_version)
    return current


def fork_high_water(events: tuple[RuntimeEvent, ...], operation_id: str) -> int:
    """How many committed events precede the call of ``operation_id`` (the kept prefix)."""
    decision = next(
        (d for d in resolve_tool_operations(events).decisions if d.operation_id == operation_id),
        None,
    )
    index = next(
        (
            i
            for i, event in enumerate(events)
            if decision is not None and event.id == decision.call_runtime_event_id
        ),
        None,
    )
    if index is None or index == 0:
        raise RunForkRefusedError(
            f"operation {operation_id} has no call with a committed prefix before it",
            code="fork_point_invalid",
            detail={"operationId": operation_id},
        )
    return index


#: Crash-harness failpoints (docs/reference/continuation.md#continuation-failpoints): the fork's
#: claim save (claim, seal, fork run with its start, provenance) is durable, and its execution
#: has taken the fork at the owner's next epoch, its provider not yet called.
AFTER_FORK_COMMITTED = "fork.after_fork_committed"
AFTER_FORK_TAKEN = "fork.after_taken_for_execution"


class RunForks:
    """The operator fork (see module docstring)."""

    def __init__(
        self,
        claims: Claims,
        store: RunStore,
        id_factory: Callable[[], str],
        telemetry: Telemetry,
        tool_runtime: ToolRuntime,
        end_source: Callable[[str], bool] | None = None,
    ) -> None:
        self._tool_runtime = tool_runtime
        self._end_source = end_source
        self._claims = claims
        self._ledger = claims.ledger
        self._store = store
        self._ids = id_factory
        self._telemetry = telemetry

    def fork_run(
        self, run_id: str, *, before_operation: str, actor: str, note: str = ""
    ) -> ForkOutcome:
        """Fork ``run_id`` before the call of ``before_operation``; a refusal raises
        :class:`RunForkRefusedError` (or ``operator_action_invalid``) and writes nothing."""
        if not isinstance(actor, str) or not actor.strip() or not isinstance(note, str):
            raise CodecInputError(
                "a fork needs an actor and a text note", code="operator_action_invalid"
            )
        # a command: the source is sealed at the version its checks below saw (ADR 0021)
        attributes = {RUN_ID: run_id, OPERATION_ID: before_operation}
        origin = lambda: (self._ledger.trace_context(run_id),)  # noqa: E731 - read when traced
        with telemetry.span(FORK_SPAN, attributes, links=origin) as span, self._ledger.command():
            outcome = self._fork(run_id, before_operation, actor, note)
            span.set(TARGET_RUN_ID, outcome.fork_run_id)
            span.set(CLAIM_ID, outcome.claim_id)
        failpoints.hit(AFTER_FORK_COMMITTED)
        return outcome

    def _fork(self, run_id: str, before_operation: str, actor: str, note: str) -> ForkOutcome:
        self._end_awaiting_source(run_id)
        header = self._ledger.get_run_header(run_id)
        source = self._ledger.load_run(run_id)
        high_water = fork_high_water(source.events, before_operation)
        boundary = source_boundary(self._replay(header, source, high_water))
        existing = self._existing(boundary, before_operation, actor, note)
        if existing is not None:
            return existing
        if source.sealed_by is not None:
            raise RunForkRefusedError(
                f"run {run_id} is already the source of claim {source.sealed_by}",
                code="fork_conflict",
                detail={"claimId": source.sealed_by},
            )
        target = ContinuationTarget(self._ids(), self._ids(), self._ids())
        fact = RunForked(
            originator_id=fork_stream_id(boundary.claim_id),
            originator_version=1,
            claim_id=boundary.claim_id,
            source_run_id=run_id,
            fork_run_id=target.run_id,
            high_water=high_water,
            abandoned_operation_id=before_operation,
            actor=actor,
            note=note,
            forked_at=self._ledger.now_ms(),
        )
        self._claims.admit(
            header,
            source,
            boundary,
            target,
            workspace_identity=header.workspace_identity or "",
            conflict=lambda: RunForkRefusedError(
                f"another writer claimed run {run_id} first",
                code="fork_conflict",
                detail={"claimId": boundary.claim_id},
            ),
            provenance=(fact,),
        )
        self._emit(header.session_id, fact)
        return _fork_report(fact, created=True)

    def _end_awaiting_source(self, run_id: str) -> None:
        """A source that recovery left awaiting the operator (not ended, ADR 0019 amendment)
        is ended first, as recovery used to end it; a source whose owner is live is refused
        ``fork_conflict`` (``detail.reason: source_live``), nothing written."""
        source = self._ledger.load_run(run_id)
        if source.header.is_terminal or source.sealed_by is not None:
            return
        if self._end_source is None or not self._end_source(run_id):
            raise RunForkRefusedError(
                f"run {run_id} is still live: stop its process (or wait for its lease), then fork",
                code="fork_conflict",
                detail={"runId": run_id, "reason": "source_live"},
            )

    def execute_fork(
        self,
        fork_run_id: str,
        provider: Provider,
        *,
        system_prompt: str | None = None,
        history_turns: int | None = None,
    ) -> ContinuationOutcome:
        """Run a fork that holds only its start through the continuation executor's agent loop,
        with the kept prefix (recomputed, and checked against the digest its start recorded)
        as replay, after the session history of the forked turn (ADR 0038: what that turn was
        shown). ``fork_not_pending`` if it is no fork, already ran or is being executed;
        nothing is written.

        The check and the takeover (``_take_for_execution``: this process becomes the fork's one
        executor in one save, also against another process) hold the store's command lock; the
        agent loop does not (each of its commands takes it for itself, a provider call or a tool
        never holds it)."""
        executor = ContinuationExecutor(
            self._claims,
            None,
            self._telemetry,
            self._tool_runtime,
            system_prompt=system_prompt,
            history_turns=checked_history_turns(history_turns),
        )
        header, replay, source_run_id, history = self._take_pending(fork_run_id, executor)
        failpoints.hit(AFTER_FORK_TAKEN)
        return executor.run_admitted(
            header,
            replay.runtime_context,
            provider,
            source_run_id=source_run_id,
            tool_names=tuple(self._tool_runtime.tools),
            history=history,
        )

    def _take_pending(
        self, fork_run_id: str, executor: ContinuationExecutor
    ) -> tuple[RunHeader, CompositeReplay, str, tuple[RuntimeEvent, ...]]:
        """The fork's header, its replay, its source and its session history, once it is
        proven waiting to run and taken for execution (see ``execute_fork``)."""
        with self._ledger.command():
            header = self._ledger.get_run_header(fork_run_id)
            edge = header.continuation_source
            fact = (
                self._fork_fact(edge.claim_id) if isinstance(edge, ContinuationSourceV2) else None
            )
            events = self._ledger.read_run_events(fork_run_id)
            if (
                not isinstance(edge, ContinuationSourceV2)
                or fact is None
                or header.status != "running"
                or len(events) != 1
            ):
                raise RunForkRefusedError(
                    f"run {fork_run_id} is not a fork waiting to run",
                    code="fork_not_pending",
                    detail={"runId": fork_run_id},
                )
            source = self._ledger.load_run(fact.source_run_id)
            replay = self._replay(source.header, source, fact.high_water)
            if replay.manifest_digest != edge.replay_manifest_digest:
                raise RunForkRefusedError(
                    f"the prefix of {fact.source_run_id} no longer replays as forked",
                    code="fork_replay_blocked",
                    detail={"reason": "runtime_lineage_replay_mismatch"},
                )
            history = executor.history_of(header.session_id, fork_run_id, replay.runtime_context)
            self._take_for_execution(fork_run_id)
            return header, replay, fact.source_run_id, history

    def _take_for_execution(self, fork_run_id: str) -> None:
        """Make this process the fork's one executor before its provider is called: the owner's
        next epoch, saved at the run's next version (ADR 0021's takeover), so of two processes
        executing the same fork the store lets one save it and the other is refused
        ``fork_not_pending`` (``detail.reason: execution_started``) with nothing written and no
        provider called. A fork whose epoch already moved on was taken by an execution (or by
        recovery) that did not finish: it is ended (``maka-es end-run``), not run twice."""
        ownership = self._ledger.ownership
        run = self._ledger.load_run(fork_run_id)
        owner = run.owner
        if ownership is None or owner is None:
            return  # a fork written before run ownership: nothing to take (ADR 0021)

        def taken() -> RunForkRefusedError:
            return RunForkRefusedError(
                f"fork {fork_run_id} is already being executed (owner epoch moved on)",
                code="fork_not_pending",
                detail={"runId": fork_run_id, "reason": "execution_started"},
            )

        if owner.epoch > 1:
            raise taken()
        fact = decide_take_over(
            fork_run_id,
            owner,
            run.version,
            host_id=ownership.host_id,
            taken_at=self._ledger.now_ms(),
        )
        self._store.commit([fact], conflict=taken)
        ownership.hold(fork_run_id, fact.epoch)

    def _replay(self, header: Any, source: Run, high_water: int) -> CompositeReplay:
        """The composite replay of the source's lineage pinned at the fork point."""
        reader = RunReader(
            self._ledger.get_run_header, self._ledger.read_run_events, self._ledger.list_runs
        )
        try:
            lineage = read_lineage(reader, header, source.events[:high_water])
            replay = build_composite_replay(lineage.segments)
        except (LineagePark, CodecInputError) as exc:
            reason = getattr(exc, "code", None) or "prefix_invalid"
            raise RunForkRefusedError(
                f"the prefix cannot be replayed: {reason}",
                code="fork_replay_blocked",
                detail={"reason": reason},
            ) from None
        if not replay.replayable:
            raise RunForkRefusedError(
                f"the prefix cannot be replayed: {replay.blocked_reason}",
                code="fork_replay_blocked",
                detail={"reason": replay.blocked_reason},
            )
        return replay

    def provenance(self, claim_id: str) -> ForkOutcome | None:
        """The fork recorded under ``claim_id`` (``created=False``: it was read, not made), or
        ``None`` when that claim is an ordinary continuation: how a reader tells the two apart."""
        fact = self._fork_fact(claim_id)
        return None if fact is None else _fork_report(fact, created=False)

    def _fork_fact(self, claim_id: str) -> RunForked | None:
        record = self._store.load(fork_stream_id(claim_id), _project_fork)
        return None if record is None else record.fact

    def _existing(
        self, boundary: SourceBoundary, operation_id: str, actor: str, note: str
    ) -> ForkOutcome | None:
        """The same fork again is ``created=False``; any other claim of it is a conflict."""
        if not self._claims.claim_exists(boundary.claim_id):
            return None
        fact = self._fork_fact(boundary.claim_id)
        if fact is not None and (fact.abandoned_operation_id, fact.actor, fact.note) == (
            operation_id,
            actor,
            note,
        ):
            return _fork_report(fact, created=False)
        raise RunForkRefusedError(
            f"boundary {boundary.claim_id} is already claimed",
            code="fork_conflict",
            detail={"claimId": boundary.claim_id},
        )

    def _emit(self, session_id: str, fact: RunForked) -> None:
        """Telemetry is best-effort: an actor that is not a telemetry identity drops it."""
        try:
            event = RunForkedEvent(
                session_id=session_id,
                source_run_id=fact.source_run_id,
                fork_run_id=fact.fork_run_id,
                operation_id=fact.abandoned_operation_id,
                actor=fact.actor,
            )
        except ValidationError:
            return
        self._telemetry.emit(event)


# === end a start-only run whose process is gone ===================================================


@dataclass(frozen=True, slots=True)
class EndRunOutcome:
    """What ``end_start_only_run`` wrote: recovery's terminal of ``run_id``."""

    run_id: str
    claim_id: str | None
    recovery_reason: str
    taken_over_from: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "claimId": self.claim_id,
            "recoveryReason": self.recovery_reason,
            "takenOverFrom": self.taken_over_from,
            "ended": True,
        }


def _check_endable(claims: Claims, run: Run) -> None:
    """Refuse (typed, before any write) a run this command may not end."""
    run_id = run.run_id
    if run.terminal_event is not None:
        raise RunEndRefusedError(
            f"run {run_id} already ended",
            code="run_already_ended",
            detail={"runId": run_id},
        )
    if run.sealed_by is not None or not (
        run.high_water == 1 and is_bare_continuation_start(run.header, run.events)
    ):
        raise RunEndRefusedError(
            f"run {run_id} is no continuation or fork holding only its start",
            code="run_not_start_only",
            detail={"runId": run_id, "committedEvents": run.high_water},
        )
    owner, ownership = run.owner, claims.ledger.ownership
    if owner is None or ownership is None:
        raise RunEndRefusedError(
            f"run {run_id} records no owner",
            code="run_owner_unknown",
            detail={"runId": run_id},
        )
    lease = ownership.lease(owner.host_id)
    if lease is not None and lease.is_live(claims.ledger.now_ms()):
        raise RunEndRefusedError(
            f"run {run_id} is owned by host {owner.host_id}, whose lease is live",
            code="run_owner_live",
            detail={
                "runId": run_id,
                "ownerHostId": owner.host_id,
                "leaseExpiresAt": int(lease.expires_at),
            },
        )


def end_start_only_run(claims: Claims, run_id: str) -> EndRunOutcome:
    """End ``run_id`` with recovery's terminal (see module docstring)."""
    ledger = claims.ledger
    _check_endable(claims, ledger.load_run(run_id))
    try:
        repairs = StartupRecovery(claims).run([run_id], []).repairs
    except STORE_FAULTS:
        raise
    except MakaError:
        if ledger.load_run(run_id).terminal_event is None:
            raise
        repairs = ()  # another process wrote the terminal between our check and our write
    ended = next((r for r in repairs if r.kind == "start_only_ended"), None)
    if ended is None:
        raise RunEndRefusedError(
            f"run {run_id} was ended, or taken, by another process first",
            code="run_already_ended",
            detail={"runId": run_id, "reason": "ending_elsewhere"},
        )
    return _end_run_report(ledger.load_run(run_id), ended, repairs)


def _end_run_report(run: Run, ended: Repair, repairs: tuple[Repair, ...]) -> EndRunOutcome:
    taken = next((r for r in repairs if r.kind == "owner_taken_over"), None)
    start = start_fact(run)
    return EndRunOutcome(
        run.run_id,
        None if start is None else start.claim_id,
        str(ended.detail.get("recoveryReason", "")),
        None if taken is None else str(taken.detail.get("previousHostId")),
    )


def operator_commands(
    run_id: str, operation_ids: tuple[str, ...], *, attestable: bool
) -> tuple[str, ...]:
    """The ``maka-es`` commands that settle each undecided operation (docs/cli.md#repair): an
    attestation while the run is not ended (a run sealed by its terminal refuses one,
    ``run_sealed``, ADR 0022), and a fork before the call in any case."""
    commands: list[str] = []
    for op in operation_ids:
        run, quoted = shlex.quote(run_id), shlex.quote(op)
        if attestable:
            commands += [
                f"maka-es attest {run} {quoted} --applied --result RESULT --actor WHO",
                f"maka-es attest {run} {quoted} --not-applied --actor WHO",
            ]
        commands.append(f"maka-es fork {run} --before {quoted} --actor WHO")
    return tuple(commands)
