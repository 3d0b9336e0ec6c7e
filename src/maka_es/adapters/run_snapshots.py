"""Run snapshots in a maka_es-owned table next to the ledger, on SQLite and PostgreSQL
(ADR 0032).

Why a table of our own rather than eventsourcing's snapshot store: a snapshot must be checked
against the ledger before it is used, and it is written best-effort, outside the command's
transaction; eventsourcing's snapshots are trusted as they are and would reach the projector as
a domain event. One row per run stream (the newest), holding:

* ``format``: :data:`~maka_es.ledger.model.run_snapshot.SNAPSHOT_FORMAT` when written;
* ``version``: the fact version the body covers;
* ``digest``: ``sha256`` of the body's bytes;
* ``first_digest`` / ``covered_digest``: ``sha256`` of the stored bytes of the stream's first
  fact and of the fact at ``version``, as the recorder holds them.

A load uses the row only if all four agree with what it reads (the body's bytes, and the two
facts read from the ledger in the same load); otherwise the row is ignored and the run is folded
from its first fact, which then writes a fresh row.

The body names a chain of segments (ADR 0044), each the change since the one before, each
three parts kept in ``maka_es_run_snapshots_parts`` keyed by stream and their ``sha256``: its
summary (the new event ids, their CRC index, new spines and issues), read with the body and
required to match (one missing or changed: no snapshot), and its operations and journal rows,
read when a command first needs them and used only if they hash to their digests; one missing
or changed (corruption, or another writer's snapshot dropped it) is recomputed by folding the
ledger up to the covered version: a full replay, never a wrong answer. A write adds one
segment of the change since the Run's last snapshot and drops the parts the new body no
longer names; if a part the chain names is gone, it writes one full segment instead.

Nothing here ever refuses a command: a table that is missing, a read-only store, a row that
does not parse, and a failed write all mean "no snapshot".
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import Application, Cache
from eventsourcing.persistence import ApplicationRecorder

from maka_es.adapters.sqlite import FailpointSQLiteApplicationRecorder
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import (
    RunCreated,
    RuntimeEventRecorded,
    StoredFact,
    read_recorded_event,
)
from maka_es.ledger.model.run import Run, project_run
from maka_es.ledger.model.run_snapshot import (
    SNAPSHOT_EVERY,
    SNAPSHOT_FORMAT,
    PartReader,
    RunSnapshot,
    dump_run,
    release_events,
    restore_run,
)
from maka_es.wire.events import RuntimeEvent

__all__ = ["RunSnapshots", "SnapshotRow", "SnapshotTable", "snapshot_table_for"]

RunProjector = Callable[[Run | None, Iterable[Any]], Run | None]

_log = logging.getLogger(__name__)

TABLE = "maka_es_run_snapshots"
PARTS_TABLE = "maka_es_run_snapshots_parts"

#: Folds a run's facts up to a version: how a missing or changed part is recomputed.
Replay = Callable[[UUID, int], Run | None]

_COLUMNS = "stream_id, version, format, digest, first_digest, covered_digest, body"

#: Facts read at a time while searching a stream for one event (ADR 0044).
_SEARCH_BATCH = 8

#: Digests per ``IN (...)`` list when reading parts (below every store's parameter limit).
_BATCH = 500


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SnapshotRow:
    """One stored snapshot, as read (nothing checked yet)."""

    __slots__ = ("body", "covered_digest", "digest", "first_digest", "format", "version")

    def __init__(self, row: Sequence[Any]) -> None:
        self.version = int(row[0])
        self.format = int(row[1])
        self.digest = str(row[2])
        self.first_digest = str(row[3])
        self.covered_digest = str(row[4])
        self.body = bytes(row[5])


class SnapshotTable:
    """The snapshot rows of one store, through its recorder's own datastore."""

    def __init__(self, recorder: ApplicationRecorder, *, postgres: bool) -> None:
        self._recorder = recorder
        self._datastore: Any = recorder.datastore  # type: ignore[attr-defined]
        self._postgres = postgres
        schema = getattr(self._datastore, "schema", "") if postgres else ""
        self._table = f"{schema}.{TABLE}" if schema else TABLE
        self._parts = f"{schema}.{PARTS_TABLE}" if schema else PARTS_TABLE
        #: Probe: parts recomputed by a replay (missing or not matching their digest).
        self.parts_replayed = 0
        self._mark = "%s" if postgres else "?"
        self._created = False
        #: A read-only open (SQLite ``mode=ro``, PostgreSQL ``read_only``) cannot write one:
        #: :meth:`write` then returns at once instead of dumping the run to see it refused.
        store = self._datastore.pool if not postgres else self._datastore
        self.read_only = bool(getattr(store, "read_only", False))

    # -- reading ----------------------------------------------------------------------------------

    def read(self, stream_id: UUID) -> SnapshotRow | None:
        """The stored row of ``stream_id`` (``None``: none, or the table cannot be read)."""
        sql = (
            f"SELECT version, format, digest, first_digest, covered_digest, body "
            f"FROM {self._table} WHERE stream_id = {self._mark}"
        )
        try:
            with self._datastore.transaction(commit=False) as cursor:
                cursor.execute(sql, (str(stream_id),))
                row = cursor.fetchone()
        except Exception:  # no table yet, a read-only store: no snapshot
            return None
        if row is None:
            return None
        return SnapshotRow(list(row.values()) if isinstance(row, dict) else list(row))

    def fact_digest(self, stream_id: UUID, version: int) -> str | None:
        """``sha256`` of the stored bytes of the stream's fact at ``version`` (``None``: no
        such fact)."""
        stored = self._recorder.select_events(stream_id, gt=version - 1, lte=version, limit=1)
        if not stored or stored[0].originator_version != version:
            return None
        return sha256_hex(bytes(stored[0].state))

    def read_parts(self, stream_id: UUID, digests: Sequence[str]) -> dict[str, bytes]:
        """The stored parts of ``stream_id`` among ``digests`` (missing ones left out; none at
        all if the table cannot be read)."""
        found: dict[str, bytes] = {}
        wanted = list(dict.fromkeys(digests))
        try:
            with self._datastore.transaction(commit=False) as cursor:
                for at in range(0, len(wanted), _BATCH):
                    batch = wanted[at : at + _BATCH]
                    marks = ", ".join([self._mark] * len(batch))
                    cursor.execute(
                        f"SELECT digest, data FROM {self._parts} "
                        f"WHERE stream_id = {self._mark} AND digest IN ({marks})",
                        (str(stream_id), *batch),
                    )
                    for row in cursor.fetchall():
                        digest, data = list(row.values()) if isinstance(row, dict) else row
                        found[str(digest)] = bytes(data)
        except Exception:  # no table, a read-only store: the caller replays or declines
            return {}
        return found

    def _matching(self, stream_id: UUID, digests: Sequence[str]) -> list[bytes] | None:
        """The parts ``digests`` in order, each hashing to its name (``None``: one is missing
        or changed)."""
        found = self.read_parts(stream_id, digests)
        texts = [found.get(digest) for digest in digests]
        if any(t is None or sha256_hex(t) != d for t, d in zip(texts, digests, strict=True)):
            return None
        return [t for t in texts if t is not None]

    def _one(self, stream_id: UUID, digest: str) -> bytes | None:
        """The part ``digest`` as stored (``None``: missing or changed)."""
        texts = self._matching(stream_id, [digest])
        return None if texts is None else texts[0]

    def _reader(self, stream_id: UUID, covered: int, replay: Replay) -> PartReader:
        """How a restored Run reads its parts: the summaries now and strictly (one missing or
        changed: no snapshot), the operations and journal on first use, recomputed by a
        replay up to the covered version when one is missing or changed (ADR 0044)."""

        def read(kind: str, digests: Sequence[str]) -> Sequence[bytes]:
            texts = self._matching(stream_id, digests)
            if texts is not None:
                return texts
            if kind == "summary":
                raise LookupError(f"a summary of the snapshot of {stream_id} is missing or changed")
            _log.debug("run snapshot %s of %s missing or changed: replaying", kind, stream_id)
            self.parts_replayed += 1
            run = replay(stream_id, covered)
            if run is None or run.version != covered:
                raise StoreCorruptionError(
                    f"run stream {stream_id} no longer reaches version {covered}"
                )
            return [dump_run(run, full=True).parts_of(kind)]

        return read

    def restore(self, stream_id: UUID, replay: Replay) -> Run | None:
        """The Run of the stored snapshot if it is verified against the ledger, else ``None``
        (see the module docstring). Its events are still in the ledger (``attach_history``);
        its operations and journal are read on first use, or recomputed with ``replay``."""
        row = self.read(stream_id)
        if row is None or row.format != SNAPSHOT_FORMAT or sha256_hex(row.body) != row.digest:
            return None
        if (
            self.fact_digest(stream_id, 1) != row.first_digest
            or self.fact_digest(stream_id, row.version) != row.covered_digest
        ):
            return None
        try:
            run = restore_run(
                row.body,
                stream_id,
                self._reader(stream_id, row.version, replay),
                lambda kind, digest: self._one(stream_id, digest),
            )
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, LookupError):
            return None
        return run if run.version == row.version else None

    # -- writing ----------------------------------------------------------------------------------

    def write(self, run: Run) -> RunSnapshot | None:
        """Store a snapshot of ``run`` at ``run.version``, best-effort, in a transaction of its
        own (never the command's): one segment of the change since this Run's last snapshot
        (ADR 0044). ``None``: not written, and nothing else changed."""
        if self.read_only:
            return None
        try:
            first = self.fact_digest(run.id, 1)
            covered = self.fact_digest(run.id, run.version)
            if first is None or covered is None:
                return None
            self._ensure_table()
            snapshot = dump_run(run)
            if not self._upsert(snapshot, first, covered):
                # an earlier segment is gone (another writer's snapshot replaced it): all anew
                snapshot = dump_run(run, full=True)
                if not self._upsert(snapshot, first, covered):
                    return None
        except Exception as exc:  # best-effort: a failed snapshot never fails a command
            _log.debug("run snapshot not written for %s: %s", run.id, exc)
            return None
        snapshot.stored()
        return snapshot

    def _upsert(self, snapshot: RunSnapshot, first: str, covered: str) -> bool:
        """The row and its new parts in one transaction, the run's parts it no longer names
        deleted (a reader still holding an older row then replays what it needs). ``False``
        (nothing written): a part the body names is not stored."""
        run, mark = snapshot.run, self._mark
        stream = str(run.id)
        put_part = (
            f"INSERT INTO {self._parts} (stream_id, digest, data) VALUES ({mark}, {mark}, {mark}) "
            "ON CONFLICT (stream_id, digest) DO NOTHING"
        )
        sql = (
            f"INSERT INTO {self._table} ({_COLUMNS}) VALUES ({', '.join([mark] * 7)}) "
            "ON CONFLICT (stream_id) DO UPDATE SET version = excluded.version, "
            "format = excluded.format, digest = excluded.digest, "
            "first_digest = excluded.first_digest, covered_digest = excluded.covered_digest, "
            "body = excluded.body"
        )
        body = snapshot.body
        params = (stream, run.version, SNAPSHOT_FORMAT, sha256_hex(body), first, covered, body)
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(f"SELECT digest FROM {self._parts} WHERE stream_id = {mark}", (stream,))
            stored = {
                str(next(iter(r.values())) if isinstance(r, dict) else r[0])
                for r in cursor.fetchall()
            }
            names = set(snapshot.names)
            if not names <= stored | set(snapshot.parts):
                return False
            for digest, data in snapshot.parts.items():
                if digest not in stored:
                    cursor.execute(put_part, (stream, digest, data))
            drop = f"DELETE FROM {self._parts} WHERE stream_id = {mark} AND digest = {mark}"
            for digest in stored - names:
                cursor.execute(drop, (stream, digest))
            cursor.execute(sql, params)
        return True

    def _ensure_table(self) -> None:
        if self._created:
            return
        blob = "bytea" if self._postgres else "BLOB"
        sql = (
            f"CREATE TABLE IF NOT EXISTS {self._table} (stream_id TEXT PRIMARY KEY, "
            f"version BIGINT NOT NULL, format INTEGER NOT NULL, digest TEXT NOT NULL, "
            f"first_digest TEXT NOT NULL, covered_digest TEXT NOT NULL, body {blob} NOT NULL)"
        )
        parts = (
            f"CREATE TABLE IF NOT EXISTS {self._parts} (stream_id TEXT NOT NULL, "
            f"digest TEXT NOT NULL, data {blob} NOT NULL, PRIMARY KEY (stream_id, digest))"
        )
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(sql)
            cursor.execute(parts)
        self._created = True


def snapshot_table_for(recorder: ApplicationRecorder) -> SnapshotTable | None:
    """The snapshot table of a SQLite or PostgreSQL store (``None``: in memory, no snapshots)."""
    if isinstance(recorder, FailpointSQLiteApplicationRecorder):
        return SnapshotTable(recorder, postgres=False)
    if type(recorder).__module__.startswith("maka_es.adapters.postgres"):
        return SnapshotTable(recorder, postgres=True)
    return None


class RunSnapshots:
    """How ``EventSourcedRunStore.load_run`` uses the table: restore a cold run from its
    verified snapshot plus the facts after it, and write a snapshot when a load leaves more
    than :data:`~maka_es.ledger.model.run_snapshot.SNAPSHOT_EVERY` facts folded since the last
    one."""

    def __init__(self, app: Application[UUID], table: SnapshotTable) -> None:
        self._app = app
        self.table = table
        self._snapshot_at: dict[UUID, int] = {}
        #: Probe: facts folded by cold loads of runs (from the first fact or after a snapshot).
        self.facts_folded_cold = 0

    @classmethod
    def for_app(cls, app: Application[UUID]) -> RunSnapshots | None:
        table = snapshot_table_for(app.recorder)
        return None if table is None else cls(app, table)

    def cached(self, stream_id: UUID, cache: Cache[UUID, Any] | None) -> bool:
        """``cache`` (the commands' or a reading thread's) holds the run already."""
        if cache is None:
            return False
        try:
            cache.get(stream_id)
        except KeyError:
            return False
        return True

    def counting(self, projector: RunProjector) -> RunProjector:
        """``projector``, counting the facts it folds into :attr:`facts_folded_cold`."""

        def counted(run: Run | None, facts: Iterable[Any]) -> Run | None:
            return projector(run, self._count(facts))

        return counted

    def _count(self, facts: Iterable[Any]) -> Iterator[Any]:
        for fact in facts:
            self.facts_folded_cold += 1
            yield fact

    def restore(self, stream_id: UUID, cache: Cache[UUID, Any] | None) -> Run | None:
        """The run from its verified snapshot plus the facts after it, put in ``cache`` (the
        commands' or a reading thread's); ``None``: no usable snapshot (the caller folds from
        the first fact)."""
        run = self.table.restore(stream_id, self._replay)
        if run is None:
            return None
        covered = run.version
        run.attach_history(
            lambda count: self._history(stream_id, covered, count),
            lambda position: self._event(stream_id, covered, position),
        )
        tail = self._app.events.get(originator_id=stream_id, gt=covered)
        folded = project_run(run, self._count(tail))
        assert folded is run
        self._snapshot_at[stream_id] = covered
        if cache is not None:
            cache.put(stream_id, run)
        return run

    def _replay(self, stream_id: UUID, covered: int) -> Run | None:
        """The run folded from its first fact up to ``covered`` (a part's fallback)."""
        facts = self._app.events.get(originator_id=stream_id, lte=covered)
        return project_run(None, self._count(facts))

    def _history(self, stream_id: UUID, covered: int, count: int) -> list[tuple[RuntimeEvent, str]]:
        """The first ``count`` events of a snapshot-restored run, read from the ledger (the
        trusted reload of ADR 0025 parses them)."""
        rows: list[tuple[RuntimeEvent, str]] = []
        for fact in self._app.events.get(originator_id=stream_id, lte=covered):
            if isinstance(fact, RuntimeEventRecorded) and len(rows) < count:
                rows.append((read_recorded_event(fact)[0], fact.payload))
        return rows

    def _event(self, stream_id: UUID, covered: int, position: int) -> tuple[RuntimeEvent, str]:
        """The event at 0-based ``position`` of a snapshot-restored run, and its payload, read
        alone from the ledger (ADR 0044): a binary search over the fact versions up to
        ``covered``, as events are numbered in version order (``event_seq``). Why: an exact
        retry of an older event compares that event's bytes only, not the whole history."""
        seq, low, high = position + 1, 1, covered
        while low <= high:
            middle = (low + high) // 2
            fact = self._event_fact_from(stream_id, middle, high)
            if fact is None or fact.event_seq > seq:
                high = middle - 1
            elif fact.event_seq < seq:
                low = fact.originator_version + 1
            else:
                return read_recorded_event(fact)[0], fact.payload
        raise StoreCorruptionError(f"run stream {stream_id} holds no event {seq}")

    def _event_fact_from(self, stream_id: UUID, low: int, high: int) -> RuntimeEventRecorded | None:
        """The first ``RuntimeEventRecorded`` fact at a version from ``low`` to ``high``."""
        while low <= high:
            facts = self._app.events.get(
                originator_id=stream_id, gt=low - 1, lte=high, limit=_SEARCH_BATCH
            )
            found = False
            for fact in facts:
                found = True
                if isinstance(fact, RuntimeEventRecorded):
                    return fact
                low = fact.originator_version + 1
            if not found:
                return None
        return None

    def after_load(self, run: Run) -> None:
        """Write a snapshot when more than ``SNAPSHOT_EVERY`` facts were folded since the
        last one (best-effort, in its own transaction, never the command's)."""
        if run.version - self._snapshot_at.get(run.id, 0) <= SNAPSHOT_EVERY:
            return
        # written or not (a read-only store, a fault), the next try waits for as many facts
        self._snapshot_at[run.id] = run.version
        snapshot = self.table.write(run)
        if snapshot is not None:  # the covered events stay in the ledger only (ADR 0044)
            stream_id, covered = run.id, run.version
            release_events(
                snapshot,
                lambda count: self._history(stream_id, covered, count),
                lambda position: self._event(stream_id, covered, position),
            )

    def after_commit(self, facts: Sequence[StoredFact]) -> None:
        """A run created by one commit with more than ``SNAPSHOT_EVERY`` facts (an imported
        run) gets its snapshot now, folded from the facts just written: no later load of it
        has to fold its whole history first. Other runs are snapshotted by :meth:`after_load`."""
        created = {f.originator_id for f in facts if isinstance(f, RunCreated)}
        for stream_id in created:
            own = [f for f in facts if f.originator_id == stream_id]
            if len(own) <= SNAPSHOT_EVERY:
                continue
            try:
                run = project_run(None, own)
            except Exception:  # best-effort: the next load folds and judges the stream
                continue
            if run is not None:
                self._snapshot_at[stream_id] = run.version
                self.table.write(run)
