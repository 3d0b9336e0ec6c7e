"""Child process of the SIGKILL crash harness.

Run as ``python -m maka_es.testing.crash_child``. It reads one JSON scenario from stdin, performs
its steps through a real :class:`RuntimeApplication` on a SQLite file, prints ``READY`` only
after the last command *returned* (so the facts are committed), and then blocks until the parent
kills it. With ``arm_inside_save`` it instead prints ``INSIDE`` from within the SQLite write
transaction of the last step (rows inserted, COMMIT not reached) and blocks there; with
``failpoint: {name, nth}`` it prints ``INSIDE`` at the nth hit of any named failpoint (inside a
save, after T1, after a probe tool's side effect, before or after T2) and blocks there.

A ``finally`` block writes ``marker``: after SIGKILL that file must NOT exist, which proves the
process really died abruptly rather than unwinding.

Not covered by coverage gates: a SIGKILLed process writes no coverage data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from maka_es.application.runtime import RuntimeApplication
from maka_es.application.tools import ToolRuntime
from maka_es.infrastructure import failpoints
from maka_es.testing.probe_tools import probe_tools


def _say(word: str) -> None:
    sys.stdout.write(word + "\n")
    sys.stdout.flush()


def _block_forever() -> None:
    # The parent keeps our stdin open and never writes again: this read only ends with the kill.
    sys.stdin.buffer.read()


def _inside(_: str) -> None:
    _say("INSIDE")
    _block_forever()


def _arm_nth(name: str, nth: int) -> None:
    """Say INSIDE and block at the ``nth`` hit of the failpoint ``name``."""
    hits = 0

    def action(hit_name: str) -> None:
        nonlocal hits
        hits += 1
        if hits == nth:
            _inside(hit_name)

    failpoints.arm(name, action)


def _step(app: RuntimeApplication, step: dict[str, Any]) -> None:
    op = step["op"]
    if op == "open_session":
        app.open_session(step["session_id"], step["cwd"], step.get("workspace_identity"))
    elif op == "create_run":
        app.create_run(step["header"])
    elif op == "append":
        app.append_events(step["run_id"], step["events"])
    elif op == "update_header":
        app.update_run_header(step["run_id"], step["patch"])
    elif op == "t1":
        app.commit_tool_prepared(
            step["run_id"],
            step["call"],
            recovery_mode=step.get("recovery_mode", "never_auto_retry"),
            metadata=step.get("metadata"),
        )
    elif op == "t2":
        app.commit_tool_outcome(step["run_id"], step["response"])
    elif op == "run_tool":
        ToolRuntime(app, probe_tools(Path(step["root"]))).execute(step["run_id"], step["call"])
    elif op == "recover":
        ToolRuntime(app, probe_tools(Path(step["root"]))).recover(step["run_id"])
    elif op == "bundle":
        app.commit_tool_recovery_bundle(
            step["run_id"],
            step["operation_id"],
            reconcile=step["reconcile"],
            decision=step["decision"],
            outcome=step.get("outcome"),
        )
    else:
        raise ValueError(f"unknown step {op!r}")


def main() -> int:
    scenario = json.loads(sys.stdin.readline())
    marker = Path(scenario["marker"])
    try:
        app = RuntimeApplication.open_sqlite(scenario["db"], clock=lambda: 1_000.0)
        steps: list[dict[str, Any]] = scenario["steps"]
        armed = scenario.get("failpoint")
        for index, step in enumerate(steps):
            if armed and index == int(armed.get("step", 0)):
                _arm_nth(armed["name"], int(armed.get("nth", 1)))
            if scenario.get("arm_inside_save") and index == len(steps) - 1:
                failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, _inside)
            _step(app, step)
        _say("READY")
        _block_forever()
    finally:
        marker.write_text("finally ran\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
