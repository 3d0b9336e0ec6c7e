"""Every benchmark group that carries a target has an engineer-written "what would fix it"
note (bench/analysis.py), so a missed target is never reported with only generated text.

The workload modules are read as text, not imported: they import the peers (LangGraph, DBOS),
which are the ``bench`` extra that ``make test`` does not install."""

from __future__ import annotations

import re
from pathlib import Path

from bench.analysis import FIXES, fix_for

BENCH = Path(__file__).resolve().parents[3] / "bench"
GROUP = re.compile(r'^GROUP\w* = "([^"]+)"', re.M)


def _targeted_groups() -> set[str]:
    """The groups of every workload module that states a target."""
    groups: set[str] = set()
    for module in sorted(BENCH.glob("w_*.py")):
        text = module.read_text()
        if "Target(" in text:
            groups.update(GROUP.findall(text))
    return groups


def test_every_targeted_group_has_a_note() -> None:
    groups = _targeted_groups()
    assert len(groups) >= 7, groups  # tool step x2, PostgreSQL, restart, plan x2, recovery, ...
    assert groups <= set(FIXES), groups - set(FIXES)
    assert all(fix_for(group) == FIXES[group] for group in groups)


def test_a_group_without_a_note_says_so() -> None:
    assert fix_for("no such group") == "No analysis was written for this target yet."
