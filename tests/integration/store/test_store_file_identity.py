"""A store file deleted or replaced under a live application never acknowledges a write.

Why it matters: SQLite keeps writing to the inodes it opened. Once the database and its
``-wal``/``-shm`` are unlinked (or another file is moved into the path), a commit still
"succeeds", into a file nobody can open again: the caller is told "durable" and the fact is
lost. The store compares the path's ``(st_dev, st_ino)`` with the file it opened inside every
write transaction, before COMMIT, and refuses with ``store_unavailable`` (ADR 0014).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreUnavailableError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import append_line_tool, executions
from maka_es.tooljournal.runtime import ToolRuntime

SIDECARS = ("", "-wal", "-shm")


def _unlink_store(db: Path) -> None:
    for suffix in SIDECARS:
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _replace_store(db: Path, replacement: Path) -> None:
    """Another (closed, complete) store file is moved into the path; the old sidecars go."""
    for suffix in SIDECARS[1:]:
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.replace(replacement, db)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seeded(db: Path) -> tuple[RuntimeApplication, LedgerBuilder]:
    app = RuntimeApplication.open_sqlite(str(db))
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user()
    app.ledger.append_events("r1", ledger.events)
    return app, ledger


def _other_store(path: Path) -> Path:
    """A valid store of its own (one run, one event) to move into the live store's path."""
    with RuntimeApplication.open_sqlite(str(path)) as other:
        other.open_session("s1", "/workspace")
        other.ledger.create_run(run_header())
        ledger = LedgerBuilder(prefix="other-")
        ledger.user("from the other store")
        other.ledger.append_events("r1", ledger.events)
    assert not Path(f"{path}-wal").exists()  # closed cleanly: one self-contained file
    return path


@pytest.fixture
def live(db_path: Path) -> Iterator[tuple[RuntimeApplication, LedgerBuilder]]:
    app, ledger = _seeded(db_path)
    yield app, ledger
    app.close()


Write = Callable[[RuntimeApplication, LedgerBuilder, Path], object]


def _append(app: RuntimeApplication, ledger: LedgerBuilder, root: Path) -> object:
    return app.ledger.append_event("r1", ledger.text("lost?"))


def _tool_t1(app: RuntimeApplication, ledger: LedgerBuilder, root: Path) -> object:
    tool = append_line_tool(root)
    return ToolRuntime(app.tool_journal, [tool]).execute(
        "r1", ledger.call("c1", tool.name, {"line": "x"})
    )


def _commit_t1(app: RuntimeApplication, ledger: LedgerBuilder, root: Path) -> object:
    return app.tool_journal.commit_tool_prepared(
        "r1", ledger.call("c2", "Bash", {"command": "rm -rf x"})
    )


WRITES: dict[str, Write] = {
    "append": _append,
    "tool T1 (ToolRuntime)": _tool_t1,
    "commit_tool_prepared": _commit_t1,
}


@pytest.mark.parametrize("write", list(WRITES.values()), ids=list(WRITES))
def test_write_after_the_store_files_were_deleted_is_refused(
    live: tuple[RuntimeApplication, LedgerBuilder], db_path: Path, tmp_path: Path, write: Write
) -> None:
    app, ledger = live
    _unlink_store(db_path)
    root = tmp_path / "side-effects"
    root.mkdir()

    with pytest.raises(StoreUnavailableError) as info:
        write(app, ledger, root)

    assert info.value.code == "store_unavailable"
    assert info.value.detail == {"reason": "store_file_deleted", "path": str(db_path)}
    assert str(db_path) in str(info.value)
    assert executions(root) == []  # T1 refused: the tool's side effect never ran
    assert not any(Path(f"{db_path}{s}").exists() for s in SIDECARS)  # no new empty store
    with pytest.raises(StoreUnavailableError):  # and it keeps refusing: nothing is half-known
        write(app, ledger, root)


@pytest.mark.parametrize("write", list(WRITES.values()), ids=list(WRITES))
def test_write_after_another_file_was_moved_into_the_path_is_refused(
    live: tuple[RuntimeApplication, LedgerBuilder], db_path: Path, tmp_path: Path, write: Write
) -> None:
    app, ledger = live
    _replace_store(db_path, _other_store(tmp_path / "other.sqlite"))
    replacement_digest = _digest(db_path)
    root = tmp_path / "side-effects"
    root.mkdir()

    with pytest.raises(StoreUnavailableError) as info:
        write(app, ledger, root)

    assert info.value.code == "store_unavailable"
    assert info.value.detail == {"reason": "store_file_replaced", "path": str(db_path)}
    assert executions(root) == []
    assert _digest(db_path) == replacement_digest  # the file now at the path is untouched
    app.close()
    with RuntimeApplication.open_sqlite(str(db_path), read_only=True) as reopened:
        assert [e.id for e in reopened.read_run_events("r1")] == ["other-1"]


def test_a_delete_inside_the_write_transaction_is_caught_before_commit(
    live: tuple[RuntimeApplication, LedgerBuilder], db_path: Path
) -> None:
    """The check sits after the inserts, immediately before COMMIT: a file deleted while the
    transaction is open (here: at the failpoint inside it) is still refused."""
    app, ledger = live
    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, lambda _: _unlink_store(db_path))
    try:
        with pytest.raises(StoreUnavailableError) as info:
            app.ledger.append_event("r1", ledger.text())
    finally:
        failpoints.disarm()
    assert info.value.detail["reason"] == "store_file_deleted"


def test_writes_to_a_store_left_in_place_are_acknowledged(
    live: tuple[RuntimeApplication, LedgerBuilder], db_path: Path, tmp_path: Path
) -> None:
    """The check refuses only a changed file: a copy of the store elsewhere changes nothing,
    and a reopened application pins the file it opened."""
    app, ledger = live
    shutil.copy(db_path, tmp_path / "backup.sqlite")
    assert app.ledger.append_event("r1", ledger.text()).appended == 1
    app.close()
    with RuntimeApplication.open_sqlite(str(db_path)) as reopened:
        assert reopened.ledger.append_event("r1", ledger.text("again")).appended == 1
        assert reopened.ledger.run_high_water("r1") == 3
