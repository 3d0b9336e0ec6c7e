"""Startup recovery folds each run it looks at once, and decides as the plain loader does
(issue 23, target 6).

Why pinned: once the status table was current, a fresh application's recovery folded each
interrupted run from its first fact at least twice: the status catch-up read it on the
commands' cached Run, then the ownership, tool-settlement and repair steps loaded it again
into the recovering thread's own cache. Those steps now read the run through
``Ledger.read_run`` (the commands' cached Run while no command runs), so the catch-up's fold
serves them all. Every answer must stay the one the plain loader (``MAKA_ES_FAST_PATHS=n``)
gives on a copy of the same file: the report, the status rows, the tool's executions and
the ledger afterwards.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from maka_es.adapters import run_loader
from maka_es.adapters.run_loader import FAST_PATHS_ENV
from maka_es.app import RuntimeApplication
from maka_es.ledger.model.run import Run, project_run
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext
from maka_es.wire.events import ToolRecoveryMode
from tests.conftest import FixedClock

#: Interrupted runs by the recovery mode of their unsettled call (``None``: no call at all).
RUNS: dict[str, ToolRecoveryMode | None] = {
    "await-1": "never_auto_retry",
    "await-2": "never_auto_retry",
    "idem-1": "idempotent",
    "idem-2": "idempotent",
    "bare-1": None,
}


class EchoArgs(BaseModel):
    n: int


def echo(runs: list[str]) -> Tool[EchoArgs]:
    def run(args: EchoArgs, context: ToolContext) -> dict[str, Any]:
        runs.append(context.operation_id)
        return {"kind": "text", "text": f"echo {args.n}"}

    return Tool("Echo", EchoArgs, run, recovery_mode="idempotent")


@pytest.fixture
def full_folds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run id of every fold that starts from a run's first fact."""
    folds: list[str] = []
    original = project_run

    def counting(run: Run | None, facts: Iterable[Any]) -> Run | None:
        folded = original(run, facts)
        if run is None and folded is not None:
            folds.append(folded.run_id)
        return folded

    monkeypatch.setattr(run_loader, "project_run", counting)
    return folds


def _write(
    store: str,
    steps: int = 4,
    runs: dict[str, ToolRecoveryMode | None] = RUNS,
    *,
    current: bool = True,
) -> None:
    """A status table brought current (unless not ``current``), then ``runs`` interrupted
    runs (their recovery mode; ``None``: no call left open) of ``steps`` settled steps."""
    app = RuntimeApplication.open(store, clock=FixedClock(), tools=[echo([])])
    app.open_session("s1", "/workspace")
    if current:
        app.recover()
    for run_id, mode in runs.items():
        app.ledger.create_run(run_header(Spine(invocation_id=f"i-{run_id}", run_id=run_id)))
        kit = Events.wire(Spine(invocation_id=f"i-{run_id}", run_id=run_id))
        app.ledger.append_events(run_id, [kit.user("go", event_id=f"u-{run_id}", marker=True)])
        for i in range(steps):
            app.tool_journal.commit_tool_prepared(
                run_id, kit.call(f"c{i}", "Echo", {"n": i}), recovery_mode="idempotent"
            )
            app.tool_journal.commit_tool_outcome(
                run_id, kit.bound_response(f"c{i}", "Echo", {"n": i})
            )
        if mode is not None:
            app.tool_journal.commit_tool_prepared(
                run_id, kit.call("cz", "Echo", {"n": -1}), recovery_mode=mode
            )
    app.close()


def _recover(store: str, *, plain: bool, run_ids: Iterable[str] = RUNS) -> tuple[Any, ...]:
    """What a fresh application's recovery decides and leaves behind."""
    runs: list[str] = []
    env = {FAST_PATHS_ENV: "n"} if plain else None
    app = RuntimeApplication.open(store, clock=FixedClock(), tools=[echo(runs)], env=env)
    try:
        report = app.recover()
        rows = app.recovery_status.all()
        ledgers = {run_id: app.ledger.read_run_payloads(run_id) for run_id in run_ids}
        headers = {run_id: app.get_run_header(run_id) for run_id in run_ids}
        return report, rows, runs, ledgers, headers
    finally:
        app.close()


@pytest.mark.parametrize("plain", [False, True], ids=["fast", "plain"])
def test_recovery_once_current_folds_each_interrupted_run_once(
    tmp_path: Path, full_folds: list[str], plain: bool
) -> None:
    store = str(tmp_path / "maka.sqlite")
    _write(store)
    full_folds.clear()
    runs: list[str] = []
    env = {FAST_PATHS_ENV: "n"} if plain else None
    app = RuntimeApplication.open(store, clock=FixedClock(), tools=[echo(runs)], env=env)
    try:
        report = app.recover()
    finally:
        app.close()
    kinds = {(r.run_id, r.kind) for r in report.repairs}
    assert ("await-1", "left_awaiting_operator") in kinds
    assert ("idem-1", "terminal_recovered") in kinds
    assert ("bare-1", "terminal_recovered") in kinds
    assert len(runs) == 2  # both idempotent calls executed again
    assert sorted(full_folds) == sorted(RUNS)  # each interrupted run folded once, no other


def test_recovery_decides_as_the_plain_loader(tmp_path: Path) -> None:
    store = str(tmp_path / "maka.sqlite")
    _write(store)
    reference = str(tmp_path / "reference.sqlite")
    shutil.copy(store, reference)
    recovered = _recover(store, plain=False)
    assert recovered == _recover(reference, plain=True)
    report, rows, runs, _, headers = recovered
    assert {r.run_id for r in report.repairs} == set(RUNS)
    assert len(runs) == 2
    assert {run_id: h.status for run_id, h in headers.items()} == {
        "await-1": "running",
        "await-2": "running",
        "idem-1": "failed",
        "idem-2": "failed",
        "bare-1": "failed",
    }
    assert all(not row.needs_attention for row in rows if not row.run_id.startswith("await"))


MODES: list[ToolRecoveryMode | None] = [None, "never_auto_retry", "idempotent", "outcome_unknown"]


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    modes=st.lists(st.sampled_from(MODES), min_size=1, max_size=4),
    steps=st.integers(min_value=0, max_value=3),
    current=st.booleans(),
)
def test_generated_stores_recover_as_with_the_plain_loader(
    tmp_path_factory: pytest.TempPathFactory,
    modes: list[ToolRecoveryMode | None],
    steps: int,
    current: bool,
) -> None:
    """Interrupted runs of generated modes and lengths, the status table current or never
    brought up to date: the fast side's recovery equals the plain loader's on a copy."""
    folder = tmp_path_factory.mktemp("generated")
    store, reference = str(folder / "maka.sqlite"), str(folder / "reference.sqlite")
    runs = {f"g-{n}": mode for n, mode in enumerate(modes)}
    _write(store, steps, runs, current=current)
    shutil.copy(store, reference)
    recovered = _recover(store, plain=False, run_ids=runs)
    assert recovered == _recover(reference, plain=True, run_ids=runs)
    assert {r.run_id for r in recovered[0].repairs} == set(runs)
