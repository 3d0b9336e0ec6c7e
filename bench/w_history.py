"""Targets 1, 2 and cold ``plan_resume``: what a long history costs, on runs written LIVE
through ``ToolRuntime`` (as hosts write them) and on runs imported in one save.

Why both kinds: an imported run's snapshot covers every event, while a live run's lags by
up to the library's snapshot cadence, so a restart or a retry can take another path on it
(issue 23). The fixtures (bench/fixtures.py ``history_stores``) are cached in
``build/bench-cache``. Three measurements, each contender a long-lived child:

* warm tool steps (target 1), on tmpfs so the figure is the library's, not the disk's: one
  round is ``warm_steps`` consecutive steps on the long live run, the long imported run and a
  fresh short run each; every step is one sample, so p50, p99 and max are of single steps,
  in the command thread's CPU time (the targets: the machine's load is not in it, a snapshot
  written inside the command is) and in wall-clock time;
* the first command after reopening (a new tool step) and the exact retry of an old event
  (target 2), each on a fresh copy of the store on disk, by a fresh application;
* cold ``plan_resume`` and its heap peak (target 5) in a fresh process per kind.

The restart rounds and the cold plans stop adding repetitions past the workload budget (a
100k-event exact retry that reads the whole history takes tens of seconds); ``n`` says how
many ran.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.child import Child
from bench.core import Config, Figure, Stats, Target
from bench.fixtures import (
    IMPORTED_RUN,
    IMPORTED_STORE,
    LIVE_RUN,
    LIVE_STORE,
    SHORT_EVENTS,
    SHORT_RUN,
    history_stores,
    ledger,
    live_steps,
)
from bench.rounds import Dist, Round, costs, run_rounds
from bench.stores import open_app, spine, tool_call

GROUP_STALL = "1. no stalls (warm tool step on a long run)"
GROUP_RESTART = "2. restart on a long run"
GROUP_PLAN = "5. cold plan_resume"
#: kind -> (store file, run id)
KINDS = {"live": (LIVE_STORE, LIVE_RUN), "imported": (IMPORTED_STORE, IMPORTED_RUN)}
#: Warm steps on a fixture's run are numbered from here (ids no fixture step used).
WARM_FROM = 10**6


def copy_store(source: Path, into: Path) -> Path:
    """A fresh copy of the SQLite store ``source`` (with its WAL files) in ``into``."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    for item in source.parent.glob(f"{source.name}*"):
        shutil.copy(item, into / item.name)
    return into / source.name


def warm_rounds(fixture: Path, cfg: Config) -> list[Round]:
    base = (cfg.tmpfs or cfg.workdir) / "history-warm"
    children: dict[str, Child] = {}
    try:
        for kind, (store, run_id) in KINDS.items():
            path = copy_store(fixture / store, base / kind)
            children[kind] = Child(
                "maka",
                path=str(path),
                batch=cfg.warm_steps,
                run_id=run_id,
                first=WARM_FROM,
            )
        short = copy_store(fixture / LIVE_STORE, base / "short")
        children["short"] = Child(
            "maka",
            path=str(short),
            batch=cfg.warm_steps,
            prefill=live_steps(SHORT_EVENTS),
        )
        for child in children.values():
            child.batch()  # warm: the first steps load the run (that is target 2's figure)
        steps = {k: (lambda c=c: c.last_cpu_steps) for k, c in children.items()}
        return run_rounds({k: c.batch for k, c in children.items()}, cfg.reps, cpu_steps=steps)
    finally:
        for child in children.values():
            child.close()


def restart_rounds(fixture: Path, cfg: Config) -> list[Round]:
    """First command and exact retry after reopening, each on a fresh copy per batch."""
    scratch = cfg.workdir / "history-restart"
    old = {
        "live": tool_call(spine(LIVE_RUN), 1),  # the first step's call, committed by its T1
        "imported": ledger(spine(IMPORTED_RUN), 10, journaled=False)[5],
    }
    specs: dict[str, dict[str, object]] = {
        "first short": {"source": fixture / LIVE_STORE, "run_id": SHORT_RUN},
        **{f"first {k}": {"source": fixture / s, "run_id": r} for k, (s, r) in KINDS.items()},
        **{
            f"retry {k}": {"source": fixture / s, "run_id": r, "event": old[k]}
            for k, (s, r) in KINDS.items()
        },
    }
    children: dict[str, Child] = {}
    try:
        for n, (name, spec) in enumerate(specs.items()):
            params = {
                **spec,
                "source": str(spec["source"]),
                "scratch": str(scratch / str(n)),
            }
            children[name] = Child("reopen", **params)
        reps = cfg.heavy_reps + (0 if cfg.quick else 1)
        batches = {k: c.batch for k, c in children.items()}
        return run_rounds(batches, reps, budget_s=cfg.budget_s / 2)
    finally:
        for child in children.values():
            child.close()


def _plan_child(fixture: Path, kind: str, cfg: Config) -> tuple[float, float]:
    store, run_id = KINDS[kind]
    path = copy_store(fixture / store, cfg.workdir / "history-plan")
    out = subprocess.run(
        [sys.executable, "-m", "bench.memprobe", str(path), run_id],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout.split()
    return float(out[0]), float(out[1]) / 2**20


def _steps_profile(fixture: Path, kind: str, cfg: Config) -> Callable[[], Callable[[], object]]:
    def prepare() -> Callable[[], object]:
        from bench.contenders import MakaSteps

        store, run_id = KINDS[kind]
        path = copy_store(fixture / store, (cfg.tmpfs or cfg.workdir) / "history-profile")
        steps = MakaSteps(str(path), 1, run_id=run_id, first=2 * WARM_FROM)
        steps.batch()  # loads the run: what is profiled is warm steps only
        steps.batch_size = max(cfg.warm_steps, 400)
        return steps.batch

    return prepare


def _reopen_profile(
    fixture: Path, kind: str, cfg: Config, retry: bool
) -> Callable[[], Callable[[], object]]:
    def prepare() -> Callable[[], object]:
        store, run_id = KINDS[kind]
        path = copy_store(fixture / store, cfg.workdir / "history-profile")
        app = open_app(path)
        if retry:
            event = (
                tool_call(spine(LIVE_RUN), 1)
                if kind == "live"
                else ledger(spine(IMPORTED_RUN), 10, journaled=False)[5]
            )
            return lambda: app.ledger.append_event(run_id, event)
        return lambda: app.tool_runtime.execute(run_id, tool_call(spine(run_id), 3 * WARM_FROM))

    return prepare


def _plan_profile(fixture: Path, kind: str, cfg: Config) -> Callable[[], Callable[[], object]]:
    def prepare() -> Callable[[], object]:
        store, run_id = KINDS[kind]
        app = open_app(copy_store(fixture / store, cfg.workdir / "history-profile"))
        return lambda: app.plan_resume(run_id)

    return prepare


def _dist_text(d: Dist) -> str:
    return (
        f"p50 {d.p50 * 1e3:.2f} ms, p99 {d.p99 * 1e3:.2f} ms, max {d.max * 1e3:.1f} ms, "
        f"mean {d.mean * 1e3:.2f} ms over {d.n:,} steps"
    )


def _overall(value: float, per_round: Sequence[float]) -> Stats:
    """An overall figure (over every sample) with the min-max of the rounds' own figures."""
    return Stats(value, min(per_round), max(per_round), len(per_round))


def stall_rows(rounds: Sequence[Round], size: int, fixture: Path, cfg: Config) -> list[Figure]:
    """p99 / p50 and mean / short run's mean, in the steps' CPU time (the command thread's:
    the targets, since the machine's load does not enter it) and in wall-clock time."""
    figures: list[Figure] = []
    for measure in ("CPU time", "wall clock"):

        def of(r: Round, name: str, cpu: bool = measure == "CPU time") -> list[float]:
            return r.cpu_steps[name] if cpu else r.samples[name]

        short = Dist.of([s for r in rounds for s in of(r, "short")])
        for kind in KINDS:
            d = Dist.of([s for r in rounds for s in of(r, kind)])
            per_round = [Dist.of(of(r, kind)) for r in rounds]
            mean_ratio = [
                x.mean / Dist.of(of(r, "short")).mean
                for x, r in zip(per_round, rounds, strict=True)
            ]
            profile = _steps_profile(fixture, kind, cfg)
            gate = measure == "CPU time"
            figures += [
                Figure(
                    GROUP_STALL,
                    f"p99 / p50 of a warm tool step ({measure}), {size:,}-event {kind} run",
                    _overall(d.p99 / d.p50, [x.p99 / x.p50 for x in per_round]),
                    "x",
                    _dist_text(d),
                    Target("<=", 2.0) if gate else None,
                    profile,
                ),
                Figure(
                    GROUP_STALL,
                    f"mean warm tool step ({measure}), {size:,}-event {kind} run / short run",
                    _overall(d.mean / short.mean, mean_ratio),
                    "x",
                    f"short run ({SHORT_EVENTS}+ events, tmpfs): {_dist_text(short)}",
                    Target("<=", 1.2) if gate else None,
                    profile,
                ),
            ]
    return figures


def restart_rows(rounds: Sequence[Round], size: int, fixture: Path, cfg: Config) -> list[Figure]:
    short = statistics.median(costs(rounds, "first short")) * 1e3
    figures: list[Figure] = []
    for what in ("first", "retry"):
        for kind in KINDS:
            label = (
                f"first command (a tool step) after reopening, {size:,}-event {kind} run"
                if what == "first"
                else f"exact retry of an old event after reopening, {size:,}-event {kind} run"
            )
            figures.append(
                Figure(
                    GROUP_RESTART,
                    label,
                    Stats.of(costs(rounds, f"{what} {kind}")).scaled(1e3),
                    "ms",
                    f"disk, fresh copy each; {SHORT_EVENTS}-event run first command {short:.1f} ms",
                    Target("<=", 50.0),
                    _reopen_profile(fixture, kind, cfg, what == "retry"),
                )
            )
    return figures


def plan_rows(fixture: Path, size: int, cfg: Config) -> list[Figure]:
    figures: list[Figure] = []
    for kind in KINDS:
        child = [_plan_child(fixture, kind, cfg)]
        while len(child) < cfg.heavy_reps and 3 * child[0][0] < cfg.budget_s / 3:
            child.append(_plan_child(fixture, kind, cfg))  # another fits the budget
        profile = _plan_profile(fixture, kind, cfg)
        figures += [
            Figure(
                GROUP_PLAN,
                f"plan_resume, {size:,}-event {kind} run, cold",
                Stats.of([t for t, _ in child]),
                "s",
                "fresh process, fresh copy of the store",
                Target("<=", 1.5),
                profile,
            ),
            Figure(
                GROUP_PLAN,
                f"plan_resume peak memory, {size:,}-event {kind} run",
                Stats.of([m for _, m in child]),
                "MiB",
                "Python heap peak (tracemalloc), fresh process",
                Target("<=", 150.0),
                profile,
            ),
        ]
    return figures


def run(cfg: Config) -> list[Figure]:
    size = cfg.history_sizes[1]
    fixture = history_stores(cfg.cache, size, (cfg.tmpfs or cfg.workdir) / "history-build")
    figures = stall_rows(warm_rounds(fixture, cfg), size, fixture, cfg)
    print(f"history: warm steps measured, {len(figures)} rows", flush=True)
    figures += restart_rows(restart_rounds(fixture, cfg), size, fixture, cfg)
    print("history: first commands and exact retries after reopening measured", flush=True)
    return figures + plan_rows(fixture, size, cfg)
