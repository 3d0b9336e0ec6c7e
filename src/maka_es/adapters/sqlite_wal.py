"""The store's write-ahead log must stay the file its connections opened (ADR 0014).

Why: in WAL mode a commit is durable once its frames are in the ``-wal`` file, and they reach
the database file only at the next checkpoint. SQLite writes to the WAL inode it opened, so
after the ``-wal`` alone is deleted (or another file is moved into its name) commits still
"succeed" into an unlinked file, and a crash before the next checkpoint loses every commit
since the last one, those acknowledged before the deletion included. SQLite does not notice;
a connection opened afterwards even creates a fresh, empty WAL beside the live one.

So the connection pool keeps a :class:`WalWatch`:

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
"""

from __future__ import annotations

import os
import sqlite3
import threading

from eventsourcing.sqlite import SQLiteConnection

from maka_es.errors import StoreUnavailableError

__all__ = ["FileIdentity", "WalWatch", "file_identity"]

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
