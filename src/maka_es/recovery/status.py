"""Recovery status of every run: a persisted read model kept up to date from the notification log.

Why: startup recovery (docs/reference/continuation.md#startup-recovery) must find the runs that need
it: non-terminal runs, runs whose terminal event is durable but whose header lags, claimed
continuations whose target never started, and live continuation starts. Finding them by replaying
every ledger makes each start cost the whole store's history. Instead
:class:`RecoveryStatusProjector` keeps one :class:`RunRecoveryStatus` row per run in a
:class:`RecoveryStatusStore`, and every catch-up touches only the runs that changed since the last
one.

How a catch-up works (ADR 0012: eventsourcing's ``ProjectionRunner`` does not support SQLite):

1. read the notifications after the store's tracking position up to the log's end as it was
   when the batch began, one page at a time;
2. find the runs they affect: ``RunCreated`` names its run (and teaches the store which stream
   is that run's); every other run-stream fact is mapped to its run through that stream map;
   ``ContinuationClaimed`` affects its target and its source;
3. recompute the rows of exactly those runs from the application's current state, loading
   each run ONCE per batch however many pages its facts fill (each row is a pure function of
   one run's committed facts and the claims naming it; the resume verdict comes from the
   resolution the Run already tracks);
4. write the rows, the new stream links and claims, and the new position in ONE store
   transaction, compare-and-set on the position the batch started from.

A catch-up therefore costs one pass over the new notifications plus one load per run they
touch: linear in what was written since the last one (ADR 0012), where recomputing per page
made a long run cost its history once per page (quadratic).

Why rows are recomputed from current state rather than folded from the notifications: a row is
then always at least as new as the position says, a later notification for the same run
recomputes it again, and incremental maintenance equals a rebuild from scratch by construction
(the tests check it). Why compare-and-set: two projectors on one file must not let an older
batch overwrite rows a newer batch already wrote; the loser simply continues from the winner's
position.

``cyclic_gc_paused`` (the plan's, ``resume/plan.py``) pauses the cyclic garbage collector while
a bulk read builds many objects
(ADR 0045). Why: reading a long run builds a few objects per event, all kept alive, none in a cycle.
CPython's collector runs a pass every 700 net allocations and a full pass whenever the
long-lived objects grew by a quarter, each scanning what is already held, so a 100k-event read
spent about 40% of its time in collections that free nothing, and grew faster than the run.
Reference counting still frees everything acyclic during the pause; a cycle made meanwhile is
collected by the first pass after it.

Process-wide, as the collector is: the first caller to pause remembers whether it was on, the
last one to leave restores that; nested and concurrent pauses (threads) are counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeVar
from uuid import UUID

from eventsourcing.persistence import Notification

from maka_es.continuation.claims import ContinuationClaim
from maka_es.errors import RunNotFoundError, StoreCorruptionError
from maka_es.ledger.model.facts import (
    ContinuationClaimed,
    OperationAttested,
    RunCreated,
    RunHeaderUpdated,
    RunOwnerTaken,
    RunSealed,
    RuntimeEventRecorded,
    StoredFact,
    ToolMetadataRecorded,
    run_stream_id,
)
from maka_es.ledger.model.run import Run
from maka_es.recovery.model.status_store import (
    MISSING_HEADER_STATUS,
    ClaimState,
    RecoveryStatusConflictError,
    RecoveryStatusStore,
    RunRecoveryStatus,
    needs_attention_for,
)
from maka_es.resume.plan import cyclic_gc_paused, tracked_resume_verdict
from maka_es.wire.run_header import header_matches_terminal

__all__ = [
    "ClaimState",
    "RecoveryStatusConflictError",
    "RecoveryStatusProjector",
    "RecoveryStatusStore",
    "RunRecoveryStatus",
]


T = TypeVar("T")


class RecoveryStatusSource(Protocol):
    """What the projector reads: the notification log, and one run or claim at a time."""

    def max_notification_id(self) -> int: ...

    def select_notifications(self, start: int, limit: int) -> Sequence[Notification]: ...

    def to_fact(self, notification: Notification) -> StoredFact: ...

    def load_run(self, run_id: str) -> Run: ...

    def read_run(self, run_id: str, view: Callable[[Run], T]) -> T:
        """``view`` of the run on a state no command changes while it runs."""
        ...

    def get_claim(self, claim_id: str) -> ContinuationClaim | None: ...


#: Notifications per read of the log (a batch, one read-model transaction, spans many pages).
DEFAULT_PAGE_SIZE: Final = 2000

#: Facts of a run stream that change a run's row, identified by their stream only.
_RUN_STREAM_TOPICS: Final = frozenset(
    {
        RuntimeEventRecorded.TOPIC,
        RunHeaderUpdated.TOPIC,
        RunSealed.TOPIC,
        ToolMetadataRecorded.TOPIC,
        OperationAttested.TOPIC,
        RunOwnerTaken.TOPIC,
    }
)


@dataclass
class _Batch:
    """What one catch-up batch of notifications (one read-model transaction) means for the
    read model."""

    end: int  # the last notification read (the position the batch commits)
    count: int = 0  # notifications read
    affected: dict[str, None] = field(default_factory=dict)  # run ids, first-affected order
    stream_links: dict[UUID, str] = field(default_factory=dict)  # created in this batch
    claim_targets: dict[str, str] = field(default_factory=dict)  # claim id -> target run id
    known: dict[UUID, str] = field(default_factory=dict)  # linked by earlier batches
    looked_up: set[UUID] = field(default_factory=set)  # streams already asked of the store
    introduced: set[UUID] = field(default_factory=set)  # run streams whose RunCreated was read

    def touch(self, run_id: str) -> None:
        self.affected.setdefault(run_id, None)


def _stream_id(notification: Notification) -> UUID:
    originator_id = notification.originator_id
    return originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))


class RecoveryStatusProjector:
    """Maintains a :class:`RecoveryStatusStore` from ``source``'s notification log (see module
    docstring). Thread-safe within one process; several processes may share one SQLite store
    (the position's compare-and-set arbitrates)."""

    def __init__(
        self,
        source: RecoveryStatusSource,
        store: RecoveryStatusStore,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.source = source
        self.store: RecoveryStatusStore = store
        self.page_size = page_size
        self._lock = threading.Lock()

    # -- maintenance ------------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Process every notification after the store's position; return how many this call
        committed (0 when the read model was already current).

        One batch spans the log from the position to its end as it was when the batch began:
        each run it touches is loaded once, however many pages its facts fill, so a catch-up is
        linear in what was written (ADR 0012). Facts written meanwhile go into the next batch.
        The cyclic collector is paused while a batch is read and its rows computed.
        """
        processed = 0
        with self._lock:
            while True:
                start = self.store.position()
                end = self.source.max_notification_id()
                if end <= start:
                    return processed
                with cyclic_gc_paused():  # a bulk read of facts (ADR 0045)
                    batch = self._scan(start, end)
                    if batch.count == 0:
                        return processed
                    rows = self._recompute(batch)
                try:
                    self.store.commit(
                        rows,
                        batch.stream_links,
                        batch.end,
                        claim_targets=batch.claim_targets,
                        expected_position=start,
                    )
                except RecoveryStatusConflictError:
                    continue  # another projector moved on; continue from its position
                processed += batch.count

    def rebuild(self) -> int:
        """Forget the read model and rebuild it from the first notification."""
        with self._lock:
            self.store.clear()
        return self.catch_up()

    def _scan(self, start: int, end: int) -> _Batch:
        """Read the notifications in ``(start, end]``, one page at a time, into one batch."""
        batch = _Batch(end=start)
        while batch.end < end:
            page = [
                notification
                for notification in self.source.select_notifications(batch.end + 1, self.page_size)
                if notification.id <= end
            ]
            if not page:
                break
            self._read_page(page, batch)
            batch.end = page[-1].id
            batch.count += len(page)
        return batch

    def _read_page(self, page: Sequence[Notification], batch: _Batch) -> None:
        """Add the runs a page affects, and the stream links and claims it introduces, to
        ``batch`` (streams linked by earlier batches are looked up in the store once)."""
        unknown: set[UUID] = set()
        claims: dict[int, ContinuationClaimed] = {}
        for notification in page:
            if notification.topic == RunCreated.TOPIC:
                fact = self.source.to_fact(notification)
                assert isinstance(fact, RunCreated)
                batch.stream_links[fact.originator_id] = str(fact.header["runId"])
            elif notification.topic in _RUN_STREAM_TOPICS:
                unknown.add(_stream_id(notification))
            elif notification.topic == ContinuationClaimed.TOPIC:
                fact = self.source.to_fact(notification)
                assert isinstance(fact, ContinuationClaimed)
                claims[notification.id] = fact
                unknown.add(run_stream_id(fact.boundary.run_id))
        unknown -= batch.stream_links.keys() | batch.known.keys() | batch.looked_up
        if unknown:
            found = self.store.stream_run_ids(unknown)
            batch.looked_up |= unknown
            batch.known.update(found)
            batch.introduced.update(found)  # run streams created before this batch
        for notification in page:
            self._touch(notification, batch, claims)

    def _touch(
        self, notification: Notification, batch: _Batch, claims: dict[int, ContinuationClaimed]
    ) -> None:
        topic = notification.topic
        if topic == RunCreated.TOPIC:
            batch.introduced.add(_stream_id(notification))
            batch.touch(batch.stream_links[_stream_id(notification)])
        elif topic in _RUN_STREAM_TOPICS:
            stream_id = _stream_id(notification)
            run_id = batch.stream_links.get(stream_id) or batch.known.get(stream_id)
            if run_id is None:
                raise StoreCorruptionError(
                    f"notification {notification.id} ({topic}) belongs to stream "
                    f"{stream_id}, which no RunCreated introduced; rebuild the read model",
                    detail={"notificationId": notification.id, "streamId": str(stream_id)},
                )
            batch.touch(run_id)
        elif topic == ContinuationClaimed.TOPIC:
            claim = claims[notification.id]
            target = str(claim.target["runId"])
            batch.claim_targets.setdefault(claim.claim_id, target)
            batch.touch(target)
            source = claim.boundary.run_id
            # Only a source whose RunCreated came before the claim: a source that did not
            # exist yet gets its row from its own RunCreated, so the order in which rows
            # first appear does not depend on how the log was paged.
            if run_stream_id(source) in batch.introduced:
                batch.touch(source)

    def _recompute(self, batch: _Batch) -> list[RunRecoveryStatus]:
        """Fresh rows for the affected runs only (a run that does not exist and is not a
        claimed target, e.g. the unknown source of a hand-made claim, has no row)."""
        claims = self.store.claim_ids_for(batch.affected)
        for claim_id, target in batch.claim_targets.items():
            claims.setdefault(target, claim_id)  # stored claims are older: they win
        rows: list[RunRecoveryStatus] = []
        for run_id in batch.affected:
            row = self.compute_status(run_id, claims.get(run_id))
            if row is not None:
                rows.append(row)
        return rows

    def compute_status(self, run_id: str, claim_id: str | None) -> RunRecoveryStatus | None:
        """The row of one run, from its committed facts (one aggregate load, no other run).

        ``claim_id`` is the claim whose target the run is (``None``: not a target).
        """
        try:
            return self.source.read_run(run_id, lambda run: status_of_run(run, claim_id))
        except RunNotFoundError:
            return None if claim_id is None else self._missing_target(run_id, claim_id)

    def _missing_target(self, run_id: str, claim_id: str) -> RunRecoveryStatus:
        claim = self.source.get_claim(claim_id)
        if claim is None:
            raise StoreCorruptionError(
                f"claim {claim_id} is in the read model but not in the event store",
                detail={"claimId": claim_id, "runId": run_id},
            )
        return RunRecoveryStatus(
            run_id=run_id,
            session_id=str(claim.target.get("sessionId", claim.boundary.session_id)),
            header_status=MISSING_HEADER_STATUS,
            terminal_event=False,
            header_matches_terminal=False,
            resume_disposition=None,
            resume_reasons=(),
            unsettled_operations=0,
            claim_state="unstarted",
            claim_id=claim_id,
            sealed_by=None,
            high_water=0,
            needs_attention=True,
        )

    def close(self) -> None:
        """Release the store (its SQLite connection, if any)."""
        self.store.close()

    # -- queries ----------------------------------------------------------------------------------

    def status(self, run_id: str, *, catch_up: bool = True) -> RunRecoveryStatus | None:
        """The row of ``run_id`` (after catching up, unless told not to)."""
        if catch_up:
            self.catch_up()
        return self.store.get(run_id)

    def needing_attention(self, *, catch_up: bool = True) -> list[RunRecoveryStatus]:
        """The runs startup recovery must look at (after catching up, unless told not to)."""
        if catch_up:
            self.catch_up()
        return self.store.needing_attention()

    def all(self, *, catch_up: bool = True) -> list[RunRecoveryStatus]:
        """Every row, in the order runs first appeared (after catching up, unless told not to)."""
        if catch_up:
            self.catch_up()
        return self.store.all()


def status_of_run(run: Run, claim_id: str | None) -> RunRecoveryStatus:
    """The recovery status of a loaded run (pure: a function of the run and its claim).

    ``resume_disposition`` / ``resume_reasons`` are those of ``build_resume_plan(run.events)``,
    decided from the resolution the Run already tracks (``tracked_resume_verdict``), which
    reads the run's events only when that resolution does not decide them: a run restored
    from a snapshot is caught up without reading its history (ADR 0012, ADR 0032)."""
    header = run.header
    terminal = run.terminal_event
    high_water = run.high_water
    matches = terminal is not None and header_matches_terminal(header, terminal)
    # the Run keeps the resolver's fold: no second resolution of the whole ledger (ADR 0012)
    disposition, reasons = tracked_resume_verdict(run.resolution(), lambda: run.events)
    claim_state: ClaimState
    if claim_id is None:
        claim_state = "none"
    elif high_water == 0:
        claim_state = "unstarted"
    elif terminal is not None:
        claim_state = "ended"
    else:
        claim_state = "started"
    return RunRecoveryStatus(
        run_id=header.run_id,
        session_id=header.session_id,
        header_status=header.status,
        terminal_event=terminal is not None,
        header_matches_terminal=matches,
        resume_disposition=disposition,
        resume_reasons=reasons,
        unsettled_operations=sum(1 for op in run.tool_operations if op.is_unsettled),
        claim_state=claim_state,
        claim_id=claim_id,
        sealed_by=run.sealed_by,
        high_water=high_water,
        needs_attention=needs_attention_for(
            header.status, terminal is not None, matches, claim_state
        ),
    )
