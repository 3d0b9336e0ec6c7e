"""The SQLite store: eventsourcing's SQLite persistence with maka_es durability, its faults
typed, its file and write-ahead log pinned, and the fast writer of a command's facts.

Why a factory of our own: eventsourcing's SQLite module switches file databases to WAL but
leaves ``synchronous`` at the build default. maka_es promises that a commit that returned
survives a process crash, so every connection is opened with ``synchronous=FULL`` (asserted by a
test) and the recorder exposes a failpoint inside the write transaction for crash tests.

Two more promises live here, at the one place every read and write passes (the datastore's
``transaction()``):

* store faults are the library's typed errors (``StoreUnavailableError`` and its subclasses,
  see *Faults* below), never raw ``sqlite3`` or eventsourcing errors;
* a write is acknowledged only while the path still names the file the store opened, and its
  ``-wal`` the log the store's connections opened: a database or a WAL deleted or replaced
  under a live application would otherwise take commits into an unlinked inode and lose them
  (ADR 0014; the WAL side is *The write-ahead log* below).

Select it with ``PERSISTENCE_MODULE=maka_es.adapters.sqlite`` and ``SQLITE_DBNAME=<file>``
(the RuntimeApplication default). The module holds only this store's factory: eventsourcing
finds the factory of a persistence module by looking for its one ``InfrastructureFactory``.

**The write-ahead log** must stay the file its connections opened (ADR 0014). In WAL mode a
commit is durable once its frames are in the ``-wal`` file, and they reach the database file
only at the next checkpoint. SQLite writes to the WAL inode it opened, so after the ``-wal``
alone is deleted (or another file is moved into its name) commits still "succeed" into an
unlinked file, and a crash before the next checkpoint loses every commit since the last one,
those acknowledged before the deletion included. SQLite does not notice; a connection opened
afterwards even creates a fresh, empty WAL beside the live one. So the connection pool keeps a
:class:`WalWatch`:

* the first connection pins the WAL's ``(st_dev, st_ino)`` right after opening it (a read of
  the schema version makes SQLite open it); while any connection of the pool stays open, the
  WAL cannot legitimately change: SQLite deletes it only when the last connection to the
  database, in any process, closes, and a checkpoint (``TRUNCATE`` too) keeps the inode;
* a later connection is refused before it connects, and each write transaction immediately
  before COMMIT, when the path no longer names that inode (``store_unavailable``, reason
  ``store_wal_deleted`` / ``store_wal_replaced``);
* after the refused transaction rolled back, its connection, which still holds the old WAL,
  runs a ``FULL`` checkpoint: the commits acknowledged before the loss are copied into the
  database file and fsynced, so none is lost by a later crash. ``detail["checkpointed"]`` says
  whether that checkpoint finished (readers in other processes can keep it from finishing).

When every connection of the pool has closed, the pin is forgotten: the next connection may
meet a WAL that SQLite itself deleted and recreated. Read-only and in-memory stores have
nothing to watch.

**Faults** become the library's own errors, one translation for every SQLite access. Every
read and write of the event store goes through the datastore's ``transaction()`` and every
statement of the recovery-status read model through its own connection wrapper. Translating at
those two choke points covers every public entry point above them (``RuntimeApplication``, the
tool runtime, the planners, startup recovery) without a ``try``/``except`` in each method, and
a new entry point is covered the day it is written. What is translated: raw ``sqlite3`` errors
and eventsourcing's ``PersistenceError`` family, except ``IntegrityError`` (a lost race on the
store's uniqueness: the application classifies it as a conflict). Errors that are already ours
(``MakaError``) pass through unchanged. The reason is read from SQLite's own error code
(``sqlite_errorname``), not from message text, except for a missing table, which SQLite
reports as a generic ``SQLITE_ERROR``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import unquote
from uuid import UUID

from eventsourcing import sqlite as es_sqlite
from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    IntegrityError,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
)

from maka_es import failpoints
from maka_es.errors import (
    MakaError,
    StoreFileCorruptionError,
    StorePathError,
    StoreSchemaMissingError,
    StoreUnavailableError,
)

# === the write-ahead log stays the file the pool opened ===========================================

FileIdentity = tuple[int, int]


def file_identity(path: str) -> FileIdentity | None:
    """``(st_dev, st_ino)`` of the file at ``path``; ``None`` when nothing is there."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return (stat.st_dev, stat.st_ino)


class WalWatch:
    """Pins the ``-wal`` of one pool's store file and checkpoints after losing it (module doc)."""

    def __init__(self, db_path: str | None, *, read_only: bool) -> None:
        self.db_path = db_path
        self.path = None if db_path is None or read_only else f"{db_path}-wal"
        self.identity: FileIdentity | None = None
        self._holders: list[SQLiteConnection] = []
        self._lock = threading.Lock()
        #: The refusal whose connection has not run its rescue checkpoint yet.
        self._pending: StoreUnavailableError | None = None

    def before_connect(self) -> None:
        """Called before a new pool connection connects: forget the pin when no connection of
        the pool holds the WAL any more, else refuse a WAL that is no longer the pinned one
        (connecting would open a fresh, empty one beside it)."""
        with self._lock:
            self._holders = [held for held in self._holders if not held.closed]
            if not self._holders:
                self.identity = None
        self.verify()

    def pin(self, connection: SQLiteConnection) -> None:
        """Called with a freshly connected pool connection: make SQLite open the WAL, then pin
        its identity (first holder) or check it is the pinned one."""
        if self.path is None:
            return
        connection._sqlite_conn.execute("PRAGMA schema_version;").fetchone()
        current = file_identity(self.path)
        with self._lock:
            if self.identity is None:
                self.identity = current
        self.verify()
        with self._lock:
            self._holders.append(connection)

    def verify(self) -> None:
        """Refuse (``store_unavailable``) unless the WAL path still names the pinned file."""
        if self.path is None or self.identity is None:
            return
        current = file_identity(self.path)
        if current == self.identity:
            return
        deleted = current is None
        refusal = StoreUnavailableError(
            f"the store's write-ahead log {self.path!r} was "
            f"{'deleted' if deleted else 'replaced by another file'} after the store opened it: "
            "the write was refused and nothing of it is durable; the commits acknowledged "
            f"before it are checkpointed into {self.db_path!r} (see detail.checkpointed); "
            "reopen the store",
            detail={
                "reason": "store_wal_deleted" if deleted else "store_wal_replaced",
                "path": self.path,
                "checkpointed": False,
            },
        )
        with self._lock:
            self._pending = refusal
        raise refusal

    def rescue(self, connection: SQLiteConnection) -> None:
        """After a refusal: copy every acknowledged commit from the lost WAL (still open on
        ``connection``) into the database file with a ``FULL`` checkpoint."""
        with self._lock:
            refusal, self._pending = self._pending, None
        if refusal is None or connection.closed:
            return
        raw: sqlite3.Connection = connection._sqlite_conn
        if raw.in_transaction:
            raw.rollback()
        try:
            busy, frames, copied = raw.execute("PRAGMA wal_checkpoint(FULL);").fetchone()
        except sqlite3.Error:
            return
        refusal.detail["checkpointed"] = busy == 0 and frames == copied


# === faults: every SQLite error becomes a typed store fault =======================================

#: SQLite primary error names → the ``reason`` a host reads in ``detail``.
_REASONS: Final = {
    "SQLITE_BUSY": "locked",
    "SQLITE_LOCKED": "locked",
    "SQLITE_FULL": "full",
    "SQLITE_READONLY": "read_only",
    "SQLITE_IOERR": "io_error",
    "SQLITE_CANTOPEN": "cannot_open",
    "SQLITE_CORRUPT": "corrupt",
    "SQLITE_NOTADB": "not_a_database",
    "SQLITE_PERM": "permission_denied",
    "SQLITE_AUTH": "permission_denied",
}


#: Reasons that are a verdict about the file, not a passing fault.
_CORRUPTION: Final = frozenset({"corrupt", "not_a_database"})
#: Reasons the path itself may explain (a directory opened read-only is an I/O error).
_PATH_REASONS: Final = frozenset({"cannot_open", "io_error"})


def _sqlite_cause(exc: BaseException) -> sqlite3.Error | None:
    """The ``sqlite3`` error behind ``exc`` (eventsourcing wraps it as ``__cause__``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, sqlite3.Error):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _error_name(cause: sqlite3.Error | None) -> str | None:
    name = getattr(cause, "sqlite_errorname", None)
    return name if isinstance(name, str) else None


def _reason(exc: BaseException, error_name: str | None) -> str:
    if isinstance(exc, ConnectionPoolClosedError):
        return "closed"
    if error_name is not None:
        primary = "_".join(error_name.split("_")[:2])  # SQLITE_READONLY_DBMOVED → SQLITE_READONLY
        if primary in _REASONS:
            return _REASONS[primary]
    text = str(exc).lower()
    if "no such table" in text:
        return "schema_missing"
    if "closed database" in text:
        return "closed"
    return "error"


def _path_problem(path: str, read_only: bool) -> str | None:
    """Why nothing can be opened at ``path``, when the filesystem says so (else ``None``)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return "directory_missing"
    if os.path.isdir(path):
        return "is_a_directory"
    if read_only and not os.path.exists(path):
        return "file_missing"
    return None


def store_fault(
    exc: BaseException, *, path: str | None, read_only: bool = False
) -> StoreUnavailableError:
    """The typed refusal for a store fault ``exc`` on the store at ``path``."""
    cause = _sqlite_cause(exc)
    error_name = _error_name(cause)
    reason = _reason(exc, error_name)
    detail: dict[str, str] = {"reason": reason, "errorClass": type(exc).__name__}
    if error_name is not None:
        detail["sqliteError"] = error_name
    if path is not None:
        detail["path"] = path
    where = f" at {path!r}" if path is not None else ""
    if reason == "schema_missing":
        return StoreSchemaMissingError(
            f"the SQLite database{where} has no maka_es tables ({exc}): a wrong path or a "
            "foreign file, a store opened read-only before anything created its tables, or "
            "tables dropped under the application; nothing was read or written",
            detail=detail,
        )
    if reason in _CORRUPTION:
        return StoreFileCorruptionError(
            f"the store file{where} is damaged or not a SQLite database ({error_name}): "
            f"{exc}; nothing was read or written",
            detail=detail,
        )
    if reason in _PATH_REASONS and path is not None:
        problem = _path_problem(path, read_only)
        if problem is not None:
            detail["reason"] = problem
            return StorePathError(
                f"cannot open or create a SQLite store at {path!r}: "
                f"{problem.replace('_', ' ')} ({exc})",
                detail=detail,
            )
    return StoreUnavailableError(
        f"the store{where} is unavailable ({reason}): {type(exc).__name__}: {exc}",
        detail=detail,
    )


@contextmanager
def typed_store_faults(path: str | None, *, read_only: bool = False) -> Iterator[None]:
    """Re-raise store faults raised inside the block as :class:`StoreUnavailableError` (or a
    subclass). ``IntegrityError`` and the library's own errors pass through unchanged."""
    try:
        yield
    except (MakaError, IntegrityError):
        raise
    except SQLITE_FAULTS as exc:
        raise store_fault(exc, path=path, read_only=read_only) from exc


#: The SQLite-side faults :func:`typed_store_faults` types (a writer that inlines it for speed
#: names the same); not `ledger.ports.STORE_FAULTS`, the set that means "the store could not
#: be read" to the layers above.
SQLITE_FAULTS: Final = (sqlite3.Error, PersistenceError, ConnectionPoolClosedError)


# === the durable datastore, its recorder and the factory ==========================================

SYNCHRONOUS_FULL = 2


def sqlite_path_from_dbname(db_name: str) -> str | None:
    """The file path behind an eventsourcing ``SQLITE_DBNAME``; ``None`` for in-memory names.

    ``open_sqlite(read_only=True)`` stores ``file:<path>?mode=ro``: the URI's prefix and query
    are dropped.
    """
    name = db_name
    if name.startswith("file:"):
        name = unquote(name[len("file:") :].split("?", 1)[0])
        if name.startswith("//"):  # file:///abs/path (empty authority)
            name = name[2:]
    if not name or name == ":memory:" or "mode=memory" in db_name:
        return None
    return name


def is_read_only_dbname(db_name: str) -> bool:
    """Whether ``SQLITE_DBNAME`` opens the file with SQLite's ``mode=ro``."""
    return db_name.startswith("file:") and "mode=ro" in db_name.partition("?")[2].split("&")


class DurableSQLiteConnectionPool(SQLiteConnectionPool):
    """Every connection: WAL (file databases) and ``synchronous=FULL``; every connection of one
    pool opens the same file (its identity is pinned by the first one); and closing the pool
    never closes a connection another thread is still inside (see :meth:`close`)."""

    def __init__(self, *, db_name: str, lock_timeout: int | None = None) -> None:
        super().__init__(db_name=db_name, lock_timeout=lock_timeout)
        #: ``close()`` was called; connections still in use close when they come back.
        self.shutting_down = False
        self.db_path = sqlite_path_from_dbname(db_name)
        self.read_only = is_read_only_dbname(db_name)
        if self.read_only:
            # A read-only connection cannot switch the journal mode; it reads the file in
            # whatever mode it is (a store we created is WAL already).
            self.is_journal_mode_wal = True
        self.file_identity: FileIdentity | None = None
        self.wal = WalWatch(self.db_path, read_only=self.read_only)

    def _create_connection(self) -> SQLiteConnection:
        if self.file_identity is not None:
            self.verify_file_identity()  # never let a later connection create a new file
        self.wal.before_connect()  # nor a new WAL beside the one the others hold
        connection = super()._create_connection()
        raw: sqlite3.Connection = connection._sqlite_conn
        try:
            raw.execute("PRAGMA synchronous=FULL;")
            raw.execute("PRAGMA foreign_keys=ON;")
            if self.db_path is not None:
                if self.file_identity is None:
                    self.file_identity = file_identity(self.db_path)
                else:
                    self.verify_file_identity()
                self.wal.pin(connection)
        except BaseException:
            raw.close()
            raise
        return connection

    def close(self) -> None:
        """Close idle connections now and every connection in use when it is returned.

        Why not eventsourcing's ``close()``: it closes the connections in use too, under the
        threads using them. ``sqlite3`` connections are shared across threads
        (``check_same_thread=False``), so a statement running in another thread then steps on a
        freed database handle and the whole process dies with a segmentation fault (seen when
        an application is closed while a reader thread is inside ``select_notifications``).
        Here, closing refuses new checkouts at once (``ConnectionPoolClosedError``, typed as
        ``store_unavailable`` with reason ``closed``); a transaction already running finishes
        on its own connection, which is closed by :meth:`put_connection`. ``close()`` never
        waits, so it cannot deadlock on a thread that closes the pool inside a transaction.
        """
        with self._put_condition:
            self.shutting_down = True
            if not self._in_use:
                super().close()
                return
            while self._pool:
                self._pool.popleft().close()  # idle: no thread is inside it

    def _get_connection(self, timeout: float = 0.0) -> SQLiteConnection:
        """eventsourcing's checkout, refused once the pool is shutting down (its own check in
        ``get_connection`` reads the flag without the lock, so a checkout racing ``close()``
        could otherwise open a new connection on a closed pool)."""
        with self._put_condition:
            if self.shutting_down:
                raise ConnectionPoolClosedError("the store was closed")
            return super()._get_connection(timeout=timeout)

    def put_connection(self, conn: SQLiteConnection) -> None:
        """eventsourcing's return; after ``close()``, the returned connection is closed (now
        that no thread is inside it) and the last one to come back finishes the close. A
        connection coming back from a write refused for a lost WAL first checkpoints it."""
        self.wal.rescue(conn)
        with self._put_condition:
            if self.shutting_down and not conn.closed:
                conn.close()  # a closed connection is forgotten, never pooled, by the base
            super().put_connection(conn)
            if self.shutting_down and not self._in_use:
                super().close()

    def verify_file_identity(self) -> None:
        """Refuse (``store_unavailable``) unless the path still names the file this pool opened
        and its ``-wal`` the log the pool's connections hold (:class:`WalWatch`).

        One ``stat`` of each path, compared by ``(st_dev, st_ino)``: the cost of a write
        transaction grows by two system calls, which is what makes "acknowledged" mean "in the
        store's files" after a delete or a replace under a live application.
        """
        if self.db_path is None or self.file_identity is None:
            return
        self._verify_database_file()
        self.wal.verify()

    def _verify_database_file(self) -> None:
        assert self.db_path is not None
        current = file_identity(self.db_path)
        if current == self.file_identity:
            return
        reason = "store_file_deleted" if current is None else "store_file_replaced"
        what = "deleted" if current is None else "replaced by another file"
        raise StoreUnavailableError(
            f"the store file {self.db_path!r} was {what} after it was opened: the write was "
            "refused and nothing of it is durable; reopen the store",
            detail={"reason": reason, "path": self.db_path},
        )


class DurableSQLiteDatastore(SQLiteDatastore):
    def __init__(self, db_name: str, **kwargs: Any) -> None:
        super().__init__(db_name, **kwargs)
        pool = self.pool
        self.pool: DurableSQLiteConnectionPool = DurableSQLiteConnectionPool(
            db_name=db_name,
            lock_timeout=pool.lock_timeout,
        )
        pool.close()

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[SQLiteCursor]:
        """eventsourcing's transaction, with every store fault typed (see module docstring)."""
        with (
            typed_store_faults(self.pool.db_path, read_only=self.pool.read_only),
            super().transaction(commit=commit) as cursor,
        ):
            yield cursor


class OwnCommitWatch:
    """What this recorder alone wrote since anyone else last committed to the file (ADR 0026).

    Why: after a command commits, the next load fast-forwards the cached aggregate with a
    query. When provably nobody else committed since, the rows are exactly the facts this
    process just saved, and the store can fold those from memory. The proof is SQLite's
    ``PRAGMA data_version``: read on the writing connection inside the write transaction
    (write lock held, so every earlier commit is in that snapshot), it stays the same on that
    connection across its own commits and changes as soon as any other connection, in this
    process or another, commits. Any doubt (another connection, a failed write, a changed
    value, an error reading the pragma) answers "not quiet" and the query runs as before.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = threading.local()
        self._connection: sqlite3.Connection | None = None
        self._data_version: int | None = None
        #: Last version this recorder wrote to each stream since ``_data_version``.
        self._heads: dict[UUID, int] = {}

    def note_write(self, c: SQLiteCursor, stored_events: Sequence[StoredEvent]) -> None:
        """Inside the write transaction: remember the connection, its data_version and heads.
        Reading the pragma never fails the write: if it cannot be read, nothing is proven."""
        try:
            c.execute("PRAGMA data_version;")
            data_version = int(c.fetchone()[0])
        except sqlite3.Error:
            self._pending.write = None
            return
        heads = {
            e.originator_id
            if isinstance(e.originator_id, UUID)
            else UUID(str(e.originator_id)): e.originator_version
            for e in stored_events
        }
        self._pending.write = (c.sqlite_cursor.connection, data_version, heads)

    def committed(self) -> None:
        """The write noted by :meth:`note_write` committed (same thread)."""
        noted = self._pending.__dict__.pop("write", None)
        if noted is None:
            self.failed()
            return
        connection, data_version, heads = noted
        with self._lock:
            if connection is not self._connection or data_version != self._data_version:
                self._connection, self._data_version = connection, data_version
                self._heads = {}
            self._heads.update(heads)

    def failed(self) -> None:
        """The write did not commit (or may not have): nothing is known any more."""
        self._pending.__dict__.pop("write", None)
        with self._lock:
            self._connection, self._data_version, self._heads = None, None, {}

    def quiet_head(self, datastore: SQLiteDatastore, stream_id: UUID) -> int | None:
        """The version this recorder last wrote to ``stream_id`` if no other connection has
        committed to the file since; ``None`` when that is not proven."""
        with self._lock:
            connection, data_version = self._connection, self._data_version
            head = self._heads.get(stream_id)
        if head is None or connection is None:
            return None
        pool = datastore.pool  # checked out directly: the generator context manager that
        try:  # ``get_connection`` wraps it in was a measurable share of a step (issue 23)
            conn = pool.get_connection(is_writer=False)
            try:
                raw: sqlite3.Connection = conn._sqlite_conn
                if raw is not connection:
                    return None
                current = raw.execute("PRAGMA data_version;").fetchone()[0]
            finally:
                pool.put_connection(conn)
        except Exception:  # any doubt means "read the store", which types its own faults
            return None
        return head if current == data_version else None


#: Stream ids the recorder keeps parsed (``convert_originator_id``).
STREAM_IDS_KEPT = 4096


class FailpointSQLiteApplicationRecorder(SQLiteApplicationRecorder):
    """The library's recorder plus, inside the write transaction after the inserts, a failpoint
    and the store-file identity check (both before COMMIT), and the :class:`OwnCommitWatch`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.own_commits = OwnCommitWatch()
        self._stream_ids: dict[str, UUID] = {}

    def convert_originator_id(self, originator_id: str) -> UUID | str:
        """The stream id of a row read back, each text parsed into its UUID once (ADR 0045).

        Why: every row of a run repeats its stream's id; parsing it anew was about a tenth of a
        cold read. UUIDs are immutable, so one instance serves every row. At most
        ``STREAM_IDS_KEPT`` are kept (then the memo starts over)."""
        if self.datastore.originator_id_type != "uuid":
            return originator_id
        known = self._stream_ids.get(originator_id)
        if known is None:
            if len(self._stream_ids) >= STREAM_IDS_KEPT:
                self._stream_ids.clear()
            known = self._stream_ids[originator_id] = UUID(originator_id)
        return known

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        try:
            ids = super().insert_events(stored_events, **kwargs)
        except BaseException:
            self.own_commits.failed()
            raise
        self.own_commits.committed()
        return ids

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        failpoints.hit(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
        if isinstance(self.datastore, DurableSQLiteDatastore):
            self.datastore.pool.verify_file_identity()
        self.own_commits.note_write(c, stored_events)
        return ids


class Factory(es_sqlite.SQLiteFactory):
    """eventsourcing infrastructure factory selected by ``PERSISTENCE_MODULE``."""

    application_recorder_class = FailpointSQLiteApplicationRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        old = self.datastore
        self.datastore = DurableSQLiteDatastore(
            old.pool.db_name,
            lock_timeout=old.pool.lock_timeout,
            single_row_tracking=old.single_row_tracking,
            originator_id_type=old.originator_id_type,
        )
        old.close()
        # Open a connection now, not on first use: a path where no store can be (a missing
        # directory, a read-only open of a missing file) refuses at open, naming the path,
        # and the store file's identity is pinned from the start.
        with self.datastore.transaction(commit=False):
            pass
