"""Operator fork: a new run from the last safe boundary before an uncertain call (ADR 0022).

Why a fork and not a rewrite: an operation whose outcome nobody knows (a ``never_auto_retry``
call sealed by recovery, docs/reference/tool-journal.md#recovery-modes) blocks its run for good,
and history is never rewritten. An operator who accepts to abandon that call forks: a new run
continues the source's committed prefix up to the call, exactly as a continuation would
(the same lineage pinning, composite replay and suffix trimming,
docs/reference/continuation.md#composite-replay), so the model item that issued the call and
everything after it are left out of the fork's replay; the source stays byte for byte as it is.

Why through a claim: the fork claims its boundary with ``Claims.admit`` (ONE save of the claim,
the source's seal, the fork run with its V2 start fact as event 1 and the ``RunForked``
provenance), so a fork and a continuation of the same source race on the store's uniqueness
(ADR 0010) and exactly one wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from maka_es import failpoints
from maka_es.continuation.claim import ContinuationTarget, SourceBoundary, source_boundary
from maka_es.continuation.claims import Claims
from maka_es.continuation.composite_replay import CompositeReplay, build_composite_replay
from maka_es.continuation.executor import ContinuationExecutor, ContinuationOutcome
from maka_es.continuation.existing_claims import RunReader
from maka_es.continuation.lineage import read_lineage
from maka_es.continuation.provider import Provider
from maka_es.continuation.telemetry import RunForkedEvent, Telemetry
from maka_es.errors import LineagePark, RunForkRefusedError
from maka_es.ledger.facts import RunForked, fork_stream_id
from maka_es.ledger.ownership import decide_take_over
from maka_es.ledger.ports import RunStore
from maka_es.ledger.run import Run
from maka_es.tooljournal.resolver import resolve_tool_operations
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV2, RunHeader

__all__ = ["AFTER_FORK_COMMITTED", "AFTER_FORK_TAKEN", "ForkReport", "RunForks"]

#: Crash-harness failpoints (docs/reference/continuation.md#continuation-failpoints): the fork's
#: claim save (claim, seal, fork run with its start, provenance) is durable, and its execution
#: has taken the fork at the owner's next epoch, its provider not yet called.
AFTER_FORK_COMMITTED = "fork.after_fork_committed"
AFTER_FORK_TAKEN = "fork.after_taken_for_execution"


@dataclass(frozen=True, slots=True)
class ForkReport:
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


def _report(fact: RunForked, *, created: bool) -> ForkReport:
    return ForkReport(
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
    ) -> ForkReport:
        """Fork ``run_id`` before the call of ``before_operation``; a refusal raises
        :class:`RunForkRefusedError` (or ``operator_action_invalid``) and writes nothing."""
        if not isinstance(actor, str) or not actor.strip() or not isinstance(note, str):
            raise CodecInputError(
                "a fork needs an actor and a text note", code="operator_action_invalid"
            )
        # a command: the source is sealed at the version its checks below saw (ADR 0021)
        with self._ledger.command():
            report = self._fork(run_id, before_operation, actor, note)
        failpoints.hit(AFTER_FORK_COMMITTED)
        return report

    def _fork(self, run_id: str, before_operation: str, actor: str, note: str) -> ForkReport:
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
        return _report(fact, created=True)

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
        self, fork_run_id: str, provider: Provider, *, system_prompt: str | None = None
    ) -> ContinuationOutcome:
        """Run a fork that holds only its start through the continuation executor's agent loop,
        with the kept prefix (recomputed, and checked against the digest its start recorded)
        as replay. ``fork_not_pending`` if it is no fork, already ran or is being executed;
        nothing is written.

        The check and the takeover (``_take_for_execution``: this process becomes the fork's one
        executor in one save, also against another process) hold the store's command lock; the
        agent loop does not (each of its commands takes it for itself, a provider call or a tool
        never holds it)."""
        header, replay, source_run_id = self._take_pending(fork_run_id)
        failpoints.hit(AFTER_FORK_TAKEN)
        executor = ContinuationExecutor(
            self._claims, None, self._telemetry, self._tool_runtime, system_prompt=system_prompt
        )
        return executor.run_admitted(
            header,
            replay.runtime_context,
            provider,
            source_run_id=source_run_id,
            tool_names=tuple(self._tool_runtime.tools),
        )

    def _take_pending(self, fork_run_id: str) -> tuple[RunHeader, CompositeReplay, str]:
        """The fork's header, its replay and its source, once it is proven waiting to run and
        taken for execution (see ``execute_fork``)."""
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
            self._take_for_execution(fork_run_id)
            return header, replay, fact.source_run_id

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

    def provenance(self, claim_id: str) -> ForkReport | None:
        """The fork recorded under ``claim_id`` (``created=False``: it was read, not made), or
        ``None`` when that claim is an ordinary continuation: how a reader tells the two apart."""
        fact = self._fork_fact(claim_id)
        return None if fact is None else _report(fact, created=False)

    def _fork_fact(self, claim_id: str) -> RunForked | None:
        record = self._store.load(fork_stream_id(claim_id), _project_fork)
        return None if record is None else record.fact

    def _existing(
        self, boundary: SourceBoundary, operation_id: str, actor: str, note: str
    ) -> ForkReport | None:
        """The same fork again is ``created=False``; any other claim of it is a conflict."""
        if not self._claims.claim_exists(boundary.claim_id):
            return None
        fact = self._fork_fact(boundary.claim_id)
        if fact is not None and (fact.abandoned_operation_id, fact.actor, fact.note) == (
            operation_id,
            actor,
            note,
        ):
            return _report(fact, created=False)
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
