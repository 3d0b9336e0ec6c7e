"""SIGKILL inside a tool of a continuation run, then restart (issue 11 §1; ADR 0020).

A real child commits a failed source run and executes a continuation whose provider calls a
tool and would then answer with text; the child is SIGKILLed inside the tool, after its side
effect and before T2. A fresh application on the same file then does what a host does at
start: ``recover()`` with its tool catalogue, then plans a continuation of the session, which
is now a continuation of the continuation.

* ``Write`` (recovery mode ``reconcile``): recovery proves from the file that the write landed,
  settles the operation with a recovery bundle and ends the run; the second continuation's
  boundary covers both generations, its provider sees the call and its reconciled result, it
  completes, and the file was written exactly once (probe log, inode, mtime).
* ``AppendLine`` (``never_auto_retry``): recovery does not guess; the operation stays
  indeterminate, the run is left unsealed for an operator's attestation, and the session
  parks instead of running the tool again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from maka_es.app import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import RecordingProvider, open_app
from maka_es.testing.probes import AFTER_SIDE_EFFECT, executions
from maka_es.wire.codec import operation_id_for

pytestmark = pytest.mark.crash

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
SPINE = Spine("s1", "i1", "r1", "t1")
CONTENT = "port = 8080\n"
#: ids drawn in planner order: invocation, run, turn, claim
TARGET_INVOCATION, TARGET = "child-1", "child-2"
CONTINUE_STEP = 5


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


def _crash_inside_the_tool(tmp_path: Path, tool_call: dict[str, Any]) -> tuple[Path, Path, Path]:
    """Source run, then a continuation that calls ``tool_call``; SIGKILL after its effect."""
    root = tmp_path / "tools"
    root.mkdir()
    db = tmp_path / "runtime.sqlite"
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
    outcome = crash_child(db, steps, failpoint=(AFTER_SIDE_EFFECT, 1, CONTINUE_STEP))
    assert outcome.said == "INSIDE", outcome.stderr
    assert (outcome.returncode, outcome.finally_marker_written) == (-9, False)
    return db, root, calls


def _provider_runs(calls: Path) -> list[str]:
    return [line.split()[1] for line in calls.read_text().splitlines()]


def _assert_killed_inside_the_tool(app: RuntimeApplication, operation: str) -> None:
    """Start, the recorded call, its dispatch (T1): no T2, no terminal."""
    events = app.read_run_events(TARGET)
    assert [e.id for e in events] == [
        f"{TARGET}-start",
        f"{TARGET}-out-1",
        f"{operation}_dispatch",
    ]
    assert app.get_run_header(TARGET).status == "running"
    assert [op.state for op in app.tool_journal.tool_operations(TARGET)] == ["prepared"]
    # before recovery, the first boundary's continuation is still a live-looking start
    plan = app.plan_continuation("s1")
    assert plan.rejection_reasons == ("continuation_started_indeterminate",)


def test_a_landed_write_is_reconciled_and_the_continuation_of_the_continuation_completes(
    tmp_path: Path,
) -> None:
    write = {
        "kind": "function_call",
        "id": "w1",
        "name": "Write",
        "args": {"path": "config.toml", "content": CONTENT},
    }
    db, root, calls = _crash_inside_the_tool(tmp_path, write)
    operation = operation_id_for(TARGET_INVOCATION, "w1")
    assert executions(root) == [operation]
    path = root / "workspace" / "config.toml"
    written = (path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes())
    assert written[2] == CONTENT.encode()

    with open_app(str(db), _config(root, "parent-")) as app:
        _assert_killed_inside_the_tool(app, operation)
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [
            (TARGET, "tools_recovered"),
            (TARGET, "terminal_recovered"),
        ]
        assert report.repairs[0].detail["actions"] == [
            {
                "operationId": operation,
                "toolName": "Write",
                "action": "completed",
                "reason": "reconcile_matches_expected_state",
            }
        ]
        header = app.get_run_header(TARGET)
        assert (header.status, header.failure_class) == ("failed", "app_restarted")
        assert [op.state for op in app.tool_journal.tool_operations(TARGET)] == [
            "recovery_completed"
        ]

        # the child's clock is fixed, so name the source: the ended continuation
        plan = app.plan_continuation("s1", TARGET)
        assert plan.disposition == "continue", plan.rejection_reasons
        continuation = plan.continuation
        assert continuation is not None
        assert continuation.boundary is not None
        assert continuation.source_run_id == TARGET
        # the boundary covers both generations: the first run, then the continuation
        segments = continuation.boundary.segments
        assert [cast(dict[str, Any], s["identity"])["runId"] for s in segments] == ["r1", TARGET]
        counts = [cast(dict[str, Any], s["position"])["eventCount"] for s in segments]
        assert counts == [2, len(app.read_run_events(TARGET))]
        provider = RecordingProvider(str(calls), [{"kind": "text", "text": "port is set"}])
        outcome = app.execute_continuation(plan, provider)
        assert outcome.status == "completed"
        (request,) = provider.scripted.requests
        messages = request.openai_messages()
        assert messages[0] == {"role": "user", "content": "set the port"}
        assert messages[1]["tool_calls"][0]["id"] == "w1"
        assert (messages[2]["role"], messages[2]["tool_call_id"]) == ("tool", "w1")
        second = app.get_run_header(outcome.target_run_id)
        assert (second.status, second.parent_run_id) == ("completed", TARGET)
        assert app.get_run_header(TARGET).parent_run_id == "r1"
        assert [h.run_id for h in app.list_runs("s1")] == ["r1", TARGET, outcome.target_run_id]
        for source in ("r1", TARGET):  # both boundaries are used up
            reasons = app.plan_continuation("s1", source).rejection_reasons
            assert reasons == ("continuation_already_exists",)
        assert app.recover().repairs == ()

    assert executions(root) == [operation]  # the tool ran once, and never again
    assert (path.stat().st_ino, path.stat().st_mtime_ns, path.read_bytes()) == written
    assert _provider_runs(calls) == [TARGET, outcome.target_run_id]


def test_an_unknowable_side_effect_is_never_run_again(tmp_path: Path) -> None:
    append = {"kind": "function_call", "id": "a1", "name": "AppendLine", "args": {"line": "x"}}
    db, root, calls = _crash_inside_the_tool(tmp_path, append)
    operation = operation_id_for(TARGET_INVOCATION, "a1")
    assert executions(root) == [operation]

    with open_app(str(db), _config(root, "parent-")) as app:
        _assert_killed_inside_the_tool(app, operation)
        report = app.recover()
        # unsealed, awaiting an operator's attestation (ADR 0019, amendment of 2026-12-01)
        assert [(r.run_id, r.kind) for r in report.repairs] == [(TARGET, "left_awaiting_operator")]
        assert report.repairs[0].detail == {
            "operations": [
                {
                    "operationId": operation,
                    "toolName": "AppendLine",
                    "recoveryMode": "never_auto_retry",
                }
            ]
        }
        assert app.get_run_header(TARGET).status == "running"
        assert [op.state for op in app.tool_journal.tool_operations(TARGET)] == ["prepared"]
        assert app.plan_resume(TARGET).disposition == "blocked"
        plan = app.plan_continuation("s1", TARGET)
        assert plan.continuation is None
        assert plan.rejection_reasons == ("runtime_ledger_unreadable",)
        assert app.recover().repairs == report.repairs  # left again, nothing written

    assert executions(root) == [operation]
    assert (root / "side-effect.txt").read_text() == "x\n"
    assert _provider_runs(calls) == [TARGET]
