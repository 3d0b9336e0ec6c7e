"""``make demo``: write a crashed run to a real SQLite file, reopen it, show what survived.

The scenario is the one maka_es exists for: a run commits a user message and a tool call, then
the process dies before the tool's result is committed. A fresh application reopens the file
and decides, from the committed prefix alone, that the run must not be replayed as if the tool
had not run (``blocked``, ``dangling_tool_state``). A second run whose tool result *was*
committed is ``safe_replay``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from maka_es.application.runtime import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, Spine, run_header


def _write(db: Path) -> None:
    with RuntimeApplication.open_sqlite(str(db)) as app:
        app.open_session("s1", str(Path.cwd()))
        crashed = LedgerBuilder(Spine(run_id="r-crashed", invocation_id="i-crashed"))
        crashed.user("write the port into config.json")
        crashed.call("call_1", "Write", {"path": "config.json", "content": '{"port":4000}'})
        app.create_run(run_header(crashed.spine))
        app.append_events("r-crashed", crashed.events)
        # ...the process is killed here: no tool result, no terminal event.

        finished = LedgerBuilder(Spine(run_id="r-finished", invocation_id="i-finished"), prefix="f")
        finished.user("read config.json")
        finished.call("call_2", "Read", {"path": "config.json"})
        finished.response("call_2", "Read", {"kind": "text", "text": '{"port":4000}'})
        app.create_run(run_header(finished.spine))
        app.append_events("r-finished", finished.events)


def _show(db: Path) -> None:
    with RuntimeApplication.open_sqlite(str(db)) as app:
        for run in app.list_runs("s1"):
            events = app.read_run_events(run.run_id)
            plan = app.plan_resume(run.run_id)
            print(f"\nrun {run.run_id}: {len(events)} committed events (status {run.status})")
            for seq, payload in enumerate(app.read_run_payloads(run.run_id), start=1):
                print(f"  {seq:>2} {payload}")
            summary = {
                "disposition": plan.disposition,
                "rejectionReasons": plan.rejection_reasons,
                "operations": [
                    {"toolCallId": op.tool_call_id, "toolName": op.tool_name, "status": op.status}
                    for op in plan.operations
                ],
                "replayRuntimeEvents": [e.id for e in plan.replay_runtime_events],
            }
            print("  resume plan:", json.dumps(summary))
            if plan.directive:
                print("  directive:", plan.directive)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path("demo-data")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    db = root / "runtime.sqlite"
    _write(db)
    print(f"wrote two runs to {db}; reopening it with a fresh application")
    _show(db)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
