"""`make bench` asks for the issue's sizes (ADR 0027): plan scaling at 1k to 1M events,
recovery at 1,000 runs / 100k events with 1% interrupted plus one long run (issue 23,
target 6); a size is cut only
when one pass is projected over the size cap, and the cut is named. No timing is asserted.

bench.w_plan is imported: it needs maka_es only, never the peers (LangGraph, DBOS)."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest

from bench import __main__ as harness
from bench.__main__ import SIZES, config
from bench.core import Config, Figure, Stats
from bench.recovery_store import Shape
from bench.w_plan import CHILD_FROM, child_sizes, projected_pass


def test_the_full_config_asks_for_the_issues_sizes() -> None:
    full = SIZES["full"]
    assert full["plan_sizes"] == (1_000, 10_000, 100_000, 1_000_000)
    shape = Shape(full["recovery_runs"], full["recovery_events_per_run"])
    assert (shape.runs, shape.runs * shape.events_per_run) == (1_000, 100_000)
    assert shape.interrupted_count() == shape.runs // 100
    assert full["long_run_events"] == 30_000
    assert full["history_sizes"] == (100, 100_000)
    assert full["size_cap_s"] == 600.0  # one pass may take up to 10 minutes
    assert CHILD_FROM == 1_000_000  # the 1M pass runs in a child process


def test_quick_stays_small() -> None:
    quick = SIZES["quick"]
    assert max(quick["plan_sizes"]) < CHILD_FROM
    assert quick["recovery_runs"] * quick["recovery_events_per_run"] <= 10_000


def test_the_projection_is_linear_unless_growth_was_seen() -> None:
    linear = {10_000: [1.0], 100_000: [10.0]}
    assert projected_pass(1_000_000, linear) == 100.0
    faster_than_linear = {10_000: [2.0], 100_000: [10.0]}
    assert projected_pass(1_000_000, faster_than_linear) == 100.0  # never below linear
    superlinear = {10_000: [1.0], 100_000: [20.0]}
    assert round(projected_pass(1_000_000, superlinear)) == 400  # 20 s x 10 x 2


def test_a_size_projected_over_the_cap_is_named_not_run(tmp_path: Path) -> None:
    cfg = config("full", tmp_path)
    if cfg.tmpfs is not None:
        shutil.rmtree(cfg.tmpfs)
    plan: dict[int, list[float]] = {100_000: [40.0]}
    both: dict[int, list[float]] = {100_000: [100.0]}  # projected 1000 s at 1M
    assert child_sizes(cfg, plan, both) == {}
    assert set(plan) == {100_000}
    assert len(cfg.notes) == 1
    assert "1,000,000 events not measured" in cfg.notes[0]
    assert "1000 s" in cfg.notes[0]


def test_the_page_and_the_output_carry_the_total_wall_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(cfg: Config) -> list[Figure]:
        return [Figure("g", "one row", Stats.of([1.0]), "s", "b")]

    fake = types.ModuleType("bench_fake_workload")
    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench_fake_workload", fake)
    monkeypatch.setitem(harness.WORKLOADS, "fake", "bench_fake_workload")
    out = tmp_path / "page.md"
    assert harness.main(["--tiny", "--only", "fake", "--out", str(out)]) == 0
    environment = next(line for line in out.read_text().splitlines() if "**Environment:**" in line)
    assert "; total wall time of this run " in environment
    assert "total wall time: " in capsys.readouterr().out
