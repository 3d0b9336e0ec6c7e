"""``make demo`` and ``maka-es demo``: the example agent killed with SIGKILL inside its Write,
then recovered (docs/cli.md#demo).

1. The example agent (``maka_es.example_agent``, shipped in the package so the demo runs from an
   installed wheel; ``examples/two_tool_agent.py`` re-exports it) runs in a real child process:
   it reads ``config.json``, then writes ``port.txt``. The child stops right after the file was
   replaced, before the tool's result (T2) is committed, and the demo kills it with a real
   SIGKILL.
2. The store is reopened read-only: the run holds a call without a result, so Phase 0 blocks
   it (``dangling_tool_state``); the file has landed.
3. The example is started again, unchanged: startup recovery settles the write from the file
   (``tools_recovered``: the reconciler compares digests recorded at T1, it never writes again),
   then ends the run (``terminal_recovered``); the continuation plan says ``continue`` and the
   continued run calls the model, which gives its final answer.
4. The demo checks what it claims: one write (probe log, same inode), every call paired with
   exactly one result, and planning the same boundary again parks
   (docs/adr/0019-startup-recovery-reconciles-before-it-seals.md).

Why ``maka-es demo`` is here: this is the one demo; the command only exposes its kill point and
directory, so ``make demo`` and the command can never tell different stories.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from maka_es import example_agent
from maka_es.adapters.workspace import LocalHostInspector
from maka_es.app import RuntimeApplication
from maka_es.errors import CommandLineUsageError

FLAG = {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"}
#: The agent's file inside the installed package: the child runs it as ``__main__``.
EXAMPLE = Path(example_agent.__file__)
#: The child wrapper that counts writes and blocks at a kill point (shipped test kit; spawned,
#: never imported).
CHILD = "maka_es.testing.example_child"
#: Where the child can be killed (``maka_es.testing.example_child.POINTS``): after T1 before the
#: file is replaced, right after it, and before / inside / after the result's commit (T2).
KILL_POINTS = ("before_write", "after_write", "before_t2", "inside_t2", "after_t2")
DEFAULT_POINT = "before_t2"


def _child(root: Path, *point: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", CHILD, str(EXAMPLE), str(root), *point]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_inside_write(root: Path, point: str) -> int:
    """Start the agent, wait until it reaches ``point`` inside its Write, SIGKILL it."""
    child = _child(root, point)
    assert child.stdout is not None
    assert child.stderr is not None
    for line in iter(child.stdout.readline, ""):
        if line.strip() == "INSIDE":
            break
        print("  child:", line.rstrip())
    else:
        raise RuntimeError(f"the agent ended before its Write: {child.stderr.read()}")
    child.send_signal(signal.SIGKILL)
    returncode = child.wait(timeout=60)
    child.stdout.close()
    child.stderr.close()
    print(
        f"  killed pid {child.pid} inside its Write with SIGKILL (returncode {returncode}) "
        f"at kill point {point}"
    )
    return returncode


def _open(root: Path) -> RuntimeApplication:
    return RuntimeApplication.open_sqlite(
        str(root / "agent.sqlite"),
        read_only=True,
        env=FLAG,
        host_inspector=LocalHostInspector(tool_names=["ReadConfig", "Write"]),
    )


def _show_run(app: RuntimeApplication, run_id: str) -> None:
    header = app.get_run_header(run_id)
    print(f"\nrun {run_id} (status {header.status})")
    for seq, payload in enumerate(app.ledger.read_run_payloads(run_id), start=1):
        print(f"  {seq:>2} {payload}")
    plan = app.plan_resume(run_id)
    summary = {
        "disposition": plan.disposition,
        "rejectionReasons": list(plan.rejection_reasons),
        "operations": [f"{op.tool_name}:{op.status}" for op in plan.operations],
    }
    print("  resume plan:", json.dumps(summary))


def _pairs(app: RuntimeApplication) -> tuple[dict[str, int], dict[str, int]]:
    """How often each tool call id occurs as a call and as a result in the session."""
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    for header in app.list_runs("s1"):
        for event in app.read_run_events(header.run_id):
            call, result = event.function_call, event.function_response
            if call is not None:
                calls[call.id] = calls.get(call.id, 0) + 1
            if result is not None:
                results[result.id] = results.get(result.id, 0) + 1
    return calls, results


def _restart(root: Path) -> bool:
    """Start the unchanged agent again; it recovers, plans and continues."""
    print("\nrestarting the agent (same code, same store):")
    done = subprocess.run(
        [sys.executable, "-m", CHILD, str(EXAMPLE), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    for line in done.stdout.splitlines():
        print("  child:", line)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
    return done.returncode == 0


def _check(root: Path, landed_inode: int | None) -> bool:
    """Landed write: one write, same inode, every call answered once. Killed before the
    write: recovery settled it as not applied, the model wrote again, so one write and every
    call answered once too (the first Write's answer is "not applied")."""
    target = root / "workspace" / "port.txt"
    log = root / "writes.log"
    writes = log.read_text().splitlines() if log.exists() else []
    same = landed_inode is None or target.stat().st_ino == landed_inode
    print(f"\nport.txt: {target.read_text()!r}; writes: {len(writes)}; same inode: {same}")
    with _open(root) as app:
        for header in app.list_runs("s1"):
            _show_run(app, header.run_id)
        calls, results = _pairs(app)
        paired = calls == results and set(calls.values()) == {1}
        print("\nevery call paired with exactly one result:", paired, sorted(calls))
        again = app.plan_continuation("s1", "r1")
        print("planning the same boundary again:", again.disposition, list(again.rejection_reasons))
    return same and writes == ["port.txt"] and paired


def run_demo(root: Path, point: str = DEFAULT_POINT) -> int:
    """The whole story in ``root`` (replaced), killed at ``point``; 0 when every check held,
    2 when the point is unknown."""
    if point not in KILL_POINTS:
        print(f"unknown kill point {point!r}; one of {', '.join(KILL_POINTS)}")
        return 2
    root = root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "config.json").write_text('{"port": 4000}\n')
    print(f"running {EXAMPLE.name} on {root} in a child process:")
    if _kill_inside_write(root, point) != -signal.SIGKILL:
        return 1
    landed = root / "workspace" / "port.txt"
    if landed.exists():
        print(f"  port.txt after the kill: {landed.read_text()!r} (landed; its result did not)")
    else:
        print("  port.txt after the kill: not written (killed before the write)")
    with _open(root) as app:
        _show_run(app, "r1")
    inode = landed.stat().st_ino if landed.exists() else None
    if not _restart(root):
        return 1
    return 0 if _check(root, inode) else 1


def demo_command(
    crash_at: Annotated[
        str, typer.Option("--crash-at", help=f"Kill point: {', '.join(KILL_POINTS)}.")
    ] = DEFAULT_POINT,
    workspace: Annotated[
        Path, typer.Option("--workspace", help="Directory for the demo (replaced).")
    ] = Path("demo-data"),
) -> None:
    """Kill the example agent with SIGKILL inside its Write, restart it, check the result."""
    if crash_at not in KILL_POINTS:
        raise CommandLineUsageError(
            f"unknown kill point {crash_at!r}", f"one of {', '.join(KILL_POINTS)}"
        )
    code = run_demo(workspace, crash_at)
    if code != 0:
        raise typer.Exit(code)


def main(argv: list[str] | None = None) -> int:
    """``python -m maka_es.cli.demo [DIR [POINT]]`` (``make demo``)."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path("demo-data")
    return run_demo(root, args[1] if len(args) > 1 else DEFAULT_POINT)


if __name__ == "__main__":
    raise SystemExit(main())
