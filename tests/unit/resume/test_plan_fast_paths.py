"""The plan's fast paths against the reference (issue 23 target 5, ADR 0037 amendment 2026-12-02).

Why: ``build_resume_plan`` builds its ``ResumePlan`` without validating it again and pauses
the cyclic collector for the build. The plan must be exactly what validation builds (same
fields, order, hash, JSON), whatever the ledger, and the collector must come back as it was,
also when the build raises or builds nest.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maka_es.resume import plan as plan_module
from maka_es.resume.models import ResumePlan
from maka_es.resume.plan import build_resume_plan, cyclic_gc_paused
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.events import RuntimeEvent
from tests.unit.resume.test_growing_replay import SPINE, ledgers


def _assert_what_validation_builds(plan: ResumePlan) -> None:
    checked = ResumePlan.model_validate(dict(plan.__dict__))
    assert list(plan.__dict__) == list(checked.__dict__)
    assert plan.__getstate__() == checked.__getstate__()
    assert plan == checked
    assert plan.model_dump_json(by_alias=True) == checked.model_dump_json(by_alias=True)
    assert repr(plan) == repr(checked)
    for name in ("runtime_events", "replay_runtime_events", "operations", "diagnostics"):
        assert type(getattr(plan, name)) is tuple
    with pytest.raises(ValueError, match="frozen"):
        plan.disposition = "resumable"  # type: ignore[misc,assignment]  # still frozen


@given(ledgers(), st.one_of(st.none(), st.integers(0, 20)))
@settings(max_examples=150)
def test_the_trusted_plan_is_what_validation_builds(
    events: list[RuntimeEvent], expected_high_water: int | None
) -> None:
    _assert_what_validation_builds(build_resume_plan(events, expected_high_water))


@given(st.lists(runtime_event_dicts(SPINE), max_size=12))
@settings(max_examples=150)
def test_the_trusted_plan_over_any_wire_shape(events: list[dict[str, Any]]) -> None:
    _assert_what_validation_builds(build_resume_plan(events))


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_paused_during_the_build_and_restored(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = resolve_tool_operations

    def spy(events: Any) -> Any:
        seen.append(gc.isenabled())
        return real(events)

    monkeypatch.setattr(plan_module, "resolve_tool_operations", spy)
    build_resume_plan([])
    assert seen == [False]
    assert gc.isenabled()


def test_the_collector_is_restored_when_the_build_raises(collector_on: None) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011  # any refusal of a malformed event
        build_resume_plan([{"not": "an event"}])
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(collector_on: None) -> None:
    gc.disable()
    build_resume_plan([])
    assert not gc.isenabled()


def test_nested_pauses_restore_once_the_outer_ends(collector_on: None) -> None:
    with cyclic_gc_paused():
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
