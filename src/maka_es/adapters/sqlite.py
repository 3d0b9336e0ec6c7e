"""SQLite persistence for eventsourcing, with maka_es durability (PostgreSQL: ``postgres``).

Why a factory of our own: eventsourcing's SQLite module switches file databases to WAL but
leaves ``synchronous`` at the build default. maka_es promises that a commit that returned
survives a process crash, so every connection is opened with ``synchronous=FULL`` (asserted by a
test) and the recorder exposes a failpoint inside the write transaction for crash tests.

Two more promises live here, at the one place every read and write passes (the datastore's
``transaction()``):

* store faults are the library's typed errors (``StoreUnavailableError`` and its subclasses,
  see ``maka_es.adapters.sqlite_faults``), never raw ``sqlite3`` or eventsourcing errors;
* a write is acknowledged only while the path still names the file the store opened, and its
  ``-wal`` the log the store's connections opened: a database or a WAL deleted or replaced
  under a live application would otherwise take commits into an unlinked inode and lose them
  (ADR 0014; the WAL side is ``maka_es.adapters.sqlite_wal``).

Select it with ``PERSISTENCE_MODULE=maka_es.adapters.sqlite`` and ``SQLITE_DBNAME=<file>``
(the RuntimeApplication default).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote
from uuid import UUID

from eventsourcing import sqlite as es_sqlite
from eventsourcing.persistence import ConnectionPoolClosedError, StoredEvent
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
)

from maka_es import failpoints
from maka_es.adapters.sqlite_faults import typed_store_faults
from maka_es.adapters.sqlite_wal import FileIdentity, WalWatch, file_identity
from maka_es.errors import StoreUnavailableError

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
        try:
            with datastore.get_connection(commit=False) as conn:
                raw: sqlite3.Connection = conn._sqlite_conn
                if raw is not connection:
                    return None
                current = raw.execute("PRAGMA data_version;").fetchone()[0]
        except Exception:  # any doubt means "read the store", which types its own faults
            return None
        return head if current == data_version else None


class FailpointSQLiteApplicationRecorder(SQLiteApplicationRecorder):
    """The library's recorder plus, inside the write transaction after the inserts, a failpoint
    and the store-file identity check (both before COMMIT), and the :class:`OwnCommitWatch`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.own_commits = OwnCommitWatch()

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
