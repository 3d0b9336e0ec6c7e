"""The PostgreSQL server stopped with an immediate shutdown in the middle of a workload, then
restarted (ADR 0028): every acknowledged commit survives, a command caught by the shutdown is
typed (``store_unavailable``: nothing of it; ``store_outcome_unknown``: all of it or nothing),
and the plans afterwards equal the plans SQLite makes for the same commands.

The test starts its own throwaway cluster (``scripts/pg-throwaway.sh start`` into a temporary
folder): stopping the shared test server would break every other test. Its ``stop`` sends the
postmaster SIGQUIT, which is exactly ``pg_ctl stop -m immediate``: no checkpoint, the restart
replays the WAL. A writer runs agent turns (run, user message, T1, T2, model answer, terminal);
a second thread stops the server once some commits are acknowledged, while the writer keeps
writing, so the shutdown lands at an arbitrary point of a command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header

pytestmark = pytest.mark.crash

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pg-throwaway.sh"
SESSION = "s1"
RUNS = 40
#: acknowledged commits before the server is stopped
STOP_AFTER = 14
#: (command, run id or session id, argument)
Step = tuple[str, str, Any]


def _start(cluster: Path) -> str:
    """Start (initialising once) the cluster; its URL (a new port at every start)."""
    done = subprocess.run(
        ["bash", str(SCRIPT), "start", str(cluster)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"^export MAKA_ES_TEST_PG_URL=(\S+)$", done.stdout, re.MULTILINE)
    assert found is not None, done.stdout
    return found.group(1)


def _stop_immediately(cluster: Path) -> None:
    subprocess.run(["bash", str(SCRIPT), "stop", str(cluster)], check=True, timeout=60)


@pytest.fixture
def cluster() -> Iterator[Path]:
    """A cluster of this test only, under /tmp (the server's own user must reach it)."""
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        reason = "initdb/pg_ctl not on PATH: the immediate-shutdown test needs its own cluster"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(f"POSTGRESQL TESTS SKIPPED: {reason}")
    folder = Path(tempfile.mkdtemp(prefix="maka-pg-immediate-"))
    try:
        yield folder
    finally:
        _stop_immediately(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _workload() -> list[Step]:
    """Deterministic commands: the session, then RUNS agent turns, one commit per step."""
    steps: list[Step] = [("open_session", SESSION, "/workspace")]
    for n in range(RUNS):
        run_id = f"r{n}"
        spine = Spine(SESSION, f"{run_id}-i", run_id, "t1")
        ledger = LedgerBuilder(spine, prefix=f"{run_id}-e")
        steps += [
            ("create_run", run_id, run_header(spine)),
            ("append", run_id, ledger.user("read the config")),
            ("t1", run_id, ledger.call("c1", "Read", {"path": "config.json"})),
            ("t2", run_id, ledger.bound_response("c1", "Read", {"kind": "text", "text": "{}"})),
            ("append", run_id, ledger.text("the config is empty")),
            ("end_run", run_id, ledger.terminal("completed")),
        ]
    return steps


def _apply(app: RuntimeApplication, step: Step) -> None:
    op, key, value = step
    if op == "open_session":
        app.open_session(key, value)
    elif op == "create_run":
        app.ledger.create_run(value)
    elif op == "append":
        app.ledger.append_events(key, [value])
    elif op == "t1":
        app.tool_journal.commit_tool_prepared(key, value)
    elif op == "t2":
        app.tool_journal.commit_tool_outcome(key, value)
    else:
        app.end_run(key, value)


def _open(store: str) -> RuntimeApplication:
    return RuntimeApplication.open(store, clock=lambda: 1_000.0, host_id="h1")


def _state(app: RuntimeApplication) -> dict[str, Any]:
    """What a restarted host sees and decides: events, header, tool journal, Phase 0 plan."""
    state: dict[str, Any] = {}
    for run_id in app.ledger.all_run_ids():
        state[run_id] = (
            [event.to_wire() for event in app.read_run_events(run_id)],
            app.get_run_header(run_id).model_dump(mode="json", by_alias=True),
            [repr(op) for op in app.tool_journal.tool_operations(run_id)],
            app.plan_resume(run_id).model_dump(mode="json", by_alias=True),
        )
    return state


def _sqlite_state(tmp_path: Path, steps: list[Step], name: str) -> dict[str, Any]:
    """The same commands on a fresh SQLite file (``name`` names the file)."""
    with _open(str(tmp_path / f"reference-{name}.sqlite")) as app:
        for step in steps:
            _apply(app, step)
        return _state(app)


def _references(tmp_path: Path, steps: list[Step], acked: int) -> dict[str, dict[str, Any]]:
    """The states a restarted store may show when command ``acked`` was refused, by name.

    ``acknowledged``: nothing of it; ``all of it``: the whole command. ``end_run`` is the one
    command of the workload with two transactions (docs/reference/ledger.md#terminal-rules:
    the terminal event first, then the header derived from it; startup recovery or a retry
    completes it), so a fault between them leaves ``terminal event only``: that commit was
    durable before the fault, whatever the refusal's code."""
    op, key, value = steps[acked]
    references = {
        "acknowledged": _sqlite_state(tmp_path, steps[:acked], "acknowledged"),
        "all of it": _sqlite_state(tmp_path, steps[: acked + 1], "all"),
    }
    if op == "end_run":
        partial = [*steps[:acked], ("append", key, value)]
        references["terminal event only"] = _sqlite_state(tmp_path, partial, "event-only")
    return references


def _differences(after: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """Per run, what differs between the restarted store and ``reference``: event ids, then
    the header's, the plan's and the tool journal's differing fields (short, readable)."""
    lines: list[str] = []
    for run_id in sorted(set(after) | set(reference)):
        if run_id not in reference or run_id not in after:
            where = "restarted store only" if run_id in after else "reference only"
            lines.append(f"  {run_id}: run in the {where}")
            continue
        (events, header, tools, plan), (ref_events, ref_header, ref_tools, ref_plan) = (
            after[run_id],
            reference[run_id],
        )
        if events != ref_events:
            ids = [e.get("id") for e in events]
            ref_ids = [e.get("id") for e in ref_events]
            lines.append(f"  {run_id} event ids: restarted {ids}, reference {ref_ids}")
        for name, ours, theirs in (("header", header, ref_header), ("plan", plan, ref_plan)):
            for field in sorted(set(ours) | set(theirs)):
                if field in {"runtimeEvents", "replayRuntimeEvents"} or ours.get(
                    field
                ) == theirs.get(field):
                    continue
                lines.append(
                    f"  {run_id} {name}.{field}: restarted {ours.get(field)!r:.200}, "
                    f"reference {theirs.get(field)!r:.200}"
                )
        if tools != ref_tools:
            lines.append(f"  {run_id} tool operations: restarted {tools}, reference {ref_tools}")
    return lines or ["  (equal)"]


def _diagnosis(
    steps: list[Step],
    acked: int,
    refusal: MakaError,
    after: dict[str, Any],
    references: dict[str, dict[str, Any]],
) -> str:
    """The failure message: the refused command, then the restarted state against every
    reference state (what is extra or missing, run by run)."""
    op, key, _ = steps[acked]
    lines = [
        f"acked {acked}; refused command #{acked} {op}({key}): {refusal.code} "
        f"{refusal.detail}: {refusal}"
    ]
    for name, reference in references.items():
        lines.append(f"restarted vs {name}:")
        lines += _differences(after, reference)
    return "\n".join(lines)


def _write_until_refused(
    app: RuntimeApplication,
    steps: list[Step],
    stop: Callable[[], None],
    stop_between_end_run_transactions: Callable[[], None] | None = None,
) -> tuple[int, MakaError, bool]:
    """Run the commands until one is refused; ``stop`` once STOP_AFTER are acknowledged
    (or, when given, ``stop_between_end_run_transactions`` inside the first ``end_run`` after
    that, once its terminal event is acknowledged). Returns the number acknowledged, the
    refusal, and whether the refused command was an ``end_run`` whose first transaction (the
    terminal event) was acknowledged: the library hits ``AFTER_TERMINAL_EVENT`` only once
    that commit returned."""
    terminal_acknowledged: list[int] = []
    position = [0]

    def on_terminal_event(_: str) -> None:
        terminal_acknowledged.append(position[0])
        if stop_between_end_run_transactions is not None and position[0] >= STOP_AFTER:
            stop_between_end_run_transactions()

    failpoints.arm(failpoints.AFTER_TERMINAL_EVENT, on_terminal_event)
    try:
        for acked, step in enumerate(steps):
            position[0] = acked
            if acked == STOP_AFTER:
                stop()
            try:
                _apply(app, step)
            except MakaError as exc:
                return acked, exc, acked in terminal_acknowledged
    finally:
        failpoints.disarm(failpoints.AFTER_TERMINAL_EVENT)
    raise AssertionError(f"all {len(steps)} commands succeeded across the shutdown")


def _allowed(refusal: MakaError, op: str, terminal_acknowledged: bool) -> set[str]:
    """The reference states the refused command may have left. Its acknowledged transactions
    survive; the refused transaction left nothing (``store_unavailable``) or nothing or all
    of it (``store_outcome_unknown``). Only ``end_run`` has a transaction before its last."""
    if op != "end_run":
        before, refused_whole = "acknowledged", "all of it"
    elif terminal_acknowledged:  # the header transaction was the refused one
        before, refused_whole = "terminal event only", "all of it"
    else:  # the terminal event's transaction was the refused one
        before, refused_whole = "acknowledged", "terminal event only"
    if refusal.code == "store_outcome_unknown":
        return {before, refused_whole}
    return {before}


def _check_restart(
    tmp_path: Path,
    cluster: Path,
    steps: list[Step],
    outcome: tuple[int, MakaError, bool],
) -> tuple[str, dict[str, Any]]:
    """Restart the server; the state must be one the refusal allows (an acknowledged commit
    survives; a refused transaction left nothing, or all of it when its outcome is unknown),
    and retrying the refused command (the documented remedy) completes it exactly once.
    Returns the reference state the restarted store matched, and that state."""
    acked, refusal, terminal_acknowledged = outcome
    assert refusal.code in {"store_unavailable", "store_outcome_unknown"}, refusal
    assert acked >= STOP_AFTER
    restarted_url = _start(cluster)  # crash recovery replays the WAL
    references = _references(tmp_path, steps, acked)
    allowed = _allowed(refusal, steps[acked][0], terminal_acknowledged)
    with _open(restarted_url) as restarted:
        after = _state(restarted)
        why = f"allowed: {sorted(allowed)}; " + _diagnosis(steps, acked, refusal, after, references)
        matched = [name for name in sorted(allowed) if after == references[name]]
        assert matched, why
        if after != references["all of it"]:
            _apply(restarted, steps[acked])
            assert _state(restarted) == references["all of it"], why
    print(f"acked {acked}, then {refusal.code}: {refusal}; restarted state: {matched[0]}")
    assert len(after) >= (STOP_AFTER - 1) // 6
    return matched[0], after


def test_immediate_shutdown_keeps_acknowledged_commits(tmp_path: Path, cluster: Path) -> None:
    steps = _workload()
    url = _start(cluster)
    stopper = threading.Thread(target=_stop_immediately, args=(cluster,))
    app = _open(url)
    try:
        outcome = _write_until_refused(app, steps, stopper.start)
    finally:
        stopper.join(60)
        app.close()
    _check_restart(tmp_path, cluster, steps, outcome)


def test_immediate_shutdown_between_end_run_transactions(tmp_path: Path, cluster: Path) -> None:
    """The window the race above hits only under load (the writer several commands ahead
    of the stopper): ``end_run``'s terminal event is acknowledged, the server stops before
    its header transaction. The refusal is typed, the terminal event survives (an
    acknowledged commit), the header is not terminal, and a retry of ``end_run`` ends the
    run exactly as SQLite does."""
    steps = _workload()
    app = _open(_start(cluster))
    try:
        outcome = _write_until_refused(app, steps, lambda: None, lambda: _stop_immediately(cluster))
    finally:
        app.close()
    acked, _, terminal_acknowledged = outcome
    assert (steps[acked][0], terminal_acknowledged) == ("end_run", True), outcome
    matched, after = _check_restart(tmp_path, cluster, steps, outcome)
    assert matched == "terminal event only"
    run_id = steps[acked][1]
    assert after[run_id][0][-1]["status"] == "completed"  # the terminal event
    assert after[run_id][1]["status"] == "running"  # the header, not yet terminal
