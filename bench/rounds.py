"""Rounds of long-lived contenders, each batch labelled by the disk's fsync regime.

Why rounds of child processes: a contender that starts fresh for every batch pays its imports,
caches and connection set-up in the figure, and contenders timed one after another see
different background load. Each contender here is one long-lived child process
(``bench/child.py``); a round runs one batch of each, the order rotated every round, and a
ratio is taken inside a round (docs/adr/0027-benchmark-method.md, amendment of issue 23).

Why fsync regimes: the disk of the bench machine switches between fast (~0.4 ms) and slow
(~4 ms) fsyncs within seconds. A few raw fsyncs are timed before and after each batch; the
batch ran in the regime of their median, a round in the regime all its batches ran in
(``mixed`` when they differ), and disk rows are reported per regime, so a ratio is never
taken across a switch unseen.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: An fsync under this many seconds is the fast regime; at or over it, the slow one.
FAST_BELOW = 0.0015
#: Raw fsyncs timed before and after each batch.
PROBES = 3


def fsync_seconds(folder: Path, count: int = PROBES) -> list[float]:
    """``count`` raw fsyncs of a 4 KiB write in ``folder``: what the disk costs right now."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".fsync-probe"
    out: list[float] = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for n in range(count):
            os.pwrite(fd, bytes([n % 256]) * 4096, 0)
            start = time.perf_counter()
            os.fsync(fd)
            out.append(time.perf_counter() - start)
    finally:
        os.close(fd)
    return out


def regime_of(fsyncs: Sequence[float]) -> str:
    """``fast``, ``slow`` or ``mixed`` (probes on both sides of ``FAST_BELOW``); ``tmpfs``
    when nothing was probed."""
    if not fsyncs:
        return "tmpfs"
    fast = [s < FAST_BELOW for s in fsyncs]
    return "fast" if all(fast) else "slow" if not any(fast) else "mixed"


def batch_regime(fsyncs: Sequence[float]) -> str:
    """The regime one batch ran in: the median of the probes around it, so one slow fsync
    among fast ones does not relabel the batch (the disk switches for seconds at a time)."""
    return "fast" if statistics.median(fsyncs) < FAST_BELOW else "slow"


def regime_label(fsyncs: Sequence[float], regime: str | None = None) -> str:
    """The row label of a regime with its median fsync, e.g. ``fast fsync ~0.4 ms``;
    ``regime`` is the rounds' own (``by_regime``'s key), else judged on all the probes."""
    regime = regime or regime_of(fsyncs)
    if regime == "tmpfs":
        return "tmpfs (fsync nearly free)"
    return f"{regime} fsync ~{statistics.median(fsyncs) * 1e3:.2g} ms"


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100): a value that was measured."""
    if not values:
        raise ValueError("no samples")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is not in (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Dist:
    """p50, p99, max and mean of ``n`` single-step samples (not medians of batches)."""

    p50: float
    p99: float
    max: float
    mean: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Dist:
        return cls(
            percentile(values, 50),
            percentile(values, 99),
            max(values),
            statistics.fmean(values),
            len(values),
        )


@dataclass
class Round:
    """One batch per contender: each one's samples (seconds per unit) and the fsync probes."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    fsyncs: list[float] = field(default_factory=list)
    #: process CPU seconds per unit of each contender's batch, when its child reported it
    cpu: dict[str, float] = field(default_factory=dict)
    #: CPU seconds of each step of each contender's batch, when its child timed steps
    cpu_steps: dict[str, list[float]] = field(default_factory=dict)
    #: the regime of each batch: the median of the probes before and after it
    batch_regimes: list[str] = field(default_factory=list)

    @property
    def regime(self) -> str:
        """The regime every batch of the round ran in (``mixed`` when they differ); a round
        with no per-batch regimes is judged on all its probes."""
        if not self.batch_regimes:
            return regime_of(self.fsyncs)
        first = self.batch_regimes[0]
        return first if all(r == first for r in self.batch_regimes) else "mixed"

    def cost(self, name: str) -> float:
        """The contender's mean cost per unit in this round."""
        return statistics.fmean(self.samples[name])


def run_rounds(
    batches: Mapping[str, Callable[[], list[float]]],
    reps: int,
    *,
    budget_s: float | None = None,
    probe: Path | None = None,
    cpu: Mapping[str, Callable[[], float]] | None = None,
    cpu_steps: Mapping[str, Callable[[], list[float]]] | None = None,
) -> list[Round]:
    """``reps`` rounds, one batch of each contender per round in rotated order; past
    ``budget_s`` no further round starts (at least one runs). With ``probe`` (a folder on the
    measured disk) raw fsyncs are timed before and after every batch; ``cpu`` gives, per
    contender, the CPU time per unit of the batch just run (a child's ``last_cpu``), and
    ``cpu_steps`` the CPU time of each of its steps (``last_cpu_steps``)."""
    names = list(batches)
    rounds: list[Round] = []
    start = time.perf_counter()
    for rep in range(reps):
        if rep and budget_s is not None and time.perf_counter() - start > budget_s:
            break
        shift = rep % len(names)
        current = Round()
        for name in names[shift:] + names[:shift]:
            before = fsync_seconds(probe) if probe is not None else []
            current.samples[name] = batches[name]()
            if cpu is not None and name in cpu:
                current.cpu[name] = cpu[name]()
            if cpu_steps is not None and name in cpu_steps:
                current.cpu_steps[name] = cpu_steps[name]()
            if probe is not None:
                around = before + fsync_seconds(probe)
                current.fsyncs += around
                current.batch_regimes.append(batch_regime(around))
        rounds.append(current)
    return rounds


def by_regime(rounds: Sequence[Round]) -> dict[str, list[Round]]:
    """Rounds grouped by regime, fast first (``mixed`` rounds are kept, labelled as such)."""
    order = {"tmpfs": 0, "fast": 1, "slow": 2, "mixed": 3}
    groups: dict[str, list[Round]] = {}
    for r in sorted(rounds, key=lambda r: order[r.regime]):
        groups.setdefault(r.regime, []).append(r)
    return groups


def within(rounds: Sequence[Round], numerator: str, denominator: str) -> list[float]:
    """Per-round ratios of two contenders' mean costs (same round, same drift)."""
    return [r.cost(numerator) / r.cost(denominator) for r in rounds]


def costs(rounds: Sequence[Round], name: str) -> list[float]:
    return [r.cost(name) for r in rounds]


def cpu_within(rounds: Sequence[Round], numerator: str, denominator: str) -> list[float]:
    """Per-round ratios of two contenders' CPU time per unit."""
    return [r.cpu[numerator] / r.cpu[denominator] for r in rounds]


def cpu_costs(rounds: Sequence[Round], name: str) -> list[float]:
    return [r.cpu[name] for r in rounds]


def probes(rounds: Sequence[Round]) -> list[float]:
    return [s for r in rounds for s in r.fsyncs]
