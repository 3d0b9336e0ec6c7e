"""How a stream is loaded: the plain path and the three fast paths, behind one seam (ADR 0037).

Why one seam: a Run can be loaded three ways besides the plain one (eventsourcing's repository
reading every fact, each payload read strictly), and each fast way used to be a hook in the
store adapter, the mapper and the snapshot table. :class:`RunLoader` is where a load picks its
path, and :data:`FAST_PATHS_ENV` turns every fast path off at once, so the plain path is always
there to run and to compare with:

1. **own writes from memory** (ADR 0026): the facts this store just committed are folded into
   the commands' cached aggregate without reading them back, when the recorder proves nobody
   else wrote since; and the mapper hands back the fact it wrote for a byte-identical row;
2. **a verified snapshot plus its tail** (ADR 0032): a cold Run is restored from its checked
   snapshot row and the facts after it (``adapters/run_snapshots.py``);
3. **the trusted reload** (ADR 0025): a row whose payload still hashes to its digest is parsed
   once and its call's arguments are not hashed again; the mapper validates a row in one parse.

With the fast paths off (``MAKA_ES_FAST_PATHS=n`` in the application's environment), the store
commits through the recorder's ``insert_events`` (eventsourcing's save path for facts, not the
dedicated writer of ADR 0033), writes and reads no snapshot, keeps no own facts, and its mapper
decodes every row generically and marks each ``RuntimeEventRecorded`` to be read strictly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, Repository
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import StoredEvent

from maka_es.adapters.fact_rows import FactMapper
from maka_es.adapters.run_snapshots import RunSnapshots
from maka_es.adapters.sqlite import FailpointSQLiteApplicationRecorder
from maka_es.ledger.model.facts import RuntimeEventRecorded, StoredFact
from maka_es.ledger.model.run import Run, project_run

A = TypeVar("A")

#: The setting (in the application's environment) that turns every fast path off: ``n``,
#: ``no``, ``off``, ``false`` or ``0``. Anything else, or no setting, keeps them on.
FAST_PATHS_ENV: Final = "MAKA_ES_FAST_PATHS"
_OFF = frozenset({"n", "no", "off", "false", "f", "0"})

#: Committed facts kept for a later load to fold from memory, at most per stream and streams.
OWN_FACTS_PER_STREAM = 64
OWN_FACTS_STREAMS = 256


def fast_paths_enabled(setting: str | None) -> bool:
    """``False`` only for an explicit off value of :data:`FAST_PATHS_ENV`."""
    return setting is None or setting.strip().lower() not in _OFF


class PlainFactMapper(FactMapper):
    """The mapper with its fast paths off: every row decoded by the generic path, nothing
    remembered, and each ``RuntimeEventRecorded`` marked to be read strictly (no trusted
    reload, its call's arguments hashed as an unverified row's)."""

    def _remember(self, stored: StoredEvent, fact: StoredFact) -> None:
        return None

    def _written_fact(self, stored_event: StoredEvent) -> StoredFact | None:
        return None

    def _recorded_in_one_parse(self, stored_event: StoredEvent) -> RuntimeEventRecorded | None:
        return None

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[UUID]:
        fact = super().to_domain_event(stored_event)
        if isinstance(fact, RuntimeEventRecorded):
            fact.read_strictly()
        return fact


class RunLoader:
    """Loads streams for :class:`~maka_es.adapters.event_store.EventSourcedRunStore`.

    ``fast_paths=False`` is the plain loader: eventsourcing's repository folds every fact of
    the stream (its cache fast-forwarded by a query), nothing else. Either loader gives the
    same answers and the same next decisions (``tests/integration/store/test_load_paths.py``).
    """

    def __init__(self, app: Application[UUID], *, fast_paths: bool) -> None:
        self._app = app
        self.fast_paths = fast_paths
        #: Run snapshots (ADR 0032); ``None`` for the in-memory store and the plain loader.
        self.snapshots = RunSnapshots.for_app(app) if fast_paths else None
        #: Facts this store committed that the cached aggregate has not folded yet (ADR 0026).
        self._own_facts: dict[UUID, list[RuntimeEventRecorded]] = {}
        self._own_facts_lock = threading.Lock()
        self._keeps_own_facts = fast_paths and isinstance(
            app.recorder, FailpointSQLiteApplicationRecorder
        )

    def load_run(self, repository: Repository[UUID], stream_id: UUID) -> Run | None:
        """The Run of ``stream_id``: from memory, from a verified snapshot plus its tail, or
        folded from its first fact, whichever the proofs allow (``None``: no such run)."""
        snapshots = self.snapshots
        cold = snapshots is not None and not snapshots.cached(stream_id, repository.cache)
        run = snapshots.restore(stream_id, repository.cache) if snapshots and cold else None
        if run is None:
            projector = snapshots.counting(project_run) if snapshots and cold else project_run
            run = self.load(repository, stream_id, projector)
        if run is not None and snapshots is not None:
            snapshots.after_load(run)
        return run

    def load(
        self,
        repository: Repository[UUID],
        stream_id: UUID,
        projector: Callable[[A | None, Iterable[Any]], A | None],
    ) -> A | None:
        """``stream_id`` from ``repository`` (its cached aggregate fast-forwarded); the facts
        this store committed are folded from memory only into the commands' cache."""
        if repository is self._app._repository:
            folded = self._fold_own_facts(stream_id, projector)
            if folded is not None:
                return folded
        try:
            aggregate = repository.get(stream_id, projector_func=projector)  # type: ignore[type-var]
        except AggregateNotFoundError:
            return None
        except BaseException:
            # a fold that failed part-way must not stay cached half-applied
            if repository.cache is not None:
                with contextlib.suppress(KeyError):
                    repository.cache.get(stream_id, evict=True)
            raise
        return cast(A, aggregate)

    def _fold_own_facts(
        self, stream_id: UUID, projector: Callable[[A | None, Iterable[Any]], A | None]
    ) -> A | None:
        """The cached aggregate brought up to date from the facts this store committed, when
        the store proves nobody else has written since (ADR 0026); ``None``: read the store.

        The proof: the facts directly follow the cached version, and the recorder's
        :class:`~maka_es.adapters.sqlite.OwnCommitWatch` says they are the stream's head and
        no other connection committed since. Only ``RuntimeEventRecorded`` facts are folded
        this way; their fold reads the same payload text a store read would give.
        """
        with self._own_facts_lock:
            facts = self._own_facts.pop(stream_id, None)
        recorder = self._app.recorder
        cache = self._app._repository.cache
        if cache is None or not isinstance(recorder, FailpointSQLiteApplicationRecorder):
            return None
        if not facts:
            return self._cached_if_quiet(stream_id) if self._keeps_own_facts else None
        first = facts[0].originator_version
        if any(f.originator_version != first + i for i, f in enumerate(facts)):
            return None
        if (
            recorder.own_commits.quiet_head(recorder.datastore, stream_id)
            != facts[-1].originator_version
        ):
            return None
        return self._fold_cached(stream_id, first, facts, projector)

    def _cached_if_quiet(self, stream_id: UUID) -> Any:
        """The cached aggregate as it is, when it stands at the version this process last
        wrote to the stream and the recorder proves no other connection committed since (the
        proof of the fold above, with no facts left to fold, ADR 0046); ``None``: read the
        store. Why: a command after a read that folded this process's last commit (the agent
        loop reads its run before each model turn) asked the store for rows nobody wrote."""
        recorder = self._app.recorder
        assert isinstance(recorder, FailpointSQLiteApplicationRecorder)  # checked by the caller
        cache = self._app._repository.cache
        assert cache is not None  # checked by the caller
        try:
            aggregate = cache.get(stream_id)
        except KeyError:
            return None
        version = getattr(aggregate, "version", None)
        if version is None or recorder.own_commits.quiet_head(recorder.datastore, stream_id) != (
            version
        ):
            return None
        return aggregate

    def _fold_cached(
        self,
        stream_id: UUID,
        first: int,
        facts: list[RuntimeEventRecorded],
        projector: Callable[[A | None, Iterable[Any]], A | None],
    ) -> A | None:
        """``facts`` folded into the cached aggregate if it stands at ``first - 1``."""
        repository = self._app._repository
        cache = repository.cache
        assert cache is not None  # checked by the caller
        lock = repository._use_fastforward_lock(stream_id)
        try:
            with lock:
                try:
                    aggregate = cache.get(stream_id)
                except KeyError:
                    return None
                if getattr(aggregate, "version", None) != first - 1:
                    return None
                try:
                    return projector(cast(A, aggregate), facts)
                except BaseException:
                    self.evict(stream_id)
                    raise
        finally:
            repository._disuse_fastforward_lock(stream_id)

    def committed(self, facts: Sequence[StoredFact]) -> None:
        """After a commit: keep its ``RuntimeEventRecorded`` facts for the next load of the
        commands' cache, and snapshot a run created larger than ``SNAPSHOT_EVERY``."""
        if self._keeps_own_facts:
            self._remember_own_facts(facts)
        if self.snapshots is not None:
            self.snapshots.after_commit(facts)

    def _remember_own_facts(self, facts: Sequence[StoredFact]) -> None:
        with self._own_facts_lock:
            for fact in facts:
                kept = self._own_facts.get(fact.originator_id)
                if not isinstance(fact, RuntimeEventRecorded):
                    self._own_facts.pop(fact.originator_id, None)
                elif kept is None:
                    self._own_facts[fact.originator_id] = [fact]
                elif len(kept) < OWN_FACTS_PER_STREAM:
                    kept.append(fact)
                else:
                    del self._own_facts[fact.originator_id]
            while len(self._own_facts) > OWN_FACTS_STREAMS:
                del self._own_facts[next(iter(self._own_facts))]

    def evict(self, *stream_ids: UUID) -> None:
        """Forget ``stream_ids``: their own facts and their commands' cached aggregates."""
        with self._own_facts_lock:
            for stream_id in stream_ids:
                self._own_facts.pop(stream_id, None)
        cache = self._app._repository.cache
        if cache is not None:
            for stream_id in stream_ids:
                with contextlib.suppress(KeyError):
                    cache.get(stream_id, evict=True)
