"""A ``-wal`` deleted or replaced under a live application: the next write is refused, and no
write the store acknowledged is lost by a crash afterwards (ADR 0014, amendment of issue 20).

Why it matters: in WAL mode the commits since the last checkpoint live only in the ``-wal``.
SQLite writes to the inode it opened, so after the WAL alone is unlinked, commits still
"succeed" and a crash before the next checkpoint loses all of them, those acknowledged before
the deletion too. "What a crash leaves" is read here from a copy of the database file alone
(the WAL is gone), and, in the child-process test, from the store after a real SIGKILL.

The normal life of a WAL must not trip the check: SQLite deletes it when the last connection
closes and recreates it on the next open, other applications and processes open and close the
store beside a live one, and a ``TRUNCATE`` checkpoint empties it in place.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from eventsourcing.utils import Environment

from maka_es.adapters.sqlite import Factory
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreUnavailableError
from maka_es.testing.builders import LedgerBuilder
from maka_es.testing.probes import executions, store_snapshot
from tests.integration.store.test_store_file_identity import WRITES, Write, _seeded


def _wal(db: Path) -> Path:
    return Path(f"{db}-wal")


def _ids(app: RuntimeApplication) -> list[str]:
    return [event.id for event in app.read_run_events("r1")]


def _what_a_crash_leaves(db: Path, tmp_path: Path) -> list[str]:
    """The run's events in a copy of the database file without any WAL: what a process
    killed now would leave, since the deleted WAL is gone with it."""
    copy = tmp_path / "after-crash.sqlite"
    shutil.copy(db, copy)
    with RuntimeApplication.open_sqlite(str(copy)) as survivor:
        return _ids(survivor)


@pytest.mark.parametrize("write", list(WRITES.values()), ids=list(WRITES))
def test_a_write_after_the_wal_was_deleted_is_refused_and_nothing_acknowledged_is_lost(
    db_path: Path, tmp_path: Path, write: Write
) -> None:
    app, ledger = _seeded(db_path)
    try:
        app.ledger.append_event("r1", ledger.text("acknowledged"))
        acknowledged = _ids(app)
        _wal(db_path).unlink()
        root = tmp_path / "side-effects"
        root.mkdir()

        with pytest.raises(StoreUnavailableError) as info:
            write(app, ledger, root)

        assert info.value.code == "store_unavailable"
        assert info.value.detail == {
            "reason": "store_wal_deleted",
            "path": str(_wal(db_path)),
            "checkpointed": True,
        }
        assert executions(root) == []  # T1 refused: the tool's side effect never ran
        assert not _wal(db_path).exists()  # no fresh WAL beside the lost one
        assert _what_a_crash_leaves(db_path, tmp_path) == acknowledged
        with pytest.raises(StoreUnavailableError):  # and it keeps refusing
            write(app, ledger, root)
        assert _ids(app) == acknowledged
    finally:
        app.close()
    with RuntimeApplication.open_sqlite(str(db_path)) as reopened:
        assert _ids(reopened) == acknowledged
        reopened.ledger.append_event("r1", LedgerBuilder(prefix="later-").text())  # usable again


def test_a_wal_replaced_by_another_file_is_refused(db_path: Path, tmp_path: Path) -> None:
    app, ledger = _seeded(db_path)
    try:
        acknowledged = _ids(app)
        stranger = tmp_path / "stranger"
        stranger.write_bytes(b"")
        os.replace(stranger, _wal(db_path))

        with pytest.raises(StoreUnavailableError) as info:
            app.ledger.append_event("r1", ledger.text("refused"))

        assert info.value.detail["reason"] == "store_wal_replaced"
        assert info.value.detail["checkpointed"] is True
        assert _what_a_crash_leaves(db_path, tmp_path) == acknowledged
    finally:
        app.close()


_CHILD = """
import sys
from maka_es.app import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.errors import StoreUnavailableError

app = RuntimeApplication.open_sqlite(sys.argv[1])
app.open_session("s1", "/workspace")
app.ledger.create_run(run_header())
ledger = LedgerBuilder()
for n in range(3):
    app.ledger.append_event("r1", ledger.text(f"acknowledged {n}"))
    print("acknowledged", ledger.events[-1]["id"], flush=True)
print("ready", flush=True)
sys.stdin.readline()  # the parent deletes the WAL now
try:
    app.ledger.append_event("r1", ledger.text("after the delete"))
    print("acknowledged", ledger.events[-1]["id"], flush=True)
except StoreUnavailableError as exc:
    print("refused", exc.detail["reason"], exc.detail["checkpointed"], flush=True)
print("done", flush=True)
sys.stdin.readline()  # killed here, without closing anything
"""


def test_sigkill_after_the_wal_was_deleted_loses_no_acknowledged_write(db_path: Path) -> None:
    """A real process: three acknowledged appends, the WAL deleted, one more append, SIGKILL.
    Every append the child was told succeeded is in the store afterwards."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    lines: list[str] = []
    try:
        while (line := child.stdout.readline().strip()) != "ready":
            assert line, "the child ended before it was ready"
            lines.append(line)
        _wal(db_path).unlink()
        child.stdin.write("go\n")
        child.stdin.flush()
        while (line := child.stdout.readline().strip()) != "done":
            assert line, "the child ended before it was done"
            lines.append(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    acknowledged = [line.split()[1] for line in lines if line.startswith("acknowledged")]
    with RuntimeApplication.open_sqlite(str(db_path)) as reopened:
        assert reopened.list_runs("s1") != [], "the crash lost every acknowledged write"
        assert _ids(reopened) == acknowledged
    assert len(acknowledged) == 3
    assert lines[-1] == "refused store_wal_deleted True"


# --- the normal life of a WAL ----------------------------------------------------------------


def test_close_and_reopen_cycles_recreate_the_wal_without_a_refusal(db_path: Path) -> None:
    app, ledger = _seeded(db_path)
    app.close()
    for cycle in range(3):
        assert not _wal(db_path).exists()  # the last close checkpointed and deleted it
        with RuntimeApplication.open_sqlite(str(db_path)) as app:
            assert app.ledger.append_event("r1", ledger.text(f"cycle {cycle}")).appended == 1
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        assert len(_ids(app)) == 4


def test_other_applications_and_processes_beside_a_live_one_do_not_trip_it(
    db_path: Path,
) -> None:
    app, ledger = _seeded(db_path)
    script = (
        "import sys\n"
        "from maka_es.app import RuntimeApplication\n"
        "from maka_es.testing.builders import LedgerBuilder\n"
        "with RuntimeApplication.open_sqlite(sys.argv[1]) as other:\n"
        "    other.ledger.append_event('r1', LedgerBuilder(prefix=sys.argv[2]).text())\n"
    )
    try:
        for n in range(2):
            with RuntimeApplication.open_sqlite(str(db_path)) as other:  # same process
                other.ledger.append_event("r1", LedgerBuilder(prefix=f"app{n}-").text())
            subprocess.run(
                [sys.executable, "-c", script, str(db_path), f"proc{n}-"], check=True, timeout=60
            )
            raw = sqlite3.connect(db_path)  # a checkpoint that empties the WAL in place
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE);").fetchall()
            raw.close()
            assert app.ledger.append_event("r1", ledger.text(f"live {n}")).appended == 1
        assert len(_ids(app)) == 7
    finally:
        app.close()


def test_a_live_application_outlives_the_one_that_opened_the_wal(db_path: Path) -> None:
    first, ledger = _seeded(db_path)
    second = RuntimeApplication.open_sqlite(str(db_path))
    try:
        first.close()  # not the last connection: SQLite keeps the WAL
        assert second.ledger.append_event("r1", ledger.text("second")).appended == 1
    finally:
        second.close()


def test_a_new_pool_connection_never_opens_a_fresh_wal_beside_the_lost_one(
    tmp_path: Path,
) -> None:
    """A second connection, needed while the first is in use, would create an empty ``-wal``
    beside the one the first holds: it is refused before it connects."""
    db = tmp_path / "pool.sqlite"
    factory = Factory(Environment("maka_es", {"SQLITE_DBNAME": str(db)}))
    try:
        factory.application_recorder()  # creates the tables
        datastore = factory.datastore
        with datastore.transaction(commit=False) as held:  # the first connection, kept busy
            held.execute("SELECT count(*) FROM stored_events")
            _wal(db).unlink()
            with pytest.raises(StoreUnavailableError) as info, datastore.transaction(commit=False):
                pass
        assert info.value.detail["reason"] == "store_wal_deleted"
        assert not _wal(db).exists()
    finally:
        factory.close()


def test_a_store_snapshot_keeps_sqlite_s_locks_so_another_process_cannot_drop_the_wal(
    tmp_path: Path,
) -> None:
    """The test kit's snapshot hashes the database file in another process: closing a
    descriptor of it here would drop SQLite's POSIX locks, and another process closing its
    last connection would then delete the WAL under this process's open connections."""
    db = str(tmp_path / "runtime.sqlite")
    code = (
        "import sys\nfrom maka_es.app import RuntimeApplication as R\n"
        "a = R.open(sys.argv[1]); a.open_session('s2', '/w'); a.close()"
    )
    with RuntimeApplication.open(db) as app:
        app.open_session("s1", "/w")
        wal = os.stat(db + "-wal").st_ino
        store_snapshot(app)
        subprocess.run([sys.executable, "-c", code, db], check=True)
        assert os.stat(db + "-wal").st_ino == wal
        app.open_session("s3", "/w")  # not refused: the WAL is the one this process holds
        assert sorted(app.list_sessions()) == ["s1", "s2", "s3"]
