"""Timing primitives: interleaved repetitions, medians and min-max, ratios taken per repetition.

Why interleave: on a shared 2-core machine the background load drifts during a run. Timing all
of A and then all of B would fold that drift into the comparison; running A, B, A, B ... (the
order rotated every repetition) exposes both to the same drift, and a ratio taken inside each
repetition cancels most of it (docs/adr/0027-benchmark-method.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class Stats:
    """Median and min-max of ``n`` repetitions."""

    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        if not values:
            raise ValueError("no samples")
        return cls(statistics.median(values), min(values), max(values), len(values))

    def scaled(self, factor: float) -> Stats:
        return Stats(self.median * factor, self.lo * factor, self.hi * factor, self.n)


@dataclass(frozen=True)
class Target:
    """A bound the median must meet: ``<=`` (at most) or ``>=`` (at least)."""

    op: Literal["<=", ">="]
    bound: float

    def met_by(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value >= self.bound


@dataclass(frozen=True)
class Figure:
    """One row of docs/benchmarks.md: a measured figure, its unit, and its target if any.

    ``profile`` prepares one unit of the workload (its fixture still on disk) and returns the
    action to profile when the target is missed; ``group`` names the issue's target.
    """

    group: str
    label: str
    value: Stats
    unit: str
    baseline: str
    target: Target | None = None
    profile: Callable[[], Callable[[], object]] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.target.met_by(self.value.median)


@dataclass(frozen=True)
class Config:
    """Sizes and repetitions for one bench run (``quick`` shrinks both)."""

    quick: bool
    workdir: Path
    tmpfs: Path | None
    cache: Path
    reps: int
    #: repetitions of the workloads that take seconds each (100k-event runs)
    heavy_reps: int
    step_batch: int
    history_sizes: tuple[int, int]
    plan_sizes: tuple[int, ...]
    recovery_runs: int
    recovery_events_per_run: int
    long_run_events: int
    resume_steps: int
    #: warm tool steps per round on each long run (each step one sample: p50, p99, max)
    warm_steps: int
    #: seconds a workload may spend before it stops adding repetitions or sizes
    budget_s: float = 600.0
    #: seconds one pass of one size may be projected to take before that size is not run
    #: (and named in the notes): what bounds the 1M-event plan and the long recovery run
    size_cap_s: float = 600.0
    #: child processes that write the recovery store (bench/recovery_store.py)
    fixture_workers: int = 2
    #: what was measured smaller or fewer times than asked, and why (printed in the report)
    notes: list[str] = field(default_factory=list)


def timed(action: Callable[[], object]) -> float:
    """Seconds ``action`` took (monotonic, high resolution)."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def interleave(
    contenders: Mapping[str, Callable[[], float]], reps: int, budget_s: float | None = None
) -> dict[str, list[float]]:
    """Run every contender once per repetition, rotating the order (A B C, B C A, ...).

    Each callable runs one batch and returns its own per-unit cost, so a contender that needs
    set-up per batch (a fresh run, thread or workflow) keeps it out of the figure. Past
    ``budget_s`` no further repetition starts (at least one always runs; ``n`` says how many).
    """
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    start = time.perf_counter()
    for rep in range(reps):
        if rep and budget_s is not None and time.perf_counter() - start > budget_s:
            break
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(contenders[name]())
    return samples


def ratios(numerator: Sequence[float], denominator: Sequence[float]) -> Stats:
    """Per-repetition ratios (same repetition, same drift), summarised."""
    return Stats.of([a / b for a, b in zip(numerator, denominator, strict=True)])
