"""The installed ``maka-es`` script, in subprocesses, on real SQLite stores: inspect and
decide commands, their ``--json`` shapes and exit codes (docs/cli.md; ADR 0029)."""

from __future__ import annotations

from pathlib import Path

from maka_es.app import RuntimeApplication
from tests.cli.stores import build_store, cli, rows


def test_inspect_commands_print_their_documented_json_shapes(tmp_path: Path) -> None:
    db, operation = build_store(tmp_path, dies=True)
    before = rows(db)

    [session] = cli("sessions", "--json", store=db).json()
    assert set(session) == {"sessionId", "cwd", "workspaceIdentity", "openedAt", "runIds"}
    assert (session["sessionId"], session["runIds"]) == ("s1", ["r1"])

    [run] = cli("runs", "s1", "--json", store=db).json()
    assert (run["runId"], run["status"], run["sessionId"]) == ("r1", "running", "s1")
    assert cli("runs", "--status", "failed", "--json", store=db).json() == []

    shown = cli("show", "r1", "--json", store=db).json()
    assert shown["header"]["runId"] == "r1"
    assert [e["lane"] for e in shown["events"]] == ["ordinary", "function_call", "tool_dispatch"]
    call = shown["events"][1]
    assert set(call) == {
        "seq", "eventId", "lane", "role", "tool", "operationId", "operationState", "decision",
        "terminal",
    }  # fmt: skip
    assert (call["seq"], call["tool"], call["operationState"]) == (2, "Send", "prepared")
    assert call["decision"] == "indeterminate/dispatch_without_response"

    [op] = cli("ops", "r1", "--json", store=db).json()
    assert (op["operationId"], op["journalState"], op["recoveryMode"]) == (
        operation,
        "prepared",
        "never_auto_retry",
    )
    assert (op["decision"]["status"], op["decision"]["reason"]) == (
        "indeterminate",
        "dispatch_without_response",
    )
    table = cli("show", "r1", store=db)
    assert table.code == 0
    assert "operation state" in table.out
    assert "dispatch_without_response" in table.out
    assert rows(db) == before  # reading never writes


def test_plan_blocked_exits_3_with_the_reference_field_names(tmp_path: Path) -> None:
    db, _ = build_store(tmp_path, dies=True)
    before = rows(db)
    blocked = cli("plan", "r1", "--json", store=db)
    assert blocked.code == 3
    plan = blocked.json()
    assert plan["disposition"] == "blocked"
    assert plan["rejectionReasons"] == ["dangling_tool_state"]
    assert plan["sourceRuntimeEventHighWater"] == 3
    assert plan["requiresVerification"] is True
    stale = cli("plan", "r1", "--expected-high-water", "2", "--json", store=db)
    assert stale.code == 3
    assert "runtime_offset_mismatch" in stale.json()["rejectionReasons"]
    assert rows(db) == before


def test_plan_of_a_settled_run_exits_0(tmp_path: Path) -> None:
    db, _ = build_store(tmp_path, dies=False)
    done = cli("plan", "r1", store=db)
    assert done.code == 0, done.err
    assert "safe_replay" in done.out


def test_continue_dry_run_plans_then_executes_with_the_scripted_provider(tmp_path: Path) -> None:
    db, _ = build_store(tmp_path, dies=False)
    assert cli("recover", "--json", store=db).code == 0  # the source run ends failed
    before = rows(db)

    dry = cli("continue", "s1", "--dry-run", "--tool", "Send", "--json", store=db)
    assert dry.code == 0, dry.err
    assert dry.json()["plan"]["disposition"] == "continue"
    assert "outcome" not in dry.json()
    assert rows(db) == before  # a dry run never writes

    ran = cli("continue", "s1", "--tool", "Send", "--json", store=db)
    assert ran.code == 0, ran.err
    outcome = ran.json()["outcome"]
    assert (outcome["status"], outcome["steps"]) == ("completed", 1)
    runs = cli("runs", "s1", "--json", store=db).json()
    assert [r["runId"] for r in runs] == ["r1", outcome["targetRunId"]]

    again = cli("continue", "s1", "--tool", "Send", "--json", store=db)
    assert again.code == 3
    assert again.json()["plan"]["rejectionReasons"] == ["continuation_already_exists"]


def test_continue_with_an_unknown_provider_is_a_usage_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    db, _ = build_store(tmp_path, dies=False)
    assert cli("recover", store=db).code == 0
    before = rows(db)
    bad = cli("continue", "s1", "--tool", "Send", "--provider", "no_such_module:make", store=db)
    assert bad.code == 2
    assert bad.err.startswith("error [usage]: --provider module 'no_such_module'")
    assert rows(db) == before


def test_report_writes_the_run_page_and_the_session_page(tmp_path: Path) -> None:
    db, _ = build_store(tmp_path, dies=True)
    before = rows(db)
    page = tmp_path / "run.html"
    ran = cli("report", "r1", "-o", str(page), store=db)
    assert ran.code == 0, ran.err
    assert ran.out.strip() == str(page)
    html = page.read_text()
    with RuntimeApplication.open_sqlite(str(db)) as app:
        event_ids = [event.id for event in app.read_run_events("r1")]
    assert event_ids
    assert all(f'data-event-id="{event_id}"' in html for event_id in event_ids)
    session_page = tmp_path / "session.html"
    assert cli("report", "--session", "s1", "-o", str(session_page), store=db).code == 0
    assert 'data-event-id="' in session_page.read_text()
    neither = cli("report", store=db)
    assert neither.code == 2
    assert neither.err.startswith("error [usage]: ")
    assert rows(db) == before  # reporting never writes
