"""The bench method (ADR 0027) without the peers: interleaving, per-repetition ratios, the
time budget, verdicts against targets and the report's sections. No timing is asserted."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import OPTIONAL, SIZES, WORKLOADS
from bench.core import Figure, Stats, Target, interleave, ratios
from bench.report import render, table


def test_interleave_rotates_the_order_every_repetition() -> None:
    order: list[str] = []

    def contender(name: str) -> float:
        order.append(name)
        return 1.0

    samples = interleave({n: lambda n=n: contender(n) for n in "ABC"}, reps=3)  # type: ignore[misc]
    assert order == list("ABCBCACAB")
    assert {n: len(s) for n, s in samples.items()} == {"A": 3, "B": 3, "C": 3}


def test_budget_stops_new_repetitions_but_keeps_one() -> None:
    calls = itertools.count()
    samples = interleave({"A": lambda: float(next(calls))}, reps=10, budget_s=0.0)
    assert samples == {"A": [0.0]}


def test_ratios_pair_each_repetition_with_its_own_baseline() -> None:
    drifting_a, drifting_b = [2.0, 4.0, 8.0], [1.0, 2.0, 4.0]
    assert ratios(drifting_a, drifting_b) == Stats(2.0, 2.0, 2.0, 3)
    with pytest.raises(ValueError, match="zip"):
        ratios([1.0], [1.0, 2.0])


def test_stats_median_and_range() -> None:
    assert Stats.of([3.0, 1.0, 2.0, 10.0]) == Stats(2.5, 1.0, 10.0, 4)
    with pytest.raises(ValueError, match="no samples"):
        Stats.of([])


@pytest.mark.parametrize(
    ("target", "median", "met"),
    [
        (Target("<=", 1.3), 1.3, True),
        (Target("<=", 1.3), 1.31, False),
        (Target(">=", 4.0), 3.9, False),
        (Target(">=", 4.0), 4.0, True),
    ],
)
def test_verdict_is_taken_on_the_median(target: Target, median: float, met: bool) -> None:
    figure = Figure("g", "f", Stats(median, 0.0, 100.0, 3), "x", "b", target)
    assert figure.met is met


def test_report_marks_missed_targets_and_notes_cut_sizes() -> None:
    figures = [
        Figure("1. g", "met one", Stats(1.0, 1.0, 1.0, 1), "x", "base", Target("<=", 1.3)),
        Figure("1. g", "missed one", Stats(3.0, 2.0, 4.0, 3), "x", "base", Target("<=", 1.3)),
        Figure("i", "informational", Stats(5.0, 5.0, 5.0, 1), "ms", "base"),
    ]
    rows = table(figures)
    assert len(rows) == 2 + len(figures)
    assert "**met**" in rows[2]
    assert "**missed**" in rows[3]
    assert rows[4].endswith("| — |")
    text = render(figures, "ENV", "NOTE", ["plan at 1,000,000 events not run"])
    assert "**Targets:** 1 met, 1 missed." in text
    assert "**Environment:** ENV" in text
    assert "- plan at 1,000,000 events not run" in text
    assert "## Profiles" not in text  # no profile callable given: nothing to profile


def test_every_size_names_every_config_field_and_only_postgres_may_be_empty() -> None:
    fields = {
        "reps",
        "heavy_reps",
        "budget_s",
        "size_cap_s",
        "step_batch",
        "history_sizes",
        "plan_sizes",
        "recovery_runs",
        "recovery_events_per_run",
        "long_run_events",
        "resume_steps",
        "warm_steps",
    }
    assert {name: set(sizes) for name, sizes in SIZES.items()} == dict.fromkeys(SIZES, fields)
    assert SIZES["full"]["plan_sizes"] == (1_000, 10_000, 100_000, 1_000_000)
    assert SIZES["full"]["history_sizes"] == (100, 100_000)
    # issue 23, target 6: cold startup recovery of 1,000 runs / 100k events
    assert (SIZES["full"]["recovery_runs"], SIZES["full"]["long_run_events"]) == (1_000, 30_000)
    assert set(OPTIONAL) == {"postgres"}
    assert set(WORKLOADS) >= OPTIONAL


def test_the_harness_loads_without_the_peers() -> None:
    """``make check`` has no bench extra: only a workload that runs imports its peer."""
    code = (
        "import sys, bench.__main__, bench.report; "
        "assert not {'langgraph', 'dbos', 'pyinstrument'} & set(sys.modules), sys.modules"
    )
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
