"""Workload (c): Phase 0 plan scaling at 1k, 10k, 100k and 1M events.

Two figures per size: the plan over already-parsed events (``build_resume_plan``), and parsing
plus planning (``RuntimeEvent.model_validate_json`` per line, then the plan). Sizes up to
100k are interleaved per repetition in this process; 1M runs once in a child process (its
peak memory is a row), unless one pass is projected over the size cap (ADR 0027). Growth per
10x is taken against the size below it, measured in the same run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from bench.core import Config, Figure, Stats, Target, ratios, timed
from bench.fixtures import in_child, ledger_lines, ledger_path
from bench.planprobe import one_pass
from maka_es import RuntimeEvent, build_resume_plan

GROUP = "5. plan scaling"
#: From this size a pass runs once, in a child process (its memory is given back).
CHILD_FROM = 1_000_000


def parse(lines: list[str]) -> list[RuntimeEvent]:
    return [RuntimeEvent.model_validate_json(line) for line in lines]


def measure(lines: list[str]) -> tuple[float, float]:
    """(parse seconds, plan seconds) for one pass."""
    events: list[RuntimeEvent] = []
    parse_s = timed(lambda: events.extend(parse(lines)))
    plan_s = timed(lambda: build_resume_plan(events))
    return parse_s, plan_s


def _reps_for(size: int, cfg: Config) -> int:
    return 1 if size >= 1_000_000 else cfg.heavy_reps if size >= 100_000 else cfg.reps


def _profile(lines: list[str]) -> Callable[[], Callable[[], object]]:
    return lambda: lambda: build_resume_plan(parse(lines))


def _size_rows(
    size: int, plan: list[float], both: list[float], profile: Callable[[], Callable[[], object]]
) -> list[Figure]:
    rate = Stats.of([size / s for s in plan])
    full = Stats.of([size / s for s in both])
    return [
        Figure(
            GROUP,
            f"plan over parsed events, {size:,} events",
            rate,
            "ev/s",
            f"{Stats.of(plan).median:.3f} s",
            Target(">=", 150_000),
            profile,
        ),
        Figure(
            GROUP,
            f"parse + plan, {size:,} events",
            full,
            "ev/s",
            f"{Stats.of(both).median:.3f} s",
            Target(">=", 80_000),
            profile,
        ),
    ]


def affordable(cfg: Config, sizes: list[int]) -> list[int]:
    """The in-process sizes whose passes, projected linearly from a 1k-event pass, fit the
    size cap; the others are named in the report's notes, not silently dropped."""
    per_event = sum(measure(ledger_lines(cfg.cache, 1_000))) / 1_000
    kept: list[int] = []
    for size in sizes:
        projected = per_event * size * _reps_for(size, cfg)
        if kept and projected > cfg.size_cap_s:
            cfg.notes.append(
                f"plan scaling at {size:,} events not run: projected {projected:.0f} s "
                f"(from a 1k-event pass) is over the size cap ({cfg.size_cap_s:.0f} s)"
            )
            continue
        kept.append(size)
    return kept


def projected_pass(size: int, both: dict[int, list[float]]) -> float:
    """One parse + plan pass at ``size``, projected from the largest size measured: linear,
    times the growth per 10x seen between the two largest sizes when it is over 10x."""
    measured = sorted(s for s in both if both[s])
    top = measured[-1]
    per_event = Stats.of(both[top]).median / top
    growth = 1.0
    if len(measured) > 1:
        below = measured[-2]
        seen = Stats.of(both[top]).median / Stats.of(both[below]).median
        growth = max(1.0, seen / (top / below))
    return float(per_event * size * math.pow(growth, math.log10(size / top)))


def child_sizes(
    cfg: Config, plan: dict[int, list[float]], both: dict[int, list[float]]
) -> dict[int, int]:
    """The sizes from ``CHILD_FROM`` up: one pass each in a fresh process, unless projected
    over the size cap (then a note says so). Fills ``plan`` and ``both``; returns each
    measured size's peak resident bytes."""
    peaks: dict[int, int] = {}
    for size in (s for s in cfg.plan_sizes if s >= CHILD_FROM):
        projected = projected_pass(size, both)
        if projected > cfg.size_cap_s:
            cfg.notes.append(
                f"plan scaling at {size:,} events not measured: one pass projected at "
                f"{projected:.0f} s (from the {max(both):,}-event pass) is over the size cap "
                f"({cfg.size_cap_s:.0f} s)"
            )
            continue
        path = ledger_path(cfg.cache, size, child=True)
        print(f"plan: one {size:,}-event pass in a child, projected {projected:.0f} s", flush=True)
        parse_s, plan_s, peaks[size] = in_child(one_pass, path)
        plan[size], both[size] = [plan_s], [parse_s + plan_s]
    return peaks


def _lazy_profile(cfg: Config, size: int) -> Callable[[], Callable[[], object]]:
    """The profile of a child-measured size, loading its corpus only if it is profiled."""
    return lambda: _profile(ledger_lines(cfg.cache, size))()


def run(cfg: Config) -> list[Figure]:
    small = affordable(cfg, [s for s in cfg.plan_sizes if s < CHILD_FROM])
    corpora = {size: ledger_lines(cfg.cache, size) for size in small}
    plan: dict[int, list[float]] = {size: [] for size in corpora}
    both: dict[int, list[float]] = {size: [] for size in corpora}
    for rep in range(cfg.reps):
        for size, lines in corpora.items():
            if rep < _reps_for(size, cfg):
                parse_s, plan_s = measure(lines)
                plan[size].append(plan_s)
                both[size].append(parse_s + plan_s)
    peaks = child_sizes(cfg, plan, both)
    profiles = {s: _profile(corpora[s]) if s in corpora else _lazy_profile(cfg, s) for s in plan}
    figures: list[Figure] = []
    sizes = sorted(plan)
    for size in sizes:
        figures += _size_rows(size, plan[size], both[size], profiles[size])
    figures += [_peak_row(size, peak) for size, peak in peaks.items()]
    for small_size, big in itertools.pairwise(sizes):
        figures += _growth_rows(small_size, big, plan, both, profiles[big])
    return figures


def _peak_row(size: int, peak: int) -> Figure:
    return Figure(
        GROUP,
        f"parse + plan peak memory, {size:,} events",
        Stats.of([peak / 2**20]),
        "MiB",
        "resident set (ru_maxrss), child process, corpus text included",
    )


def _growth_rows(
    small: int,
    big: int,
    plan: dict[int, list[float]],
    both: dict[int, list[float]],
    profile: Callable[[], Callable[[], object]],
) -> list[Figure]:
    k = min(len(plan[small]), len(plan[big]))
    growth = f"{big // small}x the events ({small:,} -> {big:,})"
    return [
        Figure(
            GROUP,
            f"{what} time growth, {growth}",
            ratios(times[big][:k], times[small][:k]),
            "x",
            "same run",
            Target("<=", 1.1 * big / small),
            profile,
        )
        for what, times in (("plan", plan), ("parse + plan", both))
    ]
