"""SIGKILL inside a tool, restart, recovery (once and again), then the interrupted call is
settled and the session continues (issue 21; ADR 0019 and ADR 0022, amendments of 2026-12-01).

A real child commits a failed source run and executes a continuation whose provider calls a
tool; the child is SIGKILLed inside it, on the SQLite file and on PostgreSQL. A fresh
application on the same store then does what a host does at every start, ``recover()``:

* ``AppendLine`` (``never_auto_retry``), killed after its side effect: recovery cannot know
  whether it took effect, so it leaves the run unsealed, awaiting the operator, at every start
  and writes nothing. The operator attests it (applied with a result, or not applied), from
  the Python API or the ``maka-es attest`` CLI; that finishes the run's recovery, the next
  continuation's provider sees the call *with* the attested result (no dangling call), and the
  side effect happened exactly once. The same attestation again answers the same; another one
  is refused typed, and neither writes anything.
* ``Write`` (``reconcile``), killed after T1, before it touched the file: its reconciler proves
  the file unchanged, so recovery settles the call as not applied and ends the run; no operator
  is needed, the continuation's model sees "not applied", writes again, and the file is written
  exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import ToolOutcomeConflictError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import RecordingProvider, open_app
from maka_es.testing.probes import AFTER_SIDE_EFFECT, executions, store_snapshot
from maka_es.tooljournal.runtime import AFTER_T1
from maka_es.wire.codec import operation_id_for
from tests.cli.stores import cli

pytestmark = pytest.mark.crash

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
SPINE = Spine("s1", "i1", "r1", "t1")
#: ids drawn in planner order by the child: invocation, run, turn, claim
TARGET_INVOCATION, TARGET = "child-1", "child-2"
CONTINUE_STEP = 5
SENT = {"kind": "text", "text": "appended x (seen in the file by alice)"}
CONTENT = "port = 8080\n"


def _config(root: Path, id_prefix: str) -> dict[str, Any]:
    return {
        "op": "app",
        "env": {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        "id_prefix": id_prefix,
        "observation": {
            "workspaceIdentity": WORKSPACE,
            "workspacePath": "/workspace",
            "backgroundOperationsSettled": True,
            "availableToolNames": ["AppendLine", "Write"],
        },
        "tools_root": str(root),
    }


def _killed_inside(
    tmp_path: Path, store: str, tool_call: dict[str, Any], failpoint: str
) -> tuple[Path, Path]:
    """Source run, then a continuation that calls ``tool_call``; SIGKILL at ``failpoint``."""
    root = tmp_path / "tools"
    root.mkdir()
    calls = tmp_path / "provider-calls.txt"
    ledger = LedgerBuilder(SPINE, prefix="r1-")
    ledger.user("set the port")
    ledger.terminal("failed")
    steps: list[dict[str, Any]] = [
        _config(root, "child-"),
        {"op": "open_session", "session_id": "s1", "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(SPINE, workspaceIdentity=WORKSPACE)},
        {"op": "append", "run_id": "r1", "events": ledger.events},
        {
            "op": "update_header",
            "run_id": "r1",
            "patch": {"status": "failed", "failureClass": "provider_error"},
        },
        {
            "op": "continue",
            "session_id": "s1",
            "calls_file": str(calls),
            "turns": [[tool_call], [{"kind": "text", "text": "done"}]],
        },
    ]
    assert steps[CONTINUE_STEP]["op"] == "continue"
    db = tmp_path / "runtime.sqlite"
    outcome = crash_child(db, steps, failpoint=(failpoint, 1, CONTINUE_STEP), store=store)
    assert outcome.said == "INSIDE", outcome.stderr
    assert (outcome.returncode, outcome.finally_marker_written) == (-9, False)
    return root, calls


def _stored(app: RuntimeApplication) -> tuple[Any, ...]:
    """Every stored row and the last notification id: what a write would change (the file's
    bytes also change when another process, the CLI, checkpoints SQLite's WAL on close)."""
    snapshot = store_snapshot(app)
    return snapshot.rows, snapshot.max_notification_id


def _provider_runs(calls: Path) -> list[str]:
    return [line.split()[1] for line in calls.read_text().splitlines()]


def _attest(app: RuntimeApplication, store: str, via: str, operation: str, **kw: Any) -> Any:
    """The attestation report as JSON, made through the Python API or the installed CLI."""
    if via == "api":
        return app.attest_operation(TARGET, operation, actor="alice", **kw).to_dict()
    flag = "--applied" if kw["applied"] else "--not-applied"
    result = () if kw.get("result") is None else ("--result", json.dumps(kw["result"]))
    ran = cli("attest", TARGET, operation, flag, "--actor", "alice", *result, "--json", store=store)
    assert ran.code == 0, ran.err
    return ran.json()


@pytest.mark.parametrize("via", ["api", "cli"])
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not_applied"])
def test_an_interrupted_send_is_attested_after_restarts_and_the_session_continues(
    tmp_path: Path, store_url: str, via: str, applied: bool
) -> None:
    append = {"kind": "function_call", "id": "a1", "name": "AppendLine", "args": {"line": "x"}}
    root, calls = _killed_inside(tmp_path, store_url, append, AFTER_SIDE_EFFECT)
    operation = operation_id_for(TARGET_INVOCATION, "a1")
    assert executions(root) == [operation]
    waiting = {
        "operationId": operation,
        "toolName": "AppendLine",
        "recoveryMode": "never_auto_retry",
    }

    for restart in range(2):  # every start leaves it as it is, awaiting the operator
        with open_app(store_url, _config(root, f"restart{restart}-")) as app:
            before = _stored(app) if restart else None
            report = app.recover()
            assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
                (TARGET, "left_awaiting_operator", {"operations": [waiting]})
            ]
            assert app.get_run_header(TARGET).status == "running"
            assert [op.state for op in app.tool_journal.tool_operations(TARGET)] == ["prepared"]
            assert before is None or _stored(app) == before

    decision: dict[str, Any] = {"applied": applied, "result": SENT if applied else None}
    with open_app(store_url, _config(root, "parent-")) as app:
        attested = _attest(app, store_url, via, operation, **decision)
        assert (attested["created"], attested["applied"], attested["actor"]) == (
            True,
            applied,
            "alice",
        )
        # nothing else awaited the operator: the attestation finished the run's recovery
        assert [r["kind"] for r in attested["recovery"]] == ["terminal_recovered"]
        assert app.get_run_header(TARGET).status == "failed"
        assert [op.state for op in app.tool_journal.tool_operations(TARGET)] == [
            "outcome_committed"
        ]
        settled = _stored(app)
        again = _attest(app, store_url, via, operation, **decision)
        assert (again["created"], again["attestedAt"]) == (False, attested["attestedAt"])
        other_result = None if applied else SENT
        with pytest.raises(ToolOutcomeConflictError) as conflict:
            app.attest_operation(
                TARGET, operation, applied=not applied, result=other_result, actor="bob"
            )
        assert conflict.value.code == "operator_attestation_conflict"
        if via == "cli":
            flip = ("--not-applied",) if applied else ("--applied", "--result", json.dumps(SENT))
            refused = cli("attest", TARGET, operation, *flip, "--actor", "bob", store=store_url)
            assert refused.code == 1
            assert refused.err.startswith("error [operator_attestation_conflict]")
        assert _stored(app) == settled
        assert app.recover().repairs == ()

        plan = app.plan_continuation("s1", TARGET)
        assert plan.continuation is not None, plan.rejection_reasons
        provider = RecordingProvider(str(calls), [{"kind": "text", "text": "noted"}])
        outcome = app.execute_continuation(plan, provider)
        assert outcome.status == "completed"
        (request,) = provider.scripted.requests
        messages = request.openai_messages()  # refuses an unpaired tool exchange
        (asked,) = [m for m in messages if m.get("tool_calls")]
        assert [c["id"] for c in asked["tool_calls"]] == ["a1"]
        (answer,) = [m for m in messages if m["role"] == "tool"]
        assert answer["tool_call_id"] == "a1"
        if applied:
            assert answer["content"] == SENT["text"]
        else:
            assert answer["content"].startswith("operator_attested_not_applied: ")

    assert executions(root) == [operation]  # the side effect ran once, never again
    assert (root / "side-effect.txt").read_text() == "x\n"
    assert _provider_runs(calls) == [TARGET, outcome.target_run_id]


def test_a_write_killed_before_it_touched_the_file_settles_as_not_applied(
    tmp_path: Path, store_url: str
) -> None:
    write = {
        "kind": "function_call",
        "id": "w1",
        "name": "Write",
        "args": {"path": "config.toml", "content": CONTENT},
    }
    root, calls = _killed_inside(tmp_path, store_url, write, AFTER_T1)
    operation = operation_id_for(TARGET_INVOCATION, "w1")
    path = root / "workspace" / "config.toml"
    assert (executions(root), path.exists()) == ([], False)  # killed before the write

    with open_app(store_url, _config(root, "parent-")) as app:
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [
            (TARGET, "tools_recovered"),
            (TARGET, "terminal_recovered"),
        ]
        assert report.repairs[0].detail["actions"] == [
            {
                "operationId": operation,
                "toolName": "Write",
                "action": "not_applied",
                "reason": "reconcile_matches_prior_state",
            }
        ]
        assert [op.state for op in app.tool_journal.tool_operations(TARGET)] == [
            "outcome_committed"
        ]
        assert app.recover().repairs == ()

        plan = app.plan_continuation("s1", TARGET)  # no operator in between
        assert plan.continuation is not None, plan.rejection_reasons
        again = {**write, "id": "w2"}
        provider = RecordingProvider(
            str(calls), turns=[[again], [{"kind": "text", "text": "port is set"}]]
        )
        outcome = app.execute_continuation(plan, provider)
        assert outcome.status == "completed"
        first = provider.scripted.requests[0].openai_messages()
        (answer,) = [m for m in first if m["role"] == "tool"]
        assert answer["tool_call_id"] == "w1"
        assert answer["content"].startswith("reconcile_not_applied: ")
        (rewrite,) = app.tool_journal.tool_operations(outcome.target_run_id)
        assert rewrite.state == "outcome_committed"

    assert executions(root) == [rewrite.operation_id]  # the file was written exactly once
    assert path.read_text() == CONTENT
    assert _provider_runs(calls) == [TARGET, outcome.target_run_id, outcome.target_run_id]
