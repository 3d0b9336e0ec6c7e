"""``status_of_run`` reads the resume verdict from the resolution the Run already tracks.

Why pinned: the read model used to rebuild a whole Phase 0 plan per row (a second resolution
of the ledger, plus copies of every event). It now calls ``resume_verdict`` with
``Run.resolution()``; the row must be exactly what the plan gives, on every ledger, including
corrupt ones (duplicate ids, orphan responses, hidden calls, recovery facts out of order).
Runs are folded from ``RuntimeEventRecorded`` facts directly, as a store reload does, so
ledgers no command would accept are covered too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from maka_es.ledger.model.facts import RunHeaderUpdated, RuntimeEventRecorded
from maka_es.ledger.model.run import Run, project_run
from maka_es.recovery.status import status_of_run
from maka_es.resume.plan import build_resume_plan, resume_verdict, tracked_resume_verdict
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

SPINE = Spine()
CALLS = ("c1", "c2")

#: One step of a generated ledger: what a builder appends for one call id.
_STEPS: dict[str, Callable[[LedgerBuilder, str], Any]] = {
    "user": lambda b, c: b.user(),
    "text": lambda b, c: b.text(),
    "call": lambda b, c: b.call(c),
    "hidden_call": lambda b, c: b.call(c, hidden=True),
    "t1_call": lambda b, c: b.t1_call(c),
    "dispatch": lambda b, c: b.dispatch(c),
    "response": lambda b, c: b.response(c),
    "error_response": lambda b, c: b.response(c, is_error=True),
    "bound_response": lambda b, c: b.bound_response(c),
    "other_tool_response": lambda b, c: b.response(c, name="Read"),
    "reconcile": lambda b, c: b.reconcile(c),
    "completed_decision": lambda b, c: b.completed_decision(c),
    "parked_decision": lambda b, c: b.parked_decision(c),
    "terminal": lambda b, c: b.terminal("completed"),
}


@st.composite
def ledgers(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Tool lifecycles over two call ids in any order (settled, pending, corrupt), sometimes
    declaring the T1 protocol, sometimes with arbitrary extra events mixed in."""
    builder = LedgerBuilder(SPINE, prefix="e")
    if draw(st.booleans()):
        builder.user(marker=True)
    steps = draw(
        st.lists(st.tuples(st.sampled_from(sorted(_STEPS)), st.sampled_from(CALLS)), max_size=12)
    )
    for name, call_id in steps:
        _STEPS[name](builder, call_id)
    extra = draw(st.lists(runtime_event_dicts(SPINE), max_size=3))
    events = list(builder.events)
    for event in extra:
        events.insert(draw(st.integers(0, len(events))), event)
    return events


def fold(events: list[dict[str, Any]], patch: dict[str, Any] | None = None) -> Run:
    """The Run a store reload builds from these committed events (and a header patch)."""
    created = Run.create(RunHeader.model_validate(run_header(SPINE)), 1000)
    run = project_run(None, [created])
    assert run is not None
    for seq, wire in enumerate(events, start=1):
        event = RuntimeEvent.model_validate(wire)
        run.apply(
            RuntimeEventRecorded(
                originator_id=run.id,
                originator_version=run.version + 1,
                event_seq=seq,
                event_id=event.id,
                payload=canonical_json(event),
                committed_at=2000,
            )
        )
    if patch is not None:
        run.apply(
            RunHeaderUpdated(
                originator_id=run.id,
                originator_version=run.version + 1,
                patch=patch,
                updated_at=3000,
            )
        )
    return run


def status_from_plan(run: Run, claim_id: str | None) -> Any:
    """The row as the read model computed it before: from a freshly built Phase 0 plan."""
    plan = build_resume_plan(run.events)
    row = status_of_run(run, claim_id)
    return dataclasses.replace(
        row, resume_disposition=plan.disposition, resume_reasons=tuple(plan.rejection_reasons)
    )


@settings(max_examples=150, deadline=None)
@given(
    events=ledgers(),
    patch=st.sampled_from(
        [None, {"status": "completed"}, {"status": "failed", "failureClass": "provider_error"}]
    ),
    claim_id=st.sampled_from([None, "claim-1"]),
)
def test_status_of_run_equals_the_row_a_fresh_plan_gives(
    events: list[dict[str, Any]], patch: dict[str, Any] | None, claim_id: str | None
) -> None:
    run = fold(events, patch)
    assert status_of_run(run, claim_id) == status_from_plan(run, claim_id)


@settings(max_examples=150, deadline=None)
@given(events=ledgers())
def test_resume_verdict_equals_the_plan(events: list[dict[str, Any]]) -> None:
    decoded = [RuntimeEvent.model_validate(event) for event in events]
    plan = build_resume_plan(decoded)
    verdict = resume_verdict(decoded, resolve_tool_operations(decoded))
    assert verdict == (plan.disposition, plan.rejection_reasons)


def test_status_of_run_reads_each_verdict() -> None:
    """The property above is not vacuous: a pending T1 call blocks, its T2 settles it, an
    orphan response blocks."""
    builder = LedgerBuilder(SPINE, prefix="e")
    builder.user(marker=True)
    builder.t1_call("c1")
    pending = fold(list(builder.events))
    builder.bound_response("c1")
    settled = fold(list(builder.events))
    orphan = LedgerBuilder(SPINE, prefix="o")
    orphan.response("c9")
    verdicts = [
        (row.resume_disposition, row.resume_reasons)
        for row in (status_of_run(run, None) for run in (pending, settled, fold(orphan.events)))
    ]
    assert verdicts == [
        ("blocked", ("dangling_tool_state",)),
        ("safe_replay", ()),
        ("blocked", ("dangling_tool_state",)),
    ]


def _verdict_and_reads(events: list[dict[str, Any]]) -> tuple[Any, int]:
    """``tracked_resume_verdict`` of these events, and how often it asked for them."""
    decoded = tuple(RuntimeEvent.model_validate(event) for event in events)
    reads: list[None] = []

    def read_events() -> tuple[RuntimeEvent, ...]:
        reads.append(None)
        return decoded

    return tracked_resume_verdict(resolve_tool_operations(decoded), read_events), len(reads)


@settings(max_examples=200, deadline=None)
@given(events=ledgers())
def test_the_tracked_verdict_equals_the_plan_and_reads_only_when_undecided(
    events: list[dict[str, Any]],
) -> None:
    """Every branch of the shortcut (ADR 0012) equals the plan; the events are read only when
    the resolution leaves the verdict open (no issue, no pending call, no call-less
    corruption, at least one decision)."""
    plan = build_resume_plan(events)
    (verdict, reads) = _verdict_and_reads(events)
    assert verdict == (plan.disposition, plan.rejection_reasons)
    resolution = resolve_tool_operations(plan.runtime_events)
    decided = (
        bool(resolution.issues)
        or not resolution.decisions
        or any(
            (d.status == "indeterminate" and d.call_runtime_event_id is not None)
            or (
                d.status == "corruption"
                and d.call_runtime_event_id is None
                and d.reason != "orphan_response"  # step 6 reports it: judged over the events
            )
            for d in resolution.decisions
        )
    )
    assert reads == (0 if decided else 1)


def test_each_shortcut_of_the_tracked_verdict_reads_nothing() -> None:
    """The property above is not vacuous: each branch, built on purpose."""
    chat = LedgerBuilder(SPINE, prefix="a")
    chat.user(marker=True)
    chat.text()
    pending = LedgerBuilder(SPINE, prefix="b")
    pending.user(marker=True)
    pending.t1_call("c1")
    hidden = LedgerBuilder(SPINE, prefix="c")
    hidden.call("c1", hidden=True)
    orphan_dispatch = LedgerBuilder(SPINE, prefix="d")
    orphan_dispatch.dispatch("c1")
    duplicate = LedgerBuilder(SPINE, prefix="e")
    duplicate.user(marker=True)
    duplicate.user(marker=True)  # a second marker: protocol_marker_invalid
    settled = LedgerBuilder(SPINE, prefix="f")
    settled.user(marker=True)
    settled.t1_call("c1")
    settled.bound_response("c1")
    results = [
        _verdict_and_reads(list(builder.events))
        for builder in (chat, pending, hidden, orphan_dispatch, duplicate, settled)
    ]
    dangling = (("blocked", ("dangling_tool_state",)), 0)
    assert results == [
        (("safe_replay", ()), 0),
        dangling,
        dangling,
        dangling,
        dangling,
        (("safe_replay", ()), 1),  # settled tools: judged over the events
    ]
