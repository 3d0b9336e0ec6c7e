"""Observe a store without changing it: the evidence behind "nothing was written".

Why: a refusal is only honest if the store is byte-for-byte unchanged afterwards. A snapshot
records every stored row (notification id, stream, version, topic, state bytes) and, for a
SQLite file, the bytes of the database and its WAL. Compare snapshots before and after.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from maka_es.app import RuntimeApplication

#: Gives the store setting (``RuntimeApplication.open``) of an empty store for one example of a
#: state machine; the machines' ``on_store`` takes one (a PostgreSQL schema, say).
FreshStore = Callable[[Path], str]


def sqlite_store_in(workdir: Path) -> str:
    """The machines' default fresh store: a new SQLite file in the example's ``workdir``."""
    return str(workdir / "runtime.sqlite")


@dataclass(frozen=True)
class StoreSnapshot:
    rows: tuple[tuple[int, str, int, str, bytes], ...]
    max_notification_id: int | None
    file_digests: tuple[tuple[str, str], ...]


def _file_digests(db_name: str | None) -> tuple[tuple[str, str], ...]:
    """SHA-256 of the database file and its ``-wal``. The database file is hashed by another
    process: closing any descriptor of it in this process would drop every POSIX lock this
    process holds on it, SQLite's included, and another process could then delete the WAL
    under this process's open connections."""
    if not db_name or ":memory:" in db_name or "mode=memory" in db_name:
        return ()
    digests = []
    database = Path(db_name)
    if database.exists():
        digests.append((database.name, _digest_elsewhere(database)))
    wal = Path(db_name + "-wal")  # SQLite locks the database file and -shm, never the -wal
    if wal.exists():
        digests.append((wal.name, hashlib.sha256(wal.read_bytes()).hexdigest()))
    return tuple(digests)


def _digest_elsewhere(path: Path) -> str:
    """SHA-256 of ``path`` computed by another process (``sha256sum``, else Python)."""
    tool = shutil.which("sha256sum")
    command = (
        [tool, str(path)] if tool is not None else [sys.executable, "-c", _HASH_FILE, str(path)]
    )
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout.split()[0]


_HASH_FILE = (
    "import hashlib, sys\n"
    "with open(sys.argv[1], 'rb') as f: print(hashlib.file_digest(f, 'sha256').hexdigest())"
)


def store_snapshot(app: RuntimeApplication) -> StoreSnapshot:
    """Every stored row of ``app``'s store, plus SQLite file digests when file-backed."""
    rows: list[tuple[int, str, int, str, bytes]] = []
    start = 1
    while True:
        page = app._es.recorder.select_notifications(start=start, limit=1000)
        rows.extend(
            (n.id, str(n.originator_id), n.originator_version, n.topic, bytes(n.state))
            for n in page
        )
        if len(page) < 1000:
            break
        start = page[-1].id + 1
    db_name = (
        app.env.get("SQLITE_DBNAME")
        if "popo" not in app.env.get("PERSISTENCE_MODULE", "")
        else None
    )
    return StoreSnapshot(
        tuple(rows), app._es.recorder.max_notification_id(), _file_digests(db_name)
    )
