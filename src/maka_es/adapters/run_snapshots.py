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

The body's two big lines, the scan's operations and the journal fold (most of a long run's
snapshot, and read by no plain append), are kept apart in ``maka_es_run_snapshots_parts``, keyed
by stream and their ``sha256``, which the verified body names (``split_parts``). A part is
read when a command first needs it and used only if it hashes to that digest; a part missing
or changed (corruption, or a newer snapshot of the run replaced it meanwhile) is recomputed by
folding the ledger up to the covered version: a full replay, never a wrong answer.

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
    dump_run,
    part_of,
    restore_run,
    split_parts,
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

    def read_part(self, stream_id: UUID, digest: str) -> bytes | None:
        """The stored part ``digest`` of ``stream_id`` (``None``: none, or unreadable)."""
        mark = self._mark
        sql = f"SELECT data FROM {self._parts} WHERE stream_id = {mark} AND digest = {mark}"
        try:
            with self._datastore.transaction(commit=False) as cursor:
                cursor.execute(sql, (str(stream_id), digest))
                row = cursor.fetchone()
        except Exception:  # no table, a read-only store: the caller replays
            return None
        if row is None:
            return None
        return bytes(next(iter(row.values())) if isinstance(row, dict) else row[0])

    def _verified_part(
        self, stream_id: UUID, covered: int, replay: Replay, name: str, digest: str
    ) -> bytes:
        data = self.read_part(stream_id, digest)
        if data is not None and sha256_hex(data) == digest:
            return data
        _log.debug("run snapshot part %s of %s missing or changed: replaying", name, stream_id)
        self.parts_replayed += 1
        run = replay(stream_id, covered)
        if run is None or run.version != covered:
            raise StoreCorruptionError(
                f"run stream {stream_id} no longer reaches version {covered}"
            )
        return part_of(run, name)

    def restore(self, stream_id: UUID, replay: Replay) -> Run | None:
        """The Run of the stored snapshot if it is verified against the ledger, else ``None``
        (see the module docstring). Its events are still in the ledger (``attach_history``);
        its parts are read on first use, or recomputed with ``replay``."""
        row = self.read(stream_id)
        if row is None or row.format != SNAPSHOT_FORMAT or sha256_hex(row.body) != row.digest:
            return None
        if (
            self.fact_digest(stream_id, 1) != row.first_digest
            or self.fact_digest(stream_id, row.version) != row.covered_digest
        ):
            return None
        try:
            version = row.version
            run = restore_run(
                row.body,
                stream_id,
                lambda name, digest: self._verified_part(stream_id, version, replay, name, digest),
            )
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        return run if run.version == row.version else None

    # -- writing ----------------------------------------------------------------------------------

    def write(self, run: Run) -> bool:
        """Store a snapshot of ``run`` at ``run.version``, best-effort, in a transaction of its
        own (never the command's); ``False``: not written, and nothing else changed."""
        if self.read_only:
            return False
        try:
            first = self.fact_digest(run.id, 1)
            covered = self.fact_digest(run.id, run.version)
            if first is None or covered is None:
                return False
            body, parts = split_parts(dump_run(run))
            self._ensure_table()
            self._upsert(run, body, first, covered, parts)
        except Exception as exc:  # best-effort: a failed snapshot never fails a command
            _log.debug("run snapshot not written for %s: %s", run.id, exc)
            return False
        return True

    def _upsert(
        self, run: Run, body: bytes, first: str, covered: str, parts: dict[str, bytes]
    ) -> None:
        """The row and its parts in one transaction; the run's other parts are deleted (a
        reader still holding an older row then replays the part it needs)."""
        marks = ", ".join([self._mark] * 7)
        mark = self._mark
        put_part = (
            f"INSERT INTO {self._parts} (stream_id, digest, data) VALUES ({mark}, {mark}, {mark}) "
            "ON CONFLICT (stream_id, digest) DO NOTHING"
        )
        keep = ", ".join([mark] * len(parts))
        drop_parts = (
            f"DELETE FROM {self._parts} WHERE stream_id = {mark} AND digest NOT IN ({keep})"
        )
        sql = (
            f"INSERT INTO {self._table} ({_COLUMNS}) VALUES ({marks}) "
            "ON CONFLICT (stream_id) DO UPDATE SET version = excluded.version, "
            "format = excluded.format, digest = excluded.digest, "
            "first_digest = excluded.first_digest, covered_digest = excluded.covered_digest, "
            "body = excluded.body"
        )
        params = (str(run.id), run.version, SNAPSHOT_FORMAT, sha256_hex(body), first, covered, body)
        with self._datastore.transaction(commit=True) as cursor:
            for digest, data in parts.items():
                cursor.execute(put_part, (str(run.id), digest, data))
            cursor.execute(drop_parts, (str(run.id), *parts))
            cursor.execute(sql, params)

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
        run.attach_history(lambda count: self._history(stream_id, covered, count))
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

    def after_load(self, run: Run) -> None:
        """Write a snapshot when more than ``SNAPSHOT_EVERY`` facts were folded since the
        last one (best-effort, in its own transaction, never the command's)."""
        if run.version - self._snapshot_at.get(run.id, 0) <= SNAPSHOT_EVERY:
            return
        # written or not (a read-only store, a fault), the next try waits for as many facts
        self._snapshot_at[run.id] = run.version
        self.table.write(run)

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
