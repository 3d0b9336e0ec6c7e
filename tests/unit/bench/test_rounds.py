"""The round method of issue 23 (bench/rounds.py): single-step percentiles, fsync-regime
labels, rounds that rotate their order and probe the disk around every batch, ratios taken
inside a round. No timing is asserted: the probes are real fsyncs, their values are not."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from bench.rounds import (
    FAST_BELOW,
    PROBES,
    Dist,
    Round,
    batch_regime,
    by_regime,
    cpu_within,
    fsync_seconds,
    percentile,
    regime_label,
    regime_of,
    run_rounds,
    within,
)


def test_percentile_is_nearest_rank_and_a_measured_value() -> None:
    values = [float(n) for n in range(1, 101)]  # 1 .. 100
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)
    with pytest.raises(ValueError, match="not in"):
        percentile([1.0], 0)


def test_a_stall_every_few_hundred_steps_shows_in_max_and_mean_not_in_p50() -> None:
    steps = [0.001] * 997 + [1.5] * 3  # three 1.5 s stalls in 1,000 steps
    d = Dist.of(steps)
    assert (d.p50, d.p99, d.max, d.n) == (0.001, 0.001, 1.5, 1000)
    assert d.mean == pytest.approx((997 * 0.001 + 4.5) / 1000)
    stalls = Dist.of([0.001] * 98 + [1.5] * 2)  # 2% stalls: p99 sees them
    assert stalls.p99 == 1.5


@pytest.mark.parametrize(
    ("fsyncs", "regime"),
    [
        ([0.0004, 0.0005, 0.0003], "fast"),
        ([0.004, 0.0041, 0.0039], "slow"),
        ([0.0004, 0.004], "mixed"),
        ([FAST_BELOW], "slow"),
        ([], "tmpfs"),
    ],
)
def test_a_batch_is_labelled_by_the_regime_all_its_probes_fall_in(
    fsyncs: list[float], regime: str
) -> None:
    assert regime_of(fsyncs) == regime
    assert Round(fsyncs=fsyncs).regime == regime


def test_a_batch_runs_in_the_regime_of_its_probes_median_and_a_round_in_its_batches() -> None:
    assert batch_regime([0.0004, 0.0004, 0.009, 0.0005]) == "fast"  # one slow fsync: still fast
    assert batch_regime([0.004, 0.0004, 0.005]) == "slow"
    assert Round(fsyncs=[0.0004, 0.009], batch_regimes=["fast", "fast"]).regime == "fast"
    assert Round(fsyncs=[0.0004, 0.004], batch_regimes=["fast", "slow"]).regime == "mixed"
    assert Round(fsyncs=[0.004], batch_regimes=["slow"]).regime == "slow"


def test_the_label_names_the_regime_and_its_median_fsync() -> None:
    assert regime_label([0.0004, 0.0004, 0.0005]) == "fast fsync ~0.4 ms"
    assert regime_label([0.004, 0.0042, 0.0038]) == "slow fsync ~4 ms"
    assert regime_label([0.0004, 0.004, 0.004]).startswith("mixed fsync ~")
    assert regime_label([]).startswith("tmpfs")
    # a group's own regime (the batches' medians) names it, whatever one probe said
    assert regime_label([0.0004, 0.0004, 0.009], "fast") == "fast fsync ~0.4 ms"


def test_rounds_rotate_the_order_and_probe_the_disk_around_every_batch(tmp_path: Path) -> None:
    order: list[str] = []

    def batch(name: str) -> list[float]:
        order.append(name)
        return [1.0, 3.0]

    rounds = run_rounds({n: lambda n=n: batch(n) for n in "ABC"}, 3, probe=tmp_path)  # type: ignore[misc]
    assert order == list("ABCBCACAB")
    assert len(rounds) == 3
    assert all(len(r.fsyncs) == 3 * 2 * PROBES for r in rounds)  # before and after each batch
    assert all(len(r.batch_regimes) == 3 for r in rounds)
    assert all(s > 0 for r in rounds for s in r.fsyncs)
    assert rounds[0].cost("A") == 2.0  # the batch's mean per unit
    assert run_rounds({"A": lambda: [1.0]}, 2)[0].fsyncs == []  # tmpfs: no probe


def test_the_budget_stops_new_rounds_but_keeps_one() -> None:
    calls = itertools.count()
    rounds = run_rounds({"A": lambda: [float(next(calls))]}, 10, budget_s=0.0)
    assert [r.samples for r in rounds] == [{"A": [0.0]}]


def test_ratios_are_taken_inside_each_round_and_rounds_are_grouped_by_regime() -> None:
    fast = Round({"maka_es": [2.0], "floor": [1.0]}, [0.0004])
    slow = Round({"maka_es": [8.0], "floor": [2.0]}, [0.004])
    mixed = Round({"maka_es": [3.0], "floor": [1.0]}, [0.0004, 0.004])
    groups = by_regime([mixed, slow, fast])
    assert list(groups) == ["fast", "slow", "mixed"]
    assert within(groups["fast"], "maka_es", "floor") == [2.0]
    assert within([fast, slow], "maka_es", "floor") == [2.0, 4.0]


def test_a_raw_fsync_probe_times_real_fsyncs(tmp_path: Path) -> None:
    seconds = fsync_seconds(tmp_path, 2)
    assert len(seconds) == 2
    assert all(s > 0 for s in seconds)
    assert (tmp_path / ".fsync-probe").stat().st_size == 4096


def test_rounds_record_each_contenders_cpu_time_and_cpu_ratios_stay_in_the_round() -> None:
    cpu = {"A": iter([2.0, 4.0]), "B": iter([1.0, 1.0])}
    rounds = run_rounds(
        {"A": lambda: [1.0], "B": lambda: [1.0]},
        2,
        cpu={n: lambda n=n: next(cpu[n]) for n in "AB"},  # type: ignore[misc]
        cpu_steps={"A": lambda: [0.5, 0.5]},
    )
    assert [r.cpu for r in rounds] == [{"A": 2.0, "B": 1.0}, {"B": 1.0, "A": 4.0}]
    assert cpu_within(rounds, "A", "B") == [2.0, 4.0]
    assert all(r.cpu_steps == {"A": [0.5, 0.5]} for r in rounds)
