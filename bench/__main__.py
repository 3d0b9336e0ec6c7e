"""``python -m bench [--quick | --tiny] [--out PATH] [--only NAME ...]`` (``make bench``).

A full run writes docs/benchmarks.md; ``--quick`` (``make bench-quick``, about a minute) and
``--tiny`` (the CI smoke test) shrink every size and write to a temporary file unless ``--out``
says otherwise. Every figure is printed as it is measured.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.core import Config, Figure
from bench.envinfo import environment
from bench.report import cell, missed_sections, render, verdict

ROOT = Path(__file__).resolve().parents[1]
#: Each workload's module (imported when it runs: the peers load only for their workloads).
WORKLOADS: dict[str, str] = {
    "import": "bench.w_import",
    "tool_step": "bench.w_tool_step",
    "resume": "bench.w_resume",
    "plan": "bench.w_plan",
    "recovery": "bench.w_recovery",
    "history": "bench.w_history",
    "agent": "bench.w_agent",
    "postgres": "bench.w_postgres",
}
#: Workloads that may produce no rows (skipped with a printed reason).
OPTIONAL = frozenset({"postgres"})
SIZES: dict[str, dict[str, Any]] = {
    "full": {
        "reps": 5,
        "heavy_reps": 2,
        "budget_s": 120.0,
        "size_cap_s": 600.0,
        "step_batch": 20,
        "history_sizes": (100, 100_000),
        "plan_sizes": (1_000, 10_000, 100_000, 1_000_000),
        "recovery_runs": 1_000,
        "recovery_events_per_run": 100,
        "long_run_events": 30_000,
        "resume_steps": 100,
        "warm_steps": 200,
    },
    "quick": {
        "reps": 3,
        "heavy_reps": 2,
        "budget_s": 30.0,
        "size_cap_s": 60.0,
        "step_batch": 10,
        "history_sizes": (100, 2_000),
        "plan_sizes": (1_000, 10_000),
        "recovery_runs": 100,
        "recovery_events_per_run": 20,
        "long_run_events": 1_000,
        "resume_steps": 50,
        "warm_steps": 50,
    },
    "tiny": {
        "reps": 2,
        "heavy_reps": 1,
        "budget_s": 10.0,
        "size_cap_s": 20.0,
        "step_batch": 3,
        "history_sizes": (20, 200),
        "plan_sizes": (100, 1_000),
        "recovery_runs": 20,
        "recovery_events_per_run": 10,
        "long_run_events": 100,
        "resume_steps": 5,
        "warm_steps": 10,
    },
}


def config(size: str, scratch: Path) -> Config:
    """Sizes for ``size``; disk figures under ``scratch``, CPU figures on tmpfs if present."""
    shm = Path("/dev/shm")
    tmpfs = Path(tempfile.mkdtemp(dir=shm, prefix="maka-bench-")) if shm.is_dir() else None
    return Config(
        quick=size != "full",
        workdir=scratch / "disk",
        tmpfs=tmpfs,
        cache=ROOT / "build" / "bench-cache",
        fixture_workers=max(1, min(2, os.cpu_count() or 1)),
        **SIZES[size],
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="about a minute, small sizes")
    parser.add_argument("--tiny", action="store_true", help="smallest sizes (CI smoke test)")
    parser.add_argument("--out", type=Path, help="where to write the markdown")
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="some workloads")
    args = parser.parse_args(argv)
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    default = (
        ROOT / "docs" / "benchmarks.md"
        if size == "full"
        else Path(tempfile.gettempdir()) / f"maka_es-bench-{size}.md"
    )
    out: Path = args.out or default
    scratch = Path(tempfile.mkdtemp(prefix="maka-bench-"))
    cfg = config(size, scratch)
    started = time.perf_counter()
    figures: list[Figure] = []
    profiles: list[str] = []
    names = args.only or list(WORKLOADS)
    empty: list[str] = []
    try:
        env = environment(cfg.workdir / "env")
        print(f"environment: {env}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        for done, name in enumerate(names, 1):
            rows = run_one(name, cfg, figures)
            empty += [] if rows else [name]
            profiles += missed_sections(figures[len(figures) - rows :])
            left = names[done:]
            note = f"Size: `{size}`; {time.perf_counter() - started:.0f} s so far" + (
                f"; **partial: not run yet: {', '.join(left)}**" if left else "; complete"
            )
            out.write_text(render(figures, env, note, cfg.notes, profiles))
        total = time.perf_counter() - started
        print(f"total wall time: {total:.0f} s", flush=True)
        env += f"; total wall time of this run {total:.0f} s"
        out.write_text(render(figures, env, note, cfg.notes, profiles))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if cfg.tmpfs is not None:
            shutil.rmtree(cfg.tmpfs, ignore_errors=True)
    print(f"wrote {out} ({len(figures)} rows)", flush=True)
    missing = [name for name in empty if name not in OPTIONAL]
    if missing:
        print(f"no rows from: {', '.join(missing)}", flush=True)
    return 1 if missing else 0


def run_one(name: str, cfg: Config, figures: list[Figure]) -> int:
    """Run one workload, printing each row as it comes; the number of rows."""
    begun = time.perf_counter()
    workload: Callable[[Config], list[Figure]] = importlib.import_module(WORKLOADS[name]).run
    rows = workload(cfg)
    for f in rows:
        figures.append(f)
        print(f"row: {f.group} | {f.label} | {cell(f.value, f.unit)} | {verdict(f)}", flush=True)
    print(f"workload {name}: {len(rows)} rows, {time.perf_counter() - begun:.1f} s", flush=True)
    return len(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
