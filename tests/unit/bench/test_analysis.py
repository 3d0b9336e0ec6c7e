"""Every benchmark group that carries a target has an engineer-written "what would fix it"
note (bench/analysis.py), so a missed target is never reported with only generated text."""

from __future__ import annotations

import importlib

from bench.analysis import FIXES, fix_for

TARGETED_GROUPS = {
    "bench.w_tool_step": ("GROUP_DISK", "GROUP_CPU"),
    "bench.w_postgres": ("GROUP",),
    "bench.w_history": ("GROUP_RESTART", "GROUP_PLAN"),
    "bench.w_plan": ("GROUP",),
    "bench.w_recovery": ("GROUP",),
}


def test_every_targeted_group_has_a_note() -> None:
    groups = {
        getattr(importlib.import_module(module), name)
        for module, names in TARGETED_GROUPS.items()
        for name in names
    }
    assert groups <= set(FIXES), groups - set(FIXES)
    assert all(fix_for(group) == FIXES[group] for group in groups)


def test_a_group_without_a_note_says_so() -> None:
    assert fix_for("no such group") == "No analysis was written for this target yet."
