"""Reopening a run on the real SQLite file (ADR 0025): a dispatch and its call whose rows still
match their digests are not re-hashed, and the run plans and decides as the plain loader; a
row whose bytes changed (so its digest no longer matches) is hashed as before, and a changed
args hash or changed call args is still caught as ``canonical_args_hash_conflict``, with
nothing written."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import ToolLedgerCorruptionError
from maka_es.ledger.model.facts import RuntimeEventRecorded
from maka_es.resume.plan import build_resume_plan
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.model import scanner
from maka_es.tooljournal.model.bundle import hash_or_none
from tests.conftest import FixedClock
from tests.support.load_paths import NEXT_STEPS, PLAIN, answers, apply

TOPIC = RuntimeEventRecorded.TOPIC
ARGS = {"path": "notes-call-args.txt"}


def _write_run(db: Path) -> str:
    """A user turn and two finished tool steps; returns c1's dispatch args hash."""
    app = RuntimeApplication.open_sqlite(str(db), clock=FixedClock())
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(Spine()))
    kit = Events.wire()
    app.ledger.append_events("r1", [kit.user("write the notes", event_id="u1", marker=True)])
    for call_id in ("c1", "c2"):
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call(call_id, "Write", ARGS, event_id=f"{call_id}-e")
        )
        app.tool_journal.commit_tool_outcome(
            "r1", kit.bound_response(call_id, "Write", {"ok": True})
        )
    (dispatch,) = [e for e in app.read_run_events("r1") if e.id.endswith("_dispatch")][:1]
    app.close()
    assert dispatch.actions is not None
    assert dispatch.actions.tool_dispatch is not None
    return dispatch.actions.tool_dispatch.canonical_args_hash


def _rewrite_first(db: Path, old: str, new: str) -> None:
    """Replace ``old`` in the first stored event row holding it (the payload is a JSON string
    inside the row, so its quotes are escaped there)."""
    old, new = old.replace('"', '\\"'), new.replace('"', '\\"')
    connection = sqlite3.connect(str(db))
    with connection:
        (rowid,) = connection.execute(
            "SELECT min(rowid) FROM stored_events WHERE topic = ? AND instr(state, ?)",
            (TOPIC, old),
        ).fetchone()
        changed = connection.execute(
            "UPDATE stored_events SET state = CAST(replace(state, ?, ?) AS BLOB) WHERE rowid = ?",
            (old, new, rowid),
        ).rowcount
    connection.close()
    assert changed == 1


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Tool names whose call arguments the resolver's scanner hashed."""
    names: list[str] = []

    def counting(tool_name: str, args: object) -> str | None:
        names.append(tool_name)
        return hash_or_none(tool_name, args)

    monkeypatch.setattr(scanner, "hash_or_none", counting)
    return names


def test_a_reopened_clean_run_plans_and_decides_as_the_plain_loader(db_path: Path) -> None:
    """The trusted reload (verified rows, their args not hashed again) plans as a full fold and
    as the plain loader, and takes the same next decisions (issue 22, part 4: was "not
    re-hashed", a count of the scanner's hash calls)."""
    _write_run(db_path)
    twin = db_path.with_name("twin.sqlite")
    shutil.copyfile(db_path, twin)
    fast = RuntimeApplication.open_sqlite(str(db_path), clock=FixedClock())
    plain = RuntimeApplication.open_sqlite(str(twin), clock=FixedClock(), env=PLAIN)
    try:
        plan = fast.plan_resume("r1")
        assert plan.disposition == "safe_replay"
        assert plan == build_resume_plan(fast.read_run_events("r1"))  # a full fold
        assert answers(fast) == answers(plain)
        for step in NEXT_STEPS:
            assert apply(fast, step) == apply(plain, step), step
        assert answers(fast) == answers(plain)
    finally:
        fast.close()
        plain.close()


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda h: (h, "sha256:" + "0" * 64), id="dispatch-args-hash"),
        pytest.param(lambda h: ('"notes-call-args.txt"', '"other.txt"'), id="call-args"),
    ],
)
def test_a_changed_row_is_hashed_and_its_conflict_caught(
    db_path: Path, hashed: list[str], corrupt: object
) -> None:
    args_hash = _write_run(db_path)
    old, new = corrupt(args_hash)  # type: ignore[operator]
    _rewrite_first(db_path, old, new)
    hashed.clear()
    app = RuntimeApplication.open_sqlite(str(db_path), clock=FixedClock())
    try:
        before = store_snapshot(app)
        plan = app.plan_resume("r1")
        assert hashed == ["Write"]  # only the pair with a changed row
        assert plan.disposition == "blocked"
        assert [d.detail for d in plan.diagnostics if d.code == "tool_ledger_corruption"] == [
            {"issueCode": "canonical_args_hash_conflict"}
        ]
        assert [op.status for op in plan.operations] == ["corruption", "succeeded"]
        assert plan == build_resume_plan(app.read_run_events("r1"))
        with pytest.raises(ToolLedgerCorruptionError) as refused:
            app.tool_journal.commit_tool_prepared("r1", Events.wire().call("c3", "Write", ARGS))
        assert refused.value.detail["issueCode"] == "canonical_args_hash_conflict"
        assert store_snapshot(app) == before
    finally:
        app.close()
