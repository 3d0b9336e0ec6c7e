"""ADR 0026: a writer folds its own plain events from memory only when the stored row is
byte-identical to what it wrote; any other row is decoded and validated from the store. The
writer's answers and next decisions are the plain loader's (``MAKA_ES_FAST_PATHS=n``).

Real SQLite file, real tool steps through ``ToolRuntime``; the "cold" side is a fresh
application on the same file, which reads everything from the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.app import RuntimeApplication
from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import RuntimeEventRecorded
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime
from tests.support.load_paths import Pair, assert_same_as_plain

RECORDED = RuntimeEventRecorded.TOPIC


class Echo(BaseModel):
    text: str
    n: float | None = None


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


def _wire(app: RuntimeApplication) -> list[str]:
    """The ledger as JSON text that tells 1 from 1.0 (what a host would export)."""
    return [json.dumps(e.to_wire(), sort_keys=True) for e in app.read_run_events("r1")]


def _tamper_last_row(db_path: Path, edit: Any) -> None:
    with sqlite3.connect(db_path) as db:
        rowid, state = db.execute(
            "SELECT rowid, state FROM stored_events WHERE topic = ? ORDER BY rowid DESC LIMIT 1",
            (RECORDED,),
        ).fetchone()
        db.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (edit(state), rowid))


def _tool_step(pair: Pair, args: dict[str, Any]) -> str:
    """One tool step through ``ToolRuntime`` on both sides; the call's event id."""
    call = LedgerBuilder().call("c1", "Echo", args)
    for app in (pair.fast, pair.plain):
        ToolRuntime(app.tool_journal, [Tool("Echo", Echo, _echo)]).execute("r1", call)
        app.tool_journal.tool_operations("r1")  # the cache fast-forwards over T2
    return str(call["id"])


def test_own_plain_events_answer_as_the_plain_loader(tmp_path: Path) -> None:
    """The writer's fold of its own plain events (from memory) answers and decides as the
    plain loader does (issue 22, part 4: was "not parsed again", a parse count)."""
    pair = Pair(str(tmp_path / "fast.sqlite"), str(tmp_path / "plain.sqlite"))
    try:
        _tool_step(pair, {"text": "hi", "n": 0.5})
        assert [op.state for op in pair.fast.tool_journal.tool_operations("r1")] == [
            "outcome_committed"
        ]
        assert_same_as_plain(pair)
    finally:
        pair.close()


def test_a_non_plain_event_answers_as_the_plain_loader(tmp_path: Path) -> None:
    """A non-plain event (``1.0``, stored as ``1``) reads back as the store holds it, as the
    plain loader reads it (was "parsed from the store", a parse count)."""
    pair = Pair(str(tmp_path / "fast.sqlite"), str(tmp_path / "plain.sqlite"))
    try:
        _tool_step(pair, {"text": "hi", "n": 1.0})
        assert pair.fast.read_run_events("r1")[-3].to_wire()["content"]["args"] == {
            "text": "hi",
            "n": 1,
        }
        assert_same_as_plain(pair)
    finally:
        pair.close()


def test_warm_state_equals_a_cold_reload(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path
) -> None:
    runtime = ToolRuntime(sqlite_app.tool_journal, [Tool("Echo", Echo, _echo)])
    for i, n in enumerate([0.5, 1.0, None, 2.25, 1e-7]):
        args = {"text": f"t{i} \u00e9\u2028"} | ({} if n is None else {"n": n})
        runtime.execute("r1", ledger.call(f"c{i}", "Echo", args))
    warm = (
        _wire(sqlite_app),
        sqlite_app.tool_journal.tool_operations("r1"),
        sqlite_app.tool_journal.resolve_run("r1"),
    )
    cold_app = RuntimeApplication.open_sqlite(str(db_path))
    try:
        cold = (
            _wire(cold_app),
            cold_app.tool_journal.tool_operations("r1"),
            cold_app.tool_journal.resolve_run("r1"),
        )
    finally:
        cold_app.close()
    assert warm == cold


def test_a_row_changed_after_the_commit_is_read_from_the_store(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path
) -> None:
    ledger.text("the original text")
    sqlite_app.ledger.append_events("r1", ledger.events[-1:])
    _tamper_last_row(db_path, lambda state: state.replace(b"original", b"tampered"))
    texts = [e.to_wire()["content"].get("text") for e in sqlite_app.read_run_events("r1")]
    assert texts[-1] == "the tampered text"  # not the remembered event


def test_a_corrupt_row_after_the_commit_is_still_caught(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, db_path: Path
) -> None:
    ledger.text("soon corrupt")
    sqlite_app.ledger.append_events("r1", ledger.events[-1:])
    _tamper_last_row(db_path, lambda state: state.replace(b"soon corrupt", b'soon"corrupt'))
    with pytest.raises(StoreCorruptionError):
        sqlite_app.read_run_events("r1")
