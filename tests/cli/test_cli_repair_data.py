"""The installed ``maka-es`` script on real SQLite stores: repair, verify, move data, errors
(docs/cli.md; ADR 0029)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from maka_es.adapters.jsonl import JsonlLedger
from maka_es.app import RuntimeApplication
from maka_es.resume.failpoint_catalog import harness_ledger
from maka_es.testing.builders import Spine, run_header
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader
from tests.cli.stores import build_store, cli, rows
from tests.support.old_recovery import seal_like_old_recovery


def test_errors_are_one_line_with_code_and_action_and_a_traceback_only_with_debug(
    tmp_path: Path,
) -> None:
    db, _ = build_store(tmp_path, dies=True)
    missing = cli("show", "nope", store=db)
    assert missing.code == 1
    assert missing.err.splitlines() == [
        "error [run_not_found]: run nope not found. what to do: "
        "Create the run first (create_run), or fix the id."
    ]
    debug = cli("--debug", "show", "nope", store=db)
    assert debug.code == 1
    assert "Traceback (most recent call last)" in debug.err
    assert debug.err.splitlines()[-1] == missing.err.splitlines()[0]

    usage = cli("plan", store=db)
    assert usage.code == 2
    assert usage.err.splitlines() == [
        "error [usage]: Missing argument 'run'. what to do: see maka-es plan --help"
    ]
    # Nothing listens on loopback port 1: a typed store fault, one line, no password.
    postgres = cli("sessions", store="postgresql://user:secret@127.0.0.1:1/maka?connect_timeout=2")
    assert postgres.code == 1
    assert postgres.err.startswith("error [store_unavailable]: ")
    assert "secret" not in postgres.err
    assert len(postgres.err.splitlines()) == 1

    nowhere = tmp_path / "absent.sqlite"
    absent = cli("sessions", store=nowhere)
    assert absent.code == 1
    assert absent.err.startswith("error [store_path_unusable]: ")
    assert not nowhere.exists()  # a read command never creates a store


def test_attest_then_recover_then_fork(tmp_path: Path) -> None:
    db, operation = build_store(tmp_path, dies=True)
    before = rows(db)
    refused = cli("attest", "r1", "toolop_nope", "--not-applied", "--actor", "alice", store=db)
    assert refused.code == 1
    assert refused.err.startswith("error [tool_operation_not_found]")
    assert rows(db) == before  # a refusal writes nothing

    argv = ("attest", "r1", operation, "--not-applied", "--actor", "alice", "--note", "not sent")
    first = cli(*argv, "--json", store=db).json()
    assert (first["runId"], first["created"]) == ("r1", True)
    assert cli(*argv, "--json", store=db).json()["created"] is False

    db2, operation2 = build_store(tmp_path / "second", dies=True)
    recovered = cli("recover", "--json", store=db2).json()
    awaiting = {
        "runId": "r1",
        "kind": "left_awaiting_operator",
        "detail": {
            "operations": [
                {"operationId": operation2, "toolName": "Send", "recoveryMode": "never_auto_retry"}
            ]
        },
    }
    assert recovered == {"repairs": [awaiting], "changedAnything": False}
    assert cli("recover", "--json", store=db2).json() == recovered  # at every start, unsealed
    # a store an older version recovered holds the run sealed: its way on is the fork
    with RuntimeApplication.open(str(db2)) as app:
        seal_like_old_recovery(app, "r1")
    fork = cli("fork", "r1", "--before", operation2, "--actor", "bob", "--json", store=db2)
    assert fork.code == 0, fork.err
    report = fork.json()
    assert (report["sourceRunId"], report["highWater"], report["actor"]) == ("r1", 1, "bob")
    runs = [r["runId"] for r in cli("runs", "s1", "--json", store=db2).json()]
    assert runs == ["r1", report["forkRunId"]]


def test_verify_is_clean_then_exits_4_on_a_genuinely_corrupted_row(tmp_path: Path) -> None:
    db, _ = build_store(tmp_path, dies=True)
    clean = cli("verify", "--json", store=db)
    assert clean.code == 0, clean.err
    report = clean.json()
    assert (report["storeIntegrity"], report["corruption"]) == ("ok", False)
    assert report["runs"] == [
        {
            "runId": "r1",
            "health": "needs_attention",
            "issues": [],
            "disposition": "blocked",
        }
    ]
    with sqlite3.connect(db) as connection:  # a stored fact that is no longer JSON
        connection.execute(
            "UPDATE stored_events SET state = ? "
            "WHERE rowid = (SELECT MAX(rowid) FROM stored_events)",
            (b"{not json",),
        )
    broken = cli("verify", "--json", store=db)
    assert broken.code == 4
    found = broken.json()
    assert found["corruption"] is True
    [row] = found["corruptRows"]
    assert "cannot be decoded" in row["error"]
    plan = cli("plan", "r1", store=db)
    assert plan.code == 4  # a corrupt store is exit 4 on any command
    assert plan.err.startswith("error [store_corruption]")


def _reference_layout(root: Path) -> Path:
    """A reference JSONL ledger (no tool-journal facts: those are written only by their own
    store commands) with one run: user, call, response."""
    ledger = JsonlLedger(root)
    spine = Spine("session-1", "invocation-run-1", "run-1", "turn-run-1")
    ledger.write_header(RunHeader.model_validate(run_header(spine)))
    for event in harness_ledger("after_function_response", spine.session_id, spine.run_id):
        ledger.append(event)
    return ledger.run_dir(spine.session_id, spine.run_id) / "runtime-events.jsonl"


def test_import_is_idempotent_and_export_gives_back_the_same_bytes(tmp_path: Path) -> None:
    events_file = _reference_layout(tmp_path / "layout")
    db = tmp_path / "store" / "runtime.sqlite"
    first = cli("import", str(tmp_path / "layout"), "--json", store=db).json()
    assert first == {"runs": 1, "appended": 3, "retried": 0}
    again = cli("import", str(tmp_path / "layout"), "--json", store=db).json()
    assert again == {"runs": 1, "appended": 0, "retried": 3}
    assert cli("export", "run-1", store=db).out == events_file.read_text()
    openai = cli("export", "run-1", "--format", "openai", store=db).json()
    assert [m["role"] for m in openai] == ["user", "assistant", "tool"]
    anthropic = cli("export", "run-1", "--format", "anthropic", store=db).json()
    assert [m["role"] for m in anthropic] == ["user", "assistant", "user"]
    out = tmp_path / "out"
    assert cli("export", "run-1", "-o", str(out), store=db).code == 0
    assert (out / events_file.relative_to(tmp_path / "layout")).read_text() == (
        events_file.read_text()
    )
    not_a_dir = cli("import", str(tmp_path / "missing"), store=db)
    assert not_a_dir.code == 2


def test_schema_is_the_json_schema_of_runtime_event() -> None:
    schema = cli("schema").json()
    assert schema == RuntimeEvent.model_json_schema(by_alias=True)
    assert {"id", "sessionId", "runId", "content"} <= set(schema["properties"])
