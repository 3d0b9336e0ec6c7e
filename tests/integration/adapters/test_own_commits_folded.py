"""ADR 0026: after its own commit, a writer folds its committed facts from memory instead of
reading them back, only while SQLite's ``data_version`` proves no other connection committed.

Real SQLite file; the other writers are a second application in this process (its own
connection pool) and a child process; a row changed by raw SQL stands for any foreign write."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreCorruptionError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime

CHILD_APPEND = """
import json, sys
from maka_es import failpoints
from maka_es.app import RuntimeApplication
app = RuntimeApplication.open_sqlite(sys.argv[1])
app.ledger.append_events("r1", [json.loads(sys.argv[2])])
app.close()
"""


class Echo(BaseModel):
    text: str


def _echo(args: Echo, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": args.text}


@pytest.fixture
def ledger(sqlite_app: RuntimeApplication) -> LedgerBuilder:
    sqlite_app.open_session("s1", "/workspace")
    sqlite_app.ledger.create_run(run_header())
    builder = LedgerBuilder()
    builder.user(marker=True)
    sqlite_app.ledger.append_events("r1", builder.events)
    return builder


@pytest.fixture
def reads(sqlite_app: RuntimeApplication, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The stored rows each stream read of ``sqlite_app``'s recorder returned."""
    seen: list[int] = []
    recorder = sqlite_app._es.recorder
    original = recorder.select_events

    def counting(*args: Any, **kwargs: Any) -> Any:
        rows = original(*args, **kwargs)
        seen.append(len(rows))
        return rows

    monkeypatch.setattr(recorder, "select_events", counting)
    return seen


def _step(app: RuntimeApplication, ledger: LedgerBuilder, call_id: str) -> None:
    ToolRuntime(app.tool_journal, [Tool("Echo", Echo, _echo)]).execute(
        "r1", ledger.call(call_id, "Echo", {"text": call_id})
    )


def _texts(app: RuntimeApplication) -> list[Any]:
    return [e.to_wire().get("content", {}).get("text") for e in app.read_run_events("r1")]


def test_own_commits_are_folded_without_reading_them_back(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, reads: list[int]
) -> None:
    _step(sqlite_app, ledger, "c1")
    _step(sqlite_app, ledger, "c2")
    assert [op.state for op in sqlite_app.tool_journal.tool_operations("r1")] == [
        "outcome_committed"
    ] * 2
    assert reads == []  # T1 and T2 of both steps were folded from memory


def test_another_app_on_the_same_file_is_seen(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path, reads: list[int]
) -> None:
    _step(sqlite_app, ledger, "c1")
    other = RuntimeApplication.open_sqlite(str(db_path))
    try:
        ledger.text("from the other app")
        other.ledger.append_events("r1", ledger.events[-1:])
    finally:
        other.close()
    assert _texts(sqlite_app)[-1] == "from the other app"
    assert reads  # the commit of another connection sent the load to the store
    _step(sqlite_app, ledger, "c2")  # and the cached Run is at the right version to write on
    assert len(sqlite_app.tool_journal.tool_operations("r1")) == 2


def test_another_process_commit_is_seen(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path
) -> None:
    _step(sqlite_app, ledger, "c1")
    ledger.text("from the other process")
    event = json.dumps(ledger.events[-1])
    subprocess.run([sys.executable, "-c", CHILD_APPEND, str(db_path), event], check=True)
    assert _texts(sqlite_app)[-1] == "from the other process"


def test_a_foreign_write_to_another_stream_still_sends_the_load_to_the_store(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path, reads: list[int]
) -> None:
    """The proof is about the whole file: any other connection's commit voids it."""
    _step(sqlite_app, ledger, "c1")
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE unrelated (x INTEGER)")
    sqlite_app.tool_journal.tool_operations("r1")
    assert reads == [1]  # the T2 fact, read from the store


def test_a_row_corrupted_after_the_commit_is_still_refused(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path
) -> None:
    _step(sqlite_app, ledger, "c1")
    with sqlite3.connect(db_path) as db:
        rowid, state = db.execute(
            "SELECT rowid, state FROM stored_events ORDER BY rowid DESC LIMIT 1"
        ).fetchone()
        db.execute(
            "UPDATE stored_events SET state = ? WHERE rowid = ?", (state[:-2] + b"!!", rowid)
        )
    with pytest.raises(StoreCorruptionError):
        sqlite_app.read_run_events("r1")


def _raise_inside_save(name: str) -> None:
    raise RuntimeError(f"simulated failure at {name}")


def test_after_a_failed_write_the_next_load_reads_the_store(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, reads: list[int]
) -> None:
    _step(sqlite_app, ledger, "c1")
    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, _raise_inside_save)
    try:
        ledger.text("never committed")
        with pytest.raises(RuntimeError, match="simulated failure"):
            sqlite_app.ledger.append_events("r1", ledger.events[-1:])
    finally:
        failpoints.disarm()
    assert reads == []  # the failed command folded c1's T2 from memory before its write
    assert "never committed" not in _texts(sqlite_app)
    assert reads == [0]  # nothing is proven after a failed write: the store was asked


def test_a_load_after_the_fold_reads_nothing_while_nobody_else_wrote(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, reads: list[int]
) -> None:
    """ADR 0046: with its own facts folded (a read between two commands, as the agent loop
    reads its run before each model turn) the next command finds the cached Run at the head it
    wrote, and nobody committed since: it asks the store for nothing."""
    _step(sqlite_app, ledger, "c1")
    assert _texts(sqlite_app)[-1] is None  # folds c1's T2 from memory
    ledger.text("next")
    sqlite_app.ledger.append_events("r1", ledger.events[-1:])
    _step(sqlite_app, ledger, "c2")
    assert _texts(sqlite_app)[-1] is None
    assert len(sqlite_app.tool_journal.tool_operations("r1")) == 2
    assert reads == []


def test_after_the_fold_another_apps_commit_is_still_seen(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path, reads: list[int]
) -> None:
    _step(sqlite_app, ledger, "c1")
    _texts(sqlite_app)  # nothing of this process's own is left to fold
    other = RuntimeApplication.open_sqlite(str(db_path))
    try:
        ledger.text("from the other app")
        other.ledger.append_events("r1", ledger.events[-1:])
    finally:
        other.close()
    assert _texts(sqlite_app)[-1] == "from the other app"
    assert reads == [1]  # the other connection's commit sent the load to the store
    _step(sqlite_app, ledger, "c2")  # and the cached Run is at the right version to write on
    assert len(sqlite_app.tool_journal.tool_operations("r1")) == 2


def test_after_the_fold_a_raw_write_to_another_table_still_sends_the_load_to_the_store(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path, reads: list[int]
) -> None:
    _step(sqlite_app, ledger, "c1")
    _texts(sqlite_app)
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE unrelated (x INTEGER)")
    sqlite_app.tool_journal.tool_operations("r1")
    assert reads == [0]  # asked, and nothing new was there
