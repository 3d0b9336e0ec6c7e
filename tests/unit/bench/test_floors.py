"""The floors of issue 23 (bench/journal.py, bench/child.py): the minimal Python journal makes
the same decisions a maka_es tool step makes (the same args hash, operation id, event ids,
rows and two commits) on a real SQLite file, and a contender in a long-lived child process
answers batch after batch, or fails loudly. No timing is asserted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench.child import Child
from bench.contenders import load_commits, save_commits
from bench.journal import MinimalJournal
from bench.stores import max_rowid, open_app, rows_after, spine, start_run, tool_call
from bench.w_agent import window
from bench.w_tool_step import step_rows


def _payloads(path: Path, after: int) -> list[dict[str, Any]]:
    return [json.loads(json.loads(state)["payload"]) for _, _, _, state in rows_after(path, after)]


def _dispatch(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if "toolDispatch" in e.get("actions", {}))


def test_the_minimal_journal_writes_what_a_maka_es_step_writes(tmp_path: Path) -> None:
    run = spine("r1")
    app = open_app(tmp_path / "maka.sqlite")
    start_run(app, "r1")
    before = max_rowid(tmp_path / "maka.sqlite")
    app.tool_runtime.execute("r1", tool_call(run, 1))
    app.close()
    maka = _payloads(tmp_path / "maka.sqlite", before)
    journal = MinimalJournal(tmp_path / "journal.sqlite")
    assert journal.execute("r1", tool_call(run, 1)) == {"kind": "text", "text": "step 1"}
    journal.close()
    mine = _payloads(tmp_path / "journal.sqlite", 0)
    assert [e["id"] for e in mine] == [e["id"] for e in maka]  # call, dispatch, response
    assert _dispatch(mine)["actions"] == _dispatch(maka)["actions"]  # same hash, same op id
    assert mine[-1]["content"] == maka[-1]["content"]


def test_the_minimal_journal_commits_twice_and_refuses_a_second_dispatch(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    journal = MinimalJournal(path)
    commits: list[int] = []
    journal.conn.set_trace_callback(lambda sql: commits.append(1) if sql == "COMMIT" else None)
    journal.execute("r1", tool_call(spine("r1"), 1))
    assert len(commits) == 2
    with pytest.raises(RuntimeError, match="already dispatched"):
        journal.execute("r1", tool_call(spine("r1"), 1))
    journal.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0] == 3


def test_a_child_contender_answers_batch_after_batch(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    commits = step_rows(tmp_path / "probe")
    save_commits(rows, commits)
    assert load_commits(rows) == commits
    with Child("floor", path=str(tmp_path / "floor.sqlite"), batch=3, rows=str(rows)) as child:
        first, second = child.batch(), child.batch()
    assert (len(first), len(second)) == (3, 3)
    assert child.proc.returncode == 0
    assert max_rowid(tmp_path / "floor.sqlite") == 2 * 3 * sum(len(c) for c in commits)


def test_a_child_that_cannot_start_fails_loudly(tmp_path: Path) -> None:
    child = Child("floor", path=str(tmp_path / "floor.sqlite"), batch=1, rows="/nonexistent.json")
    with pytest.raises(RuntimeError, match="ended"):
        child.batch()
    child.close()
    assert child.proc.returncode != 0


def test_the_agent_windows_pick_the_steps_taken_at_each_run_length() -> None:
    samples = [float(k) for k in range(200)]
    near_50 = window(samples, 50)
    assert near_50 == [float(k) for k in range(12, 22)]  # 1 + 3k within 15 of 50
    assert all(abs(1 + 3 * k - 500) <= 15 for k in map(int, window(samples, 500)))


def test_a_maka_es_child_reports_its_cpu_time_per_step(tmp_path: Path) -> None:
    with Child("maka", path=str(tmp_path / "maka.sqlite"), batch=3) as child:
        wall = child.batch()
        assert len(wall) == 3
        assert len(child.last_cpu_steps) == 3
        assert all(cpu > 0 for cpu in child.last_cpu_steps)
        assert child.last_cpu > 0
