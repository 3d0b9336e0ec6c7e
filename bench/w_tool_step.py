"""Workload (a): one tool step, T1 -> tool -> T2, against the raw floor, LangGraph and DBOS.

Each contender runs ``step_batch`` steps per repetition on a fresh run (thread, workflow), so
per-step state stays comparable; the set-up of that run is not timed. Runs on disk and on
tmpfs (``/dev/shm``), where the fsync is nearly free and the figure is the CPU cost.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.core import Config, Figure, Stats, Target, interleave, ratios, timed
from bench.floor import RawFloor, Row
from bench.peers_dbos import DbosPeer
from bench.peers_langgraph import LangGraphPeer
from bench.stores import ECHO, max_rowid, open_app, rows_after, start_run, tool_steps
from maka_es import RuntimeApplication
from maka_es.tooljournal.runtime import Tool, ToolContext

GROUP_DISK = "1. tool step on disk"
GROUP_CPU = "2. CPU per tool step (tmpfs)"


def step_rows(folder: Path) -> list[list[Row]]:
    """The rows one warm tool step commits, split into its T1 and T2 transactions."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "probe.sqlite"
    seen: list[int] = []

    def probe(args: Any, context: ToolContext) -> dict[str, Any]:
        seen.append(max_rowid(path))  # T1 is durable while the tool runs
        return {"kind": "text", "text": args.text}

    app = open_app(path)
    app.tool_runtime.tools["Echo"] = Tool("Echo", ECHO.input_model, probe)
    run = start_run(app, "probe")
    tool_steps(app, run, 1, 2)  # warm: the second step is the one measured
    before = max_rowid(path)
    tool_steps(app, run, 3, 1)
    app.close()
    rows = rows_after(path, before)
    split = seen[-1] - before
    return [rows[:split], rows[split:]]


class MakaSteps:
    """Fresh run per batch on one application (the host's steady state)."""

    def __init__(self, path: Path, batch: int) -> None:
        self.app: RuntimeApplication = open_app(path)
        self.batch = batch
        self.runs = itertools.count()

    def __call__(self) -> float:
        run = start_run(self.app, f"run-{next(self.runs)}")
        return timed(lambda: tool_steps(self.app, run, 1, self.batch)) / self.batch

    def close(self) -> None:
        self.app.close()


def _floor(
    path: Path, commits: list[list[Row]], batch: int
) -> tuple[RawFloor, Callable[[], float]]:
    floor = RawFloor(path)

    def steps() -> None:
        for _ in range(batch):
            floor.step(commits)

    def run() -> float:
        return timed(steps) / batch

    return floor, run


def measure(folder: Path, cfg: Config) -> dict[str, list[float]]:
    """Seconds per step for every contender, interleaved, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    commits = step_rows(folder)
    maka = MakaSteps(folder / "maka.sqlite", cfg.step_batch)
    floor, floor_run = _floor(folder / "floor.sqlite", commits, cfg.step_batch)
    langgraph = LangGraphPeer(folder / "langgraph.sqlite", cfg.step_batch)
    dbos = DbosPeer(folder / "dbos.sqlite", cfg.step_batch)
    try:
        for warm in (maka, floor_run, langgraph.steps, dbos.steps):
            warm()
        return interleave(
            {"maka_es": maka, "floor": floor_run, "langgraph": langgraph.steps, "dbos": dbos.steps},
            cfg.reps,
            cfg.budget_s / 2,
        )
    finally:
        maka.close()
        floor.close()
        langgraph.close()
        dbos.close()


def _profile(folder: Path, cfg: Config) -> Callable[[], Callable[[], object]]:
    def prepare() -> Callable[[], object]:
        folder.mkdir(parents=True, exist_ok=True)
        return MakaSteps(folder / "profile.sqlite", cfg.step_batch * 5)

    return prepare


def _rows(
    group: str,
    s: dict[str, list[float]],
    floor_bound: float | None,
    profile: Callable[[], Callable[[], object]],
) -> list[Figure]:
    lg, db = ratios(s["langgraph"], s["maka_es"]), ratios(s["dbos"], s["maka_es"])
    gate = {"1": (1.7, 4.0), "2": (3.0, 4.0)}[group[0]]
    return [
        Figure(
            group,
            "maka_es per step",
            Stats.of(s["maka_es"]).scaled(1e3),
            "ms",
            "same run",
            Target("<=", 0.4) if floor_bound is None else None,
            profile,
        ),
        Figure(
            group,
            "maka_es / raw floor (2 fsynced commits, same bytes)",
            ratios(s["maka_es"], s["floor"]),
            "x",
            f"floor {Stats.of(s['floor']).median * 1e3:.3f} ms",
            Target("<=", floor_bound) if floor_bound is not None else None,
            profile,
        ),
        Figure(
            group,
            "LangGraph (SqliteSaver, sync) / maka_es",
            lg,
            "x",
            f"LangGraph {Stats.of(s['langgraph']).median * 1e3:.3f} ms",
            Target(">=", gate[0]),
            profile,
        ),
        Figure(
            group,
            "DBOS (SQLite system db) / maka_es",
            db,
            "x",
            f"DBOS {Stats.of(s['dbos']).median * 1e3:.3f} ms",
            Target(">=", gate[1]),
            profile,
        ),
    ]


def run(cfg: Config) -> list[Figure]:
    disk = cfg.workdir / "step-disk"
    figures = _rows(GROUP_DISK, measure(disk, cfg), 1.3, _profile(disk, cfg))
    if cfg.tmpfs is not None:
        cpu = cfg.tmpfs / "step-cpu"
        figures += _rows(GROUP_CPU, measure(cpu, cfg), None, _profile(cpu, cfg))
    return figures
