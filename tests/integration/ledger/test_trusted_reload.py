"""Reopening a run on the real SQLite file (ADR 0025): every append stores the digest of its
payload; a reopened run reads the same events back and plans exactly as a full fold of them;
bytes changed in the file are refused with a typed error and nothing is written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import InvalidRuntimeEventError
from maka_es.ledger.model.facts import RuntimeEventRecorded, payload_digest_of
from maka_es.resume.plan import build_resume_plan
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.testing.probes import store_snapshot
from tests.conftest import FixedClock

TOPIC = RuntimeEventRecorded.TOPIC


def _write_run(db: Path, *, interrupted: bool) -> None:
    """A user turn, one finished tool step and (``interrupted``) a T1 without its T2."""
    app = RuntimeApplication.open_sqlite(str(db), clock=FixedClock())
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(Spine()))
    kit = Events.wire()
    app.ledger.append_events("r1", [kit.user("fix the port", event_id="u1", marker=True)])
    app.tool_journal.commit_tool_prepared(
        "r1", kit.call("c1", "Echo", {"text": "a"}, event_id="call1")
    )
    app.tool_journal.commit_tool_outcome("r1", kit.bound_response("c1", "Echo", {"text": "a"}))
    app.ledger.append_events("r1", [kit.text("done with c1", event_id="m1")])
    if interrupted:
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call("c2", "Echo", {"n": 2.5}, event_id="call2")
        )
    app.close()


def _reopen(db: Path) -> RuntimeApplication:
    return RuntimeApplication.open_sqlite(str(db), clock=FixedClock())


@pytest.mark.parametrize("interrupted", [False, True])
def test_a_reopened_run_plans_as_a_full_fold_of_its_events(
    db_path: Path, interrupted: bool
) -> None:
    _write_run(db_path, interrupted=interrupted)
    app = _reopen(db_path)
    try:
        events = app.read_run_events("r1")
        plan = app.plan_resume("r1")
        assert plan == build_resume_plan(events)
        assert plan == build_resume_plan([e.to_wire() for e in events])  # re-parsed strictly
        assert plan.disposition == ("blocked" if interrupted else "safe_replay")
        assert app.plan_resume("r1", expected_high_water=1) == build_resume_plan(events, 1)
        payloads = app.ledger.read_run_payloads("r1")
    finally:
        app.close()
    connection = sqlite3.connect(str(db_path))
    rows = connection.execute(
        "SELECT state FROM stored_events WHERE topic = ? ORDER BY rowid", (TOPIC,)
    ).fetchall()
    connection.close()
    stored = [json.loads(row[0]) for row in rows]
    assert [fact["payload"] for fact in stored] == payloads
    assert all(fact["payload_digest"] == payload_digest_of(fact["payload"]) for fact in stored)


def _rewrite(db: Path, old: str, new: str) -> None:
    old, new = old.replace('"', '\\"'), new.replace('"', '\\"')
    connection = sqlite3.connect(str(db))
    with connection:
        changed = connection.execute(
            "UPDATE stored_events SET state = CAST(replace(state, ?, ?) AS BLOB) "
            "WHERE topic = ? AND instr(state, ?)",
            (old, new, TOPIC, old),
        ).rowcount
    connection.close()
    assert changed == 1


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        # no longer a valid event: the strict reader's error, as before ADR 0025
        ('"text":"done with c1"', '"text":7', InvalidRuntimeEventError),
    ],
)
def test_bytes_changed_in_the_file_are_refused_and_nothing_is_written(
    db_path: Path, old: str, new: str, error: type[Exception]
) -> None:
    _write_run(db_path, interrupted=False)
    # the payload is a JSON string inside the stored row: its quotes are escaped there
    _rewrite(db_path, old, new)
    app = _reopen(db_path)
    try:
        before = store_snapshot(app)
        with pytest.raises(error):
            app.plan_resume("r1")
        with pytest.raises(error):
            app.ledger.append_events(
                "r1", [Events.wire().text("after the corruption", event_id="m9")]
            )
        assert store_snapshot(app) == before
    finally:
        app.close()
