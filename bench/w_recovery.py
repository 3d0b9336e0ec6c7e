"""Workload (f): startup recovery at scale, and one long run.

1. A store of ``recovery_runs`` runs (``recovery_events_per_run`` events each), 1% of them
   interrupted (a T1 with no T2), the rest completed; the recovery-status table never brought
   up to date. A fresh application runs ``recover()``.
2. On that store, now current, 1% more interrupted runs are written; a fresh application
   recovers again: this should cost what was written since, not the whole store.
3. One run of ``long_run_events`` events written since the last recovery (on a store of its
   own, brought current first); a fresh application recovers it (target: at most 1 s), against
   one short run written since on the big store.

The big store is written by the library on tmpfs (no fsync wait) by a pool of processes and
kept in the bench cache, keyed by its shape and the code (bench/recovery_store.py,
bench/cache.py); each run measures a fresh copy of it on disk.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from bench.cache import MANIFEST, WRITERS, cached
from bench.core import Config, Figure, Stats, Target
from bench.fixtures import import_run
from bench.recovery_store import STORE, Shape
from bench.recovery_store import build as build_store
from bench.stores import open_app

GROUP = "6. startup recovery"


def build(cfg: Config, folder: Path) -> tuple[Path, Shape, str]:
    """A copy in ``folder`` of the cached big store (built first if the cache has none for
    this shape and code); what it holds, and how long building it took."""
    shape = Shape(cfg.recovery_runs, cfg.recovery_events_per_run)
    scratch = (cfg.tmpfs or cfg.workdir) / "recovery-build"
    cached_at, built_s = cached(
        cfg.cache,
        "recovery",
        shape.params(),
        lambda into: build_store(into, shape, scratch=scratch, workers=cfg.fixture_workers),
        writers=(*WRITERS, "recovery_store.py"),
    )
    manifest = json.loads((cached_at / MANIFEST).read_text())
    how = f"built in {manifest['build_s']:.0f} s" + (
        f" by {cfg.fixture_workers} processes"
        if built_s is not None
        else " (an earlier run), reused from build/bench-cache"
    )
    print(f"fixture: recovery store {how}", flush=True)
    folder.mkdir(parents=True, exist_ok=True)
    for item in cached_at.glob(f"{STORE}*"):
        shutil.copy(item, folder / item.name)
    return folder / STORE, shape, how


def recover(path: Path) -> float:
    return recover_judging(path)[0]


def recover_judging(path: Path) -> tuple[float, int]:
    """Seconds a fresh application's ``recover()`` took, and how many runs its outcome names
    (each one a run it loaded and judged: what a recovery costs is per run judged)."""
    app = open_app(path)
    try:
        start = time.perf_counter()
        outcome = app.recover()
        seconds = time.perf_counter() - start
        return seconds, len({repair.run_id for repair in outcome.repairs})
    finally:
        app.close()


def write_runs(path: Path, prefix: str, runs: int, size: int) -> None:
    app = open_app(path)
    for n in range(runs):
        import_run(app, f"{prefix}{n}", size, interrupted=True)
    app.close()


def run(cfg: Config) -> list[Figure]:
    path, shape, how = build(cfg, cfg.workdir / "recovery")
    runs, per_run = shape.runs, shape.events_per_run
    first = recover(path)
    late = max(1, runs // 100)
    write_runs(path, "late", late, per_run)
    current, judged = recover_judging(path)
    write_runs(path, "short", 1, per_run)
    short = recover(path)
    size = f"{runs:,} runs / {runs * per_run:,} events, 1% interrupted"
    figures = [
        Figure(
            GROUP,
            f"recovery, status table never brought up to date: {size}",
            Stats.of([first]),
            "s",
            f"fresh application; store {how}",
            Target("<=", 2.0),
            lambda: _profile_first(cfg),
        ),
        Figure(
            GROUP,
            f"recovery once current, per interrupted run: {late} written since",
            Stats.of([current / late * 1e3]),
            "ms",
            f"{current:.2f} s in all; it judged {judged} runs: the {late} written since and "
            f"{judged - late} an earlier recovery left awaiting an operator",
            Target("<=", 5.0),
        ),
    ]
    projected = short * cfg.long_run_events / per_run
    if projected > cfg.size_cap_s:
        cfg.notes.append(
            f"recovery of one {cfg.long_run_events:,}-event run not run: projected "
            f"at least {projected:.0f} s (linearly from one {per_run}-event run), "
            f"over the size cap ({cfg.size_cap_s:.0f} s): its target is not measured"
        )
        return figures
    long = [recover_long(path, cfg)]
    return [
        *figures,
        Figure(
            GROUP,
            f"recovery of one long run, {cfg.long_run_events:,} events written since (issue 12)",
            Stats.of(long),
            "s",
            f"one {per_run}-event run: {short:.3f} s",
            Target("<=", 1.0),
            lambda: _profile_long(path, cfg),
        ),
    ]


def _profile_first(cfg: Config) -> Callable[[], object]:
    """A fresh copy of the cached store, never brought current: its first recovery."""
    path, _, _ = build(cfg, cfg.workdir / "recovery-profile")
    return lambda: recover(path)


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
