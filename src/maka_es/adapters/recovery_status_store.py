"""Persistence of the recovery-status read model: one row per run, plus its tracking position.

Why a read model at all: startup recovery and run listings need to know which runs are
non-terminal, which terminal events are ahead of their headers and which claimed continuations
never started. Answering that from the ledgers means replaying every run on every start; this
store keeps one small row per run instead, maintained by the application's projector from the
event store's notification log.

Why rows and the tracking position are committed together: a projector that crashed after
writing rows but before recording how far it got would reprocess (harmless), but one that
recorded the position without the rows would silently skip facts forever. Both go into ONE
transaction, so a reader never sees one without the other (design §7: eventsourcing's
``ProjectionRunner`` does not support SQLite, hence this small store of our own).

Why the row type lives here and not in the application layer: the store must know the shape it
persists, and the layering lets infrastructure import only the domain. The application module
``maka_es.recovery.status`` re-exports it as part of its API.

The read model is *derived*: it can always be thrown away and rebuilt from the event store
(``RecoveryStatusProjector.rebuild``). A schema change therefore simply drops and recreates the
tables instead of migrating them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, cast, get_args
from uuid import UUID

from maka_es import failpoints
from maka_es.adapters.sqlite_faults import typed_store_faults
from maka_es.errors import RecoveryStatusConflictError as RecoveryStatusConflictError
from maka_es.wire.run_header import TERMINAL_RUN_STATUSES

ClaimState = Literal["none", "unstarted", "started", "ended"]
CLAIM_STATES: frozenset[str] = frozenset(get_args(ClaimState))

#: ``header_status`` of a claimed continuation target whose run does not exist yet.
MISSING_HEADER_STATUS = "missing"

#: Inside the read model's commit, after rows, stream links, claims and position were written,
#: before the transaction commits (crash tests arm it to prove the commit is atomic).
INSIDE_COMMIT_FAILPOINT = "recovery_status.commit.inside_transaction"

#: Bump when the tables change shape or a row's meaning changes: the read model is then dropped
#: and rebuilt from scratch. 2: a terminal header without a terminal event needs attention.
SCHEMA_VERSION = 2


def needs_attention_for(
    header_status: str,
    terminal_event: bool,
    header_matches_terminal: bool,
    claim_state: str,
) -> bool:
    """Whether startup recovery has something to look at (spec §4.8): the header is not
    terminal (running, lagging, or missing), a terminal header has no terminal event behind
    it, a terminal event does not match its header, or a claimed continuation target never
    started."""
    header_terminal = header_status in TERMINAL_RUN_STATUSES
    return (
        not header_terminal
        or not terminal_event
        or not header_matches_terminal
        or claim_state == "unstarted"
    )


@dataclass(frozen=True, slots=True)
class RunRecoveryStatus:
    """What startup recovery needs to know about one run, without reading its ledger.

    * ``header_status``: the header's status, or ``"missing"`` for a claimed target whose run
      does not exist yet.
    * ``terminal_event`` / ``header_matches_terminal``: whether a terminal RuntimeEvent is
      durable, and whether the header agrees with it (spec §2).
    * ``resume_disposition`` / ``resume_reasons``: the Phase 0 ResumePlan of the committed
      prefix (``None`` / ``()`` for a missing run).
    * ``unsettled_operations``: tool operations still in journal state ``prepared``.
    * ``claim_state``: ``none`` (not a continuation target), ``unstarted`` (claimed, no run or
      no event yet), ``started`` (events, no terminal), ``ended`` (terminal event).
    * ``claim_id``: the claim whose target this run is (the earliest one, if several).
    * ``sealed_by``: the claim that sealed this run as a continuation source.
    * ``high_water``: committed RuntimeEvents (0 for a missing run).
    * ``needs_attention``: see :func:`needs_attention_for`; checked on construction, so a row
      can never claim a verdict its own fields contradict.
    """

    run_id: str
    session_id: str
    header_status: str
    terminal_event: bool
    header_matches_terminal: bool
    resume_disposition: str | None
    resume_reasons: tuple[str, ...]
    unsettled_operations: int
    claim_state: ClaimState
    claim_id: str | None
    sealed_by: str | None
    high_water: int
    needs_attention: bool

    def __post_init__(self) -> None:
        if self.claim_state not in CLAIM_STATES:
            raise ValueError(f"unknown claim_state {self.claim_state!r}")
        expected = needs_attention_for(
            self.header_status,
            self.terminal_event,
            self.header_matches_terminal,
            self.claim_state,
        )
        if self.needs_attention != expected:
            raise ValueError(
                f"run {self.run_id}: needs_attention={self.needs_attention} contradicts its "
                f"fields (expected {expected})"
            )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (snake_case keys, reasons as a list)."""
        data = asdict(self)
        data["resume_reasons"] = list(self.resume_reasons)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecoveryStatus:
        """Inverse of :meth:`to_json`."""
        return cls(
            run_id=str(data["run_id"]),
            session_id=str(data["session_id"]),
            header_status=str(data["header_status"]),
            terminal_event=bool(data["terminal_event"]),
            header_matches_terminal=bool(data["header_matches_terminal"]),
            resume_disposition=_opt_str(data.get("resume_disposition")),
            resume_reasons=tuple(str(reason) for reason in data.get("resume_reasons", ())),
            unsettled_operations=int(data["unsettled_operations"]),
            claim_state=cast(ClaimState, str(data["claim_state"])),
            claim_id=_opt_str(data.get("claim_id")),
            sealed_by=_opt_str(data.get("sealed_by")),
            high_water=int(data["high_water"]),
            needs_attention=bool(data["needs_attention"]),
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


class RecoveryStatusStore(Protocol):
    """Where the recovery-status rows, the projector's bookkeeping and its position live."""

    def position(self) -> int:
        """The last notification id whose effects are in the rows (0: nothing yet)."""
        ...

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        """Run ids of the given run streams (streams never seen are absent)."""
        ...

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        """For each run that is a continuation target: the earliest claim naming it."""
        ...

    def commit(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_map_additions: Mapping[UUID, str],
        position: int,
        *,
        claim_targets: Mapping[str, str] | None = None,
        expected_position: int | None = None,
    ) -> None:
        """Atomically: upsert ``rows``, record new stream→run links and claim→target links,
        and move the position forward to ``position``. With ``expected_position``, refuse
        (:class:`RecoveryStatusConflictError`) unless the stored position still equals it."""
        ...

    def get(self, run_id: str) -> RunRecoveryStatus | None: ...

    def all(self) -> list[RunRecoveryStatus]:
        """Every row, in the order the runs first appeared in the notification log."""
        ...

    def needing_attention(self) -> list[RunRecoveryStatus]:
        """Rows with ``needs_attention``, in the same order as :meth:`all`."""
        ...

    def clear(self) -> None:
        """Forget everything (rows, links, position), atomically."""
        ...

    def close(self) -> None: ...


def _check_position(current: int, position: int, expected_position: int | None) -> None:
    if expected_position is not None and current != expected_position:
        raise RecoveryStatusConflictError(
            f"recovery status position is {current}, expected {expected_position}",
            detail={"position": current, "expectedPosition": expected_position},
        )
    if position < current:
        raise RecoveryStatusConflictError(
            f"recovery status position may only move forward ({current} -> {position})",
            detail={"position": current, "requestedPosition": position},
        )


# --- in memory -----------------------------------------------------------------------------------


class InMemoryRecoveryStatusStore:
    """The read model for the in-memory application (``eventsourcing.popo``): it lives exactly
    as long as the event store it mirrors. Commits build new state and swap it in, so a
    failure inside a commit leaves the old state untouched (the same contract as SQLite)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._position = 0
        self._rows: dict[str, RunRecoveryStatus] = {}
        self._streams: dict[UUID, str] = {}
        self._claims: dict[str, str] = {}

    def position(self) -> int:
        with self._lock:
            return self._position

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        with self._lock:
            return {sid: self._streams[sid] for sid in stream_ids if sid in self._streams}

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        wanted = set(run_ids)
        found: dict[str, str] = {}
        with self._lock:
            for claim_id, target in self._claims.items():
                if target in wanted:
                    found.setdefault(target, claim_id)
        return found

    def commit(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_map_additions: Mapping[UUID, str],
        position: int,
        *,
        claim_targets: Mapping[str, str] | None = None,
        expected_position: int | None = None,
    ) -> None:
        with self._lock:
            _check_position(self._position, position, expected_position)
            new_rows = dict(self._rows)
            for row in rows:
                new_rows[row.run_id] = row
            new_streams = dict(self._streams)
            for stream_id, run_id in stream_map_additions.items():
                new_streams.setdefault(stream_id, run_id)
            new_claims = dict(self._claims)
            for claim_id, target in (claim_targets or {}).items():
                new_claims.setdefault(claim_id, target)
            failpoints.hit(INSIDE_COMMIT_FAILPOINT)
            self._rows, self._streams, self._claims = new_rows, new_streams, new_claims
            self._position = position

    def get(self, run_id: str) -> RunRecoveryStatus | None:
        with self._lock:
            return self._rows.get(run_id)

    def all(self) -> list[RunRecoveryStatus]:
        with self._lock:
            return list(self._rows.values())

    def needing_attention(self) -> list[RunRecoveryStatus]:
        with self._lock:
            return [row for row in self._rows.values() if row.needs_attention]

    def clear(self) -> None:
        with self._lock:
            self._rows, self._streams, self._claims = {}, {}, {}
            self._position = 0

    def close(self) -> None:
        """Nothing to release."""


# --- SQLite --------------------------------------------------------------------------------------

_STATUS_COLUMNS = (
    "run_id",
    "session_id",
    "header_status",
    "terminal_event",
    "header_matches_terminal",
    "resume_disposition",
    "resume_reasons",
    "unsettled_operations",
    "claim_state",
    "claim_id",
    "sealed_by",
    "high_water",
    "needs_attention",
)

_TABLES = (
    "maka_es_recovery_status",
    "maka_es_recovery_streams",
    "maka_es_recovery_claims",
    "maka_es_recovery_tracking",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS maka_es_recovery_status (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    header_status TEXT NOT NULL,
    terminal_event INTEGER NOT NULL,
    header_matches_terminal INTEGER NOT NULL,
    resume_disposition TEXT,
    resume_reasons TEXT NOT NULL,
    unsettled_operations INTEGER NOT NULL,
    claim_state TEXT NOT NULL,
    claim_id TEXT,
    sealed_by TEXT,
    high_water INTEGER NOT NULL,
    needs_attention INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS maka_es_recovery_status_attention
    ON maka_es_recovery_status (needs_attention) WHERE needs_attention = 1;
CREATE TABLE IF NOT EXISTS maka_es_recovery_streams (
    stream_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS maka_es_recovery_claims (
    claim_id TEXT PRIMARY KEY,
    target_run_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS maka_es_recovery_claims_target
    ON maka_es_recovery_claims (target_run_id);
CREATE TABLE IF NOT EXISTS maka_es_recovery_tracking (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version INTEGER NOT NULL,
    position INTEGER NOT NULL
);
"""

_UPSERT_ROW = (
    f"INSERT INTO maka_es_recovery_status ({', '.join(_STATUS_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _STATUS_COLUMNS)}) "
    "ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in _STATUS_COLUMNS[1:])
)

_SELECT_ROWS = f"SELECT {', '.join(_STATUS_COLUMNS)} FROM maka_es_recovery_status"

#: SQLite's default limit on host parameters is 999 on old builds: chunk ``IN (...)`` lists.
_IN_CHUNK = 500


def _row_values(row: RunRecoveryStatus) -> tuple[Any, ...]:
    return (
        row.run_id,
        row.session_id,
        row.header_status,
        int(row.terminal_event),
        int(row.header_matches_terminal),
        row.resume_disposition,
        json.dumps(list(row.resume_reasons), separators=(",", ":")),
        row.unsettled_operations,
        row.claim_state,
        row.claim_id,
        row.sealed_by,
        row.high_water,
        int(row.needs_attention),
    )


def _row_from_db(values: Sequence[Any]) -> RunRecoveryStatus:
    data = dict(zip(_STATUS_COLUMNS, values, strict=True))
    data["resume_reasons"] = json.loads(data["resume_reasons"])
    return RunRecoveryStatus.from_json(data)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


class SqliteRecoveryStatusStore:
    """The read model in the event store's own SQLite file, on a connection of its own.

    Why the same file: one file to back up and move, and the read model can never outlive or
    belong to another store. Why its own connection: the eventsourcing pool's connections are
    the event store's; a separate connection keeps our ``BEGIN IMMEDIATE`` transactions
    independent of it. The connection uses WAL and ``synchronous=FULL`` like the event store,
    and a ``busy_timeout`` so a commit waits for a concurrent event-store writer instead of
    failing.
    """

    def __init__(self, db_path: str, *, busy_timeout_ms: int = 10_000) -> None:
        self.db_path = db_path
        self._lock = threading.RLock()
        with typed_store_faults(db_path):
            self._conn = sqlite3.connect(
                db_path,
                isolation_level=None,  # explicit BEGIN/COMMIT only
                check_same_thread=False,  # guarded by self._lock
                timeout=busy_timeout_ms / 1000.0,
            )
        try:
            with typed_store_faults(db_path):
                self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)};")
                self._conn.execute("PRAGMA journal_mode=WAL;").fetchall()
                self._conn.execute("PRAGMA synchronous=FULL;")
            self._create_tables()
        except BaseException:
            self._conn.close()
            raise

    # -- schema ---------------------------------------------------------------------------------

    def _create_tables(self) -> None:
        """Create the tables if missing; drop and recreate them when the stored schema version
        differs (the read model is derived, so a rebuild replaces any migration)."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name = 'maka_es_recovery_tracking'"
            )
            if cur.fetchone() is not None:
                cur.execute("SELECT schema_version FROM maka_es_recovery_tracking WHERE id = 1")
                found = cur.fetchone()
                if found is not None and int(found[0]) != SCHEMA_VERSION:
                    for table in _TABLES:
                        cur.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    cur.execute(statement)
            cur.execute(
                "INSERT OR IGNORE INTO maka_es_recovery_tracking (id, schema_version, position) "
                "VALUES (1, ?, 0)",
                (SCHEMA_VERSION,),
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception (a failed COMMIT included) rolls
        everything back. Store faults (locked, full, read-only, ...) are typed
        ``StoreUnavailableError`` refusals."""
        with self._lock, typed_store_faults(self.db_path):
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise
            finally:
                cur.close()

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, typed_store_faults(self.db_path):
            return list(self._conn.execute(sql, params).fetchall())

    # -- RecoveryStatusStore ------------------------------------------------------------------

    def position(self) -> int:
        rows = self._query("SELECT position FROM maka_es_recovery_tracking WHERE id = 1")
        return int(rows[0][0]) if rows else 0

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        wanted = [str(stream_id) for stream_id in stream_ids]
        found: dict[UUID, str] = {}
        for chunk in _chunks(wanted):
            marks = ", ".join("?" for _ in chunk)
            for stream_id, run_id in self._query(
                f"SELECT stream_id, run_id FROM maka_es_recovery_streams "
                f"WHERE stream_id IN ({marks})",
                chunk,
            ):
                found[UUID(stream_id)] = str(run_id)
        return found

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(run_ids))
        found: dict[str, str] = {}
        for chunk in _chunks(wanted):
            marks = ", ".join("?" for _ in chunk)
            for target, claim_id in self._query(
                f"SELECT target_run_id, claim_id FROM maka_es_recovery_claims "
                f"WHERE target_run_id IN ({marks}) ORDER BY rowid",
                chunk,
            ):
                found.setdefault(str(target), str(claim_id))
        return found

    def commit(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_map_additions: Mapping[UUID, str],
        position: int,
        *,
        claim_targets: Mapping[str, str] | None = None,
        expected_position: int | None = None,
    ) -> None:
        with self._transaction() as cur:
            cur.execute("SELECT position FROM maka_es_recovery_tracking WHERE id = 1")
            found = cur.fetchone()
            _check_position(0 if found is None else int(found[0]), position, expected_position)
            cur.executemany(_UPSERT_ROW, [_row_values(row) for row in rows])
            cur.executemany(
                "INSERT OR IGNORE INTO maka_es_recovery_streams (stream_id, run_id) VALUES (?, ?)",
                [(str(stream_id), run_id) for stream_id, run_id in stream_map_additions.items()],
            )
            cur.executemany(
                "INSERT OR IGNORE INTO maka_es_recovery_claims (claim_id, target_run_id) "
                "VALUES (?, ?)",
                list((claim_targets or {}).items()),
            )
            cur.execute(
                "UPDATE maka_es_recovery_tracking SET position = ? WHERE id = 1", (position,)
            )
            failpoints.hit(INSIDE_COMMIT_FAILPOINT)

    def get(self, run_id: str) -> RunRecoveryStatus | None:
        found = self._query(f"{_SELECT_ROWS} WHERE run_id = ?", (run_id,))
        return _row_from_db(found[0]) if found else None

    def all(self) -> list[RunRecoveryStatus]:
        return [_row_from_db(values) for values in self._query(f"{_SELECT_ROWS} ORDER BY rowid")]

    def needing_attention(self) -> list[RunRecoveryStatus]:
        return [
            _row_from_db(values)
            for values in self._query(f"{_SELECT_ROWS} WHERE needs_attention = 1 ORDER BY rowid")
        ]

    def clear(self) -> None:
        with self._transaction() as cur:
            for table in _TABLES[:3]:
                cur.execute(f"DELETE FROM {table}")
            cur.execute("UPDATE maka_es_recovery_tracking SET position = 0 WHERE id = 1")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
