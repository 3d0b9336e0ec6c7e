"""Workload (c): Phase 0 plan scaling at 1k, 10k, 100k and 1M events.

Two figures per size: the plan over already-parsed events (``build_resume_plan``), and parsing
plus planning (``RuntimeEvent.model_validate_json`` per line, then the plan). Sizes are
interleaved per repetition; the largest size gets one repetition in a full run (ADR 0027).
Growth per 10x is taken against the size below it, measured in the same run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from bench.core import Config, Figure, Stats, Target, ratios, timed
from bench.fixtures import ledger_lines
from maka_es import RuntimeEvent, build_resume_plan

GROUP = "4. plan scaling"


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
            Target(">=", 300_000),
            profile,
        ),
        Figure(
            GROUP,
            f"parse + plan, {size:,} events",
            full,
            "ev/s",
            f"{Stats.of(both).median:.3f} s",
            Target(">=", 100_000),
            profile,
        ),
    ]


def affordable(cfg: Config) -> list[int]:
    """The sizes whose one pass, projected linearly from a 1k-event pass, fits the budget;
    the others are named in the report's notes, not silently dropped."""
    per_event = sum(measure(ledger_lines(cfg.cache, 1_000))) / 1_000
    sizes: list[int] = []
    for size in cfg.plan_sizes:
        projected = per_event * size * _reps_for(size, cfg)
        if sizes and projected > cfg.budget_s / 2:
            cfg.notes.append(
                f"plan scaling at {size:,} events not run: projected {projected:.0f} s "
                f"(from a 1k-event pass) is over half the workload budget "
                f"({cfg.budget_s:.0f} s)"
            )
            continue
        sizes.append(size)
    return sizes


def run(cfg: Config) -> list[Figure]:
    corpora = {size: ledger_lines(cfg.cache, size) for size in affordable(cfg)}
    plan: dict[int, list[float]] = {size: [] for size in corpora}
    both: dict[int, list[float]] = {size: [] for size in corpora}
    for rep in range(cfg.reps):
        for size, lines in corpora.items():
            if rep < _reps_for(size, cfg):
                parse_s, plan_s = measure(lines)
                plan[size].append(plan_s)
                both[size].append(parse_s + plan_s)
    figures: list[Figure] = []
    sizes = sorted(corpora)
    for size in sizes:
        figures += _size_rows(size, plan[size], both[size], _profile(corpora[size]))
    for small, big in itertools.pairwise(sizes):
        k = min(len(plan[small]), len(plan[big]))
        growth = f"{big // small}x the events ({small:,} -> {big:,})"
        for what, times in (("plan", plan), ("parse + plan", both)):
            figures.append(
                Figure(
                    GROUP,
                    f"{what} time growth, {growth}",
                    ratios(times[big][:k], times[small][:k]),
                    "x",
                    "same run",
                    Target("<=", 1.1 * big / small),
                    _profile(corpora[big]),
                )
            )
    return figures
