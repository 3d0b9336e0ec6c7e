"""Startup recovery settles a landed Write before it seals the run (ADR 0019, issue 11 §2).

The README sequence in a real child process on a real SQLite file: open the application with
its tool catalogue (``tools=``), ``recover()``, open the session, create the run, write the
user message, run the ``Write`` tool through ``app.tool_runtime``; SIGKILL after the file was
written and before T2. A fresh application then follows the same sequence: ``recover()`` first.

* With the tool in the catalogue, the reconciler proves the write landed: the operation is
  completed by a recovery bundle, the file is not written again (same inode, same mtime, one
  execution in the probe's log), the run is then ended normally, and the session can continue.
* Without it, recovery leaves the run unsealed and the report names the operation, the tool and
  why; nothing is written. A later recovery with the tool settles it exactly as above.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import open_app
from maka_es.testing.probes import AFTER_SIDE_EFFECT, executions, store_snapshot

pytestmark = pytest.mark.crash

SPINE = Spine()
WORKSPACE = "workspace:v1:0b7e4c1a-5d2f-4e8a-9c3b-1a2b3c4d5e6f"
CONTENT = "port = 8080\n"
OPERATION = SPINE.operation_id("call-1")


def _config(root: Path, *, with_tools: bool = True) -> dict[str, Any]:
    """The application a host opens at every start (the README's "Using it")."""
    config: dict[str, Any] = {
        "op": "app",
        "env": {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        "observation": {
            "workspaceIdentity": WORKSPACE,
            "workspacePath": "/workspace",
            "backgroundOperationsSettled": True,
            "availableToolNames": ["Write"],
        },
    }
    if with_tools:
        config["tools_root"] = str(root)
    return config


def _crash_after_the_write_landed(tmp_path: Path) -> tuple[Path, Path]:
    """The README sequence in a child, SIGKILLed after the Write landed and before T2."""
    root = tmp_path / "tools"
    root.mkdir()
    db = tmp_path / "runtime.sqlite"
    ledger = LedgerBuilder(SPINE)
    ledger.user("set the port", marker=True)
    call = ledger.call("call-1", "Write", {"path": "config.toml", "content": CONTENT})
    steps: list[dict[str, Any]] = [
        _config(root),
        {"op": "startup_recover"},
        {"op": "open_session", "session_id": "s1", "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(SPINE, workspaceIdentity=WORKSPACE)},
        {"op": "append", "run_id": "r1", "events": ledger.events[:1]},
        {"op": "app_tool", "run_id": "r1", "call": call},
    ]
    outcome = crash_child(db, steps, failpoint=(AFTER_SIDE_EFFECT, 1, 5))
    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written
    assert executions(root) == [OPERATION]  # the write landed, once
    return db, root


def _written(root: Path) -> tuple[int, int, bytes]:
    """Inode, mtime and bytes of the file the Write tool wrote."""
    path = root / "workspace" / "config.toml"
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, path.read_bytes()


def _assert_settled_and_ended(app: RuntimeApplication, report_kinds: list[str]) -> None:
    (operation,) = app.tool_journal.tool_operations("r1")
    assert (operation.operation_id, operation.state) == (OPERATION, "recovery_completed")
    (decision,) = app.tool_journal.resolve_run("r1").decisions
    assert (decision.status, decision.reason) == ("completed", "recovery_bundle_completed")
    assert report_kinds == ["tools_recovered", "terminal_recovered"]
    header = app.get_run_header("r1")
    assert (header.status, header.failure_class) == ("failed", "app_restarted")
    assert app.plan_resume("r1").disposition == "safe_replay"
    plan = app.plan_continuation("s1")
    assert (plan.disposition, plan.rejection_reasons) == ("continue", ())


def test_readme_sequence_settles_the_landed_write_without_writing_again(tmp_path: Path) -> None:
    db, root = _crash_after_the_write_landed(tmp_path)
    before = _written(root)
    assert before[2] == CONTENT.encode()

    with open_app(str(db), _config(root)) as app:
        report = app.recover()
        app.open_session("s1", "/workspace")  # the README's next line: safe to repeat
        repairs = [(r.run_id, r.kind, r.detail) for r in report.repairs]
        assert repairs[0] == (
            "r1",
            "tools_recovered",
            {
                "actions": [
                    {
                        "operationId": OPERATION,
                        "toolName": "Write",
                        "action": "completed",
                        "reason": "reconcile_matches_expected_state",
                    }
                ]
            },
        )
        assert repairs[1] == ("r1", "terminal_recovered", {"recoveryReason": "run_interrupted"})
        _assert_settled_and_ended(app, [r.kind for r in report.repairs])
        ended = store_snapshot(app)
        assert app.recover().repairs == ()  # converged
        assert store_snapshot(app) == ended

    assert _written(root) == before  # same inode, same mtime, same bytes
    assert executions(root) == [OPERATION]  # the tool never ran again


def test_recovery_without_the_tool_leaves_the_run_unsealed_and_says_why(tmp_path: Path) -> None:
    db, root = _crash_after_the_write_landed(tmp_path)
    before = _written(root)

    with open_app(str(db), _config(root, with_tools=False)) as app:
        app.recovery_status.catch_up()  # the read model's own rows are not the point here
        untouched = store_snapshot(app)
        report = app.recover()
        assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
            (
                "r1",
                "left_unreconciled",
                {
                    "operations": [
                        {
                            "operationId": OPERATION,
                            "toolName": "Write",
                            "recoveryMode": "reconcile",
                            "reason": "tool_not_in_catalogue",
                        }
                    ]
                },
            )
        ]
        assert report.changed_anything is False
        assert store_snapshot(app) == untouched  # nothing written, nothing sealed
        assert app.get_run_header("r1").status == "running"
        assert [op.state for op in app.tool_journal.tool_operations("r1")] == ["prepared"]
        assert app.recover().repairs == report.repairs  # asked again: the same answer
        assert store_snapshot(app) == untouched

    with open_app(str(db), _config(root)) as app:  # the host restarts with its catalogue
        report = app.recover()
        _assert_settled_and_ended(app, [r.kind for r in report.repairs])

    assert _written(root) == before
    assert executions(root) == [OPERATION]
