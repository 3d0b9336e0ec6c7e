"""Workload (f): startup recovery at scale, and one long run.

1. A store of ``recovery_runs`` runs (``recovery_events_per_run`` events each), 1% of them
   interrupted (a T1 with no T2), the rest completed; the recovery-status table never brought
   up to date. A fresh application runs ``recover()``.
2. On that store, now current, 1% more interrupted runs are written; a fresh application
   recovers again: this should cost what was written since, not the whole store.
3. One run of ``long_run_events`` events written since the last recovery (on a store of its
   own, brought current first); a fresh application recovers it (target: at most 1 s), against
   one short run written since on the big store.

The big store is built once on tmpfs (no fsync wait) and copied to disk for the measurement.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from bench.core import Config, Figure, Stats, Target, timed
from bench.fixtures import import_run
from bench.stores import open_app

GROUP = "5. startup recovery"


def build(cfg: Config, folder: Path) -> tuple[Path, int]:
    """The big store, built where it is fast and copied into ``folder``."""
    scratch = (cfg.tmpfs or cfg.workdir) / "recovery-build"
    scratch.mkdir(parents=True, exist_ok=True)
    app = open_app(scratch / "maka.sqlite")
    runs, n, began = cfg.recovery_runs, 0, time.perf_counter()
    while n < runs:
        interrupted = n % 100 == 99 or (runs < 100 and n == 0)
        import_run(
            app,
            f"r{n}",
            cfg.recovery_events_per_run,
            interrupted=interrupted,
            terminal=not interrupted,
        )
        n += 1
        if n == 100 and runs > 100:
            runs = affordable_runs(cfg, (time.perf_counter() - began) / 100)
    app.close()
    folder.mkdir(parents=True, exist_ok=True)
    for item in scratch.iterdir():
        shutil.copy(item, folder / item.name)
    shutil.rmtree(scratch)
    return folder / "maka.sqlite", runs


def affordable_runs(cfg: Config, per_run_s: float) -> int:
    """All the runs asked for, unless building them (projected from the first 100) would take
    over a third of the budget: then as many hundreds as fit, named in the report's notes."""
    fit = max(100, int(cfg.budget_s / 3 / per_run_s) // 100 * 100)
    if fit >= cfg.recovery_runs:
        return cfg.recovery_runs
    cfg.notes.append(
        f"recovery store built with {fit:,} runs, not {cfg.recovery_runs:,}: "
        f"building all of them was projected at {per_run_s * cfg.recovery_runs:.0f} s "
        f"({per_run_s * 1e3:.0f} ms per run), over a third of the workload budget"
    )
    return fit


def recover(path: Path) -> float:
    app = open_app(path)
    try:
        return timed(app.recover)
    finally:
        app.close()


def write_runs(path: Path, prefix: str, runs: int, size: int) -> None:
    app = open_app(path)
    for n in range(runs):
        import_run(app, f"{prefix}{n}", size, interrupted=True)
    app.close()


def run(cfg: Config) -> list[Figure]:
    path, runs = build(cfg, cfg.workdir / "recovery")
    per_run = cfg.recovery_events_per_run
    first = recover(path)
    late = max(1, runs // 100)
    write_runs(path, "late", late, per_run)
    current = recover(path)
    write_runs(path, "short", 1, per_run)
    short = recover(path)
    size = f"{runs:,} runs / {runs * per_run:,} events, 1% interrupted"
    figures = [
        Figure(
            GROUP,
            f"recovery, status table never brought up to date: {size}",
            Stats.of([first]),
            "s",
            "fresh application",
        ),
        Figure(
            GROUP,
            f"recovery once current: {late} interrupted runs written since",
            Stats.of([current]),
            "s",
            f"{current / late * 1e3:.1f} ms per interrupted run",
        ),
    ]
    projected = short * cfg.long_run_events / per_run
    if projected > cfg.budget_s:
        cfg.notes.append(
            f"recovery of one {cfg.long_run_events:,}-event run not run: projected "
            f"at least {projected:.0f} s (linearly from one {per_run}-event run), "
            f"over the workload budget ({cfg.budget_s:.0f} s): its target is not measured"
        )
        return figures
    long = [recover_long(path, cfg)]
    return [
        *figures,
        Figure(
            GROUP,
            f"recovery of one long run, {cfg.long_run_events:,} events written since",
            Stats.of(long),
            "s",
            f"one {per_run}-event run: {short:.3f} s",
            Target("<=", 1.0),
            lambda: _profile_long(path, cfg),
        ),
    ]


def recover_long(path: Path, cfg: Config) -> float:
    """A store of its own: brought current, then the long interrupted run written, then
    recovered by a fresh application."""
    return recover(prepare_long(path, cfg))


def _profile_long(path: Path, cfg: Config) -> Callable[[], object]:
    store = prepare_long(path, cfg)
    return lambda: recover(store)


def prepare_long(path: Path, cfg: Config) -> Path:
    folder = path.parent / "long"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    store = folder / "maka.sqlite"
    write_runs(store, "done", 1, cfg.recovery_events_per_run)
    recover(store)
    write_runs(store, "long", 1, cfg.long_run_events)
    return store
