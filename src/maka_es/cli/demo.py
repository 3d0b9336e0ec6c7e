"""``make demo``: a crashed agent turn, recovered and continued, on a real SQLite file.

1. A run commits a user message and a ``Write`` tool call, then the process dies before the
   tool's result is committed. Another run finished its tool call but its provider failed.
2. A fresh application reopens the file. Phase 0 says the crashed run must not be replayed as
   if the tool had not run (``blocked``, ``dangling_tool_state``); the other is ``safe_replay``.
3. Startup recovery gives the crashed run its recovered terminal (the tool stays unsettled).
4. Phase 1 refuses to continue the crashed run (its tool may or may not have run), plans a
   continuation of the finished one, claims it once in the store and calls a scripted
   provider with the validated replay context (no duplicate user message).
5. Planning again parks: the boundary is already continued.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from maka_es.adapters.local_host import LocalHostInspector
from maka_es.adapters.workspace_marker import resolve_workspace_identity
from maka_es.app import RuntimeApplication
from maka_es.builders import LedgerBuilder, Spine, run_header
from maka_es.continuation.provider import ProviderTurn, ScriptedProvider

FLAG = {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"}


def _open(db: Path, workspace: Path) -> RuntimeApplication:
    return RuntimeApplication.open_sqlite(
        str(db), env=FLAG, host_inspector=LocalHostInspector(tool_names=["Read", "Write"])
    )


def _write(db: Path, workspace: Path, identity: str) -> None:
    with _open(db, workspace) as app:
        app.open_session("s1", str(workspace))
        header: dict[str, Any] = {"cwd": str(workspace), "workspaceIdentity": identity}

        finished = LedgerBuilder(Spine(run_id="r-finished", invocation_id="i-finished"), prefix="f")
        finished.user("read config.json")
        finished.call("call_1", "Read", {"path": "config.json"})
        finished.response("call_1", "Read", {"kind": "text", "text": '{"port":4000}'})
        finished.terminal("failed")  # the provider failed after the tool result was committed
        app.create_run(run_header(finished.spine, createdAt=1000, **header))
        app.append_events("r-finished", finished.events)
        app.update_run_header("r-finished", {"status": "failed", "failureClass": "provider_error"})

        crashed = LedgerBuilder(
            Spine(run_id="r-crashed", invocation_id="i-crashed", turn_id="t2"), prefix="c"
        )
        crashed.user("write the port into config.json")
        crashed.call("call_2", "Write", {"path": "config.json", "content": '{"port":5000}'})
        app.create_run(run_header(crashed.spine, createdAt=2000, **header))
        app.append_events("r-crashed", crashed.events)
        # ...the process is killed here: no tool result, no terminal event.


def _show_run(app: RuntimeApplication, run_id: str) -> None:
    header = app.get_run_header(run_id)
    print(f"\nrun {run_id} (status {header.status})")
    for seq, payload in enumerate(app.read_run_payloads(run_id), start=1):
        print(f"  {seq:>2} {payload}")
    plan = app.plan_resume(run_id)
    summary = {
        "disposition": plan.disposition,
        "rejectionReasons": list(plan.rejection_reasons),
        "operations": [f"{op.tool_name}:{op.status}" for op in plan.operations],
        "replay": [e.id for e in plan.replay_runtime_events],
    }
    print("  resume plan:", json.dumps(summary))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = (Path(args[0]) if args else Path("demo-data")).resolve()
    shutil.rmtree(root, ignore_errors=True)
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    identity = resolve_workspace_identity(workspace).identity
    db = root / "runtime.sqlite"
    _write(db, workspace, identity)
    print(f"wrote two runs to {db}; the second one was killed mid-tool. Reopening it.")

    with _open(db, workspace) as app:
        for run_id in ("r-finished", "r-crashed"):
            _show_run(app, run_id)

        report = app.recover()
        print("\nstartup recovery:", [(r.run_id, r.kind, r.detail) for r in report.repairs])

        latest = app.plan_continuation("s1")
        print(
            "\ncontinuation of the newest interrupted run (r-crashed):",
            latest.disposition,
            list(latest.rejection_reasons),
            "- its Write may or may not have happened",
        )
        plan = app.plan_continuation("s1", "r-finished")
        print("continuation of r-finished:", plan.disposition, list(plan.rejection_reasons))
        if plan.continuation is None:
            return 1
        print("  continue from:", plan.continuation.source_run_id)
        print("  replay context:", [e.id for e in plan.continuation.runtime_context])
        provider = ScriptedProvider(
            [ProviderTurn(outputs=({"kind": "text", "text": "The port is 4000."},))]
        )
        outcome = app.execute_continuation(plan, provider)
        print(f"  executed once: {outcome.status}, target run {outcome.target_run_id}")
        print("  provider saw:", json.dumps(provider.requests[0].openai_messages()))
        _show_run(app, outcome.target_run_id)

        again = app.plan_continuation("s1", plan.continuation.source_run_id)
        print(
            "\nplanning the same boundary again:", again.disposition, list(again.rejection_reasons)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
