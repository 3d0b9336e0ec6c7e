"""Workloads (d) and (e), and ``plan_resume`` from the store: what history costs.

On one store holding a short run and a long run (``history_sizes``, 100 and 100k events):

* (d) a warm append (the application already holds both runs) to each, interleaved: the ratio
  long / short is what history costs a live writer;
* (e) the first command after reopening: a fresh application appends one event to the run,
  long against short;
* ``plan_resume`` from the store, cold (fresh application), and its peak memory in a child.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench.core import Config, Figure, Stats, Target, interleave, ratios, timed
from bench.fixtures import import_run, ledger
from bench.stores import open_app, spine
from maka_es import RuntimeApplication
from maka_es.testing.builders import Events

GROUP_RESTART = "3. first command after a restart, and warm appends"
GROUP_PLAN = "4. plan_resume from the store, cold"


def _appender(
    app_of: Callable[[], RuntimeApplication], run_id: str, fresh: bool, phase: str
) -> Callable[[], float]:
    """Appends a NEW event per call (ids unique per ``phase``): the warm and the cold phases
    must not re-send each other's events, which would measure an exact retry instead."""
    count = [0]

    def run() -> float:
        count[0] += 1
        event = Events.wire(spine(run_id), ts=5000).text("more", event_id=f"{phase}-{count[0]}")
        app = app_of()
        try:
            return timed(lambda: app.ledger.append_event(run_id, event))
        finally:
            if fresh:
                app.close()

    return run


def _retry_cold(path: Path, run_id: str, size: int) -> float:
    """A fresh application re-sends the run's last imported event (a host retrying after a
    crash): an exact retry, answered by comparing the committed bytes."""
    last = ledger(spine(run_id), size, journaled=False)[-1]
    app = open_app(path)
    try:
        return timed(lambda: app.ledger.append_event(run_id, last))
    finally:
        app.close()


def build(cfg: Config) -> Path:
    path = cfg.workdir / "history" / "maka.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    app = open_app(path)
    for size in cfg.history_sizes:
        import_run(app, f"h{size}", size)
    app.close()
    return path


def _plan_child(path: Path, run_id: str) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.memprobe", str(path), run_id],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout.split()
    return float(out[0]), float(out[1]) / 2**20


def _cheap(child: list[tuple[float, float]], cfg: Config) -> bool:
    """Another cold plan in a child (timed, then traced: about three times the plan) fits."""
    return 3 * child[0][0] < cfg.budget_s / 3


def run(cfg: Config) -> list[Figure]:
    path = build(cfg)
    small, big = (f"h{size}" for size in cfg.history_sizes)
    label = f"{cfg.history_sizes[1]:,} vs {cfg.history_sizes[0]:,} events"
    live = open_app(path)
    warm = interleave(
        {n: _appender(lambda: live, n, False, "warm") for n in (small, big)},
        cfg.reps * 3,
        cfg.budget_s / 6,
    )
    live.close()
    cold = interleave(
        {n: _appender(lambda: open_app(path), n, True, "cold") for n in (small, big)},
        cfg.heavy_reps,
    )
    retry = [_retry_cold(path, big, cfg.history_sizes[1]) for _ in range(cfg.heavy_reps)]
    child = [_plan_child(path, big) for _ in range(cfg.heavy_reps)]

    def profile_cold() -> Callable[[], object]:
        return _appender(lambda: open_app(path), big, True, "profile-cold")

    def profile_warm() -> Callable[[], object]:
        app = open_app(path)
        append = _appender(lambda: app, big, False, "profile-warm")
        append()  # loads the run: what is profiled is a warm append
        return lambda: [append() for _ in range(20)]

    def profile_plan() -> Callable[[], object]:
        app = open_app(path)
        return lambda: app.plan_resume(big)

    return [
        Figure(
            GROUP_RESTART,
            f"first command after reopening, {cfg.history_sizes[1]:,}-event run",
            Stats.of(cold[big]).scaled(1e3),
            "ms",
            f"{cfg.history_sizes[0]:,}-event run {Stats.of(cold[small]).median * 1e3:.1f} ms",
            Target("<=", 50.0),
            profile_cold,
        ),
        Figure(
            GROUP_RESTART,
            f"exact retry of the run's last imported event after reopening, "
            f"{cfg.history_sizes[1]:,}-event run",
            Stats.of(retry).scaled(1e3),
            "ms",
            "the retried event is older than the snapshot: its committed bytes are read back",
        ),
        Figure(
            GROUP_RESTART,
            f"warm append, history {label}",
            ratios(warm[big], warm[small]),
            "x",
            f"short run {Stats.of(warm[small]).median * 1e3:.2f} ms",
            Target("<=", 1.2),
            profile_warm,
        ),
        Figure(
            GROUP_PLAN,
            f"plan_resume, {cfg.history_sizes[1]:,}-event run, cold",
            Stats.of([t for t, _ in child]),
            "s",
            "fresh process",
            Target("<=", 1.0),
            profile_plan,
        ),
        Figure(
            GROUP_PLAN,
            f"plan_resume peak memory, {cfg.history_sizes[1]:,}-event run",
            Stats.of([m for _, m in child]),
            "MiB",
            "Python heap peak (tracemalloc), fresh process",
            Target("<=", 150.0),
            profile_plan,
        ),
    ]
