"""The incremental ResolverState: fold equivalence and pure prospective checks."""

from __future__ import annotations

import itertools

import pytest

from maka_es.errors import InvalidRuntimeEventError
from maka_es.tooljournal.resolver import (
    ResolverState,
    resolve_tool_operations,
    would_introduce_issue,
)
from maka_es.wire.events import RuntimeEvent
from tests.projections.builders import (
    T1,
    call,
    completed_decision,
    dispatch,
    event,
    reconcile,
    response,
    terminal,
    user,
)

ARGS = {"command": "do-it"}


def rich_ledger() -> list[RuntimeEvent]:
    return [
        user("u", marker=T1),
        call("c1", "call-1"),
        dispatch("d1", "op-1", "call-1"),
        response("r1", "call-1", operation_id="op-1"),
        call("c2", "call-2", "Bash", ARGS),
        dispatch("d2", "op-2", "call-2", "Bash", ARGS, recovery_mode="reconcile"),
        reconcile("rc2", "op-2", "call-2"),
        response("o2", "call-2", operation_id="op-2"),
        completed_decision("dc2", ["c2", "d2", "rc2", "o2"], "o2", "op-2", "call-2"),
        call("c3", "call-3"),
        call("c3", "call-3"),  # duplicate id
        response("r9", "call-9"),  # orphan
        event("late", actions={"runtimeProtocol": {"toolBoundary": T1}}),
        terminal(),
    ]


def test_fold_matches_batch_resolution_at_every_prefix() -> None:
    events = rich_ledger()
    state = ResolverState()
    assert state.resolution() == resolve_tool_operations([])
    for index, item in enumerate(events, start=1):
        state.feed(item)
        assert state.event_count == index
        assert state.resolution() == resolve_tool_operations(events[:index])
    final = state.resolution()
    assert [d.reason for d in final.decisions] == [
        "matching_response",
        "recovery_bundle_completed",
        "new_protocol_before_dispatch",
        "orphan_response",
    ]


def test_feed_returns_the_issues_it_introduced() -> None:
    state = ResolverState()
    assert state.feed(user("u")) == ()
    assert state.feed(call("c1")) == ()
    introduced = state.feed(call("c2"))
    assert [(i.code, i.event_id) for i in introduced] == [("duplicate_call", "c2")]
    assert state.issues == introduced
    assert state.has_issues


def test_feed_accepts_wire_mappings() -> None:
    state = ResolverState()
    state.feed_all([e.to_wire() for e in rich_ledger()])
    assert state.resolution() == resolve_tool_operations(rich_ledger())


def test_would_introduce_issue_is_pure() -> None:
    state = ResolverState()
    state.feed_all([user("u", marker=T1), call("c1"), dispatch("d1")])
    before = state.resolution()

    issue = would_introduce_issue(state, dispatch("d2"))
    assert issue is not None
    assert (issue.code, issue.event_id) == ("duplicate_dispatch", "d2")
    assert would_introduce_issue(state, response("r1", operation_id="operation-1")) is None
    marker = would_introduce_issue(
        state, event("m", actions={"runtimeProtocol": {"toolBoundary": T1}})
    )
    assert marker is not None
    assert marker.code == "protocol_marker_invalid"

    assert state.resolution() == before
    assert state.event_count == 3
    # the state still folds exactly as a fresh scan would
    state.feed(response("r1", operation_id="operation-1"))
    assert state.resolution() == resolve_tool_operations(
        [
            user("u", marker=T1),
            call("c1"),
            dispatch("d1"),
            response("r1", operation_id="operation-1"),
        ]
    )


def test_first_event_marker_is_judged_prospectively() -> None:
    state = ResolverState()
    assert would_introduce_issue(state, user("u", marker=T1)) is None
    bad = would_introduce_issue(state, user("u", marker="future"))
    assert bad is not None
    assert (bad.code, bad.event_id) == ("protocol_marker_invalid", "u")
    assert state.tool_boundary_protocol is None
    assert state.event_count == 0


def test_batch_prospective_check_sees_its_own_events() -> None:
    state = ResolverState()
    state.feed(user("u", marker=T1))
    # T1 = call + dispatch: the dispatch is judged against the call of the same batch
    assert state.issues_if_fed([call("c1"), dispatch("d1")]) == ()
    wrong = dispatch("d1", args_hash="sha256:" + "0" * 64)
    assert [i.code for i in state.issues_if_fed([call("c1"), wrong])] == [
        "canonical_args_hash_conflict"
    ]
    # a dispatch alone (its call not yet committed) is an order conflict
    assert [i.code for i in state.issues_if_fed([dispatch("d1")])] == ["event_order_conflict"]
    assert state.resolution() == resolve_tool_operations([user("u", marker=T1)])


def test_invalid_input_leaves_state_unchanged() -> None:
    state = ResolverState()
    state.feed(call("c1"))
    before = state.resolution()
    with pytest.raises(InvalidRuntimeEventError):
        state.issues_if_fed([call("c2"), {"id": "broken"}])
    assert state.resolution() == before
    assert state.feed(call("c3", "call-3")) == ()


def _bundle_events() -> list[RuntimeEvent]:
    return [
        call("c", "call-1", "Bash", ARGS),
        dispatch("d", "op-1", "call-1", "Bash", ARGS, recovery_mode="reconcile"),
        reconcile("rc", "op-1", "call-1"),
        response("o", "call-1", operation_id="op-1"),
        completed_decision("dc", ["c", "d", "rc", "o"], "o", "op-1", "call-1"),
    ]


@pytest.mark.parametrize(
    "order", list(itertools.permutations(range(5))), ids=lambda p: "".join(map(str, p))
)
def test_prospective_checks_predict_feeding_in_every_order(order: tuple[int, ...]) -> None:
    bundle = _bundle_events()
    events = [bundle[i] for i in order]
    state = ResolverState()
    for index, item in enumerate(events):
        before = state.resolution()
        predicted = state.issues_if_fed([item])
        pair = state.issues_if_fed(events[index : index + 2])
        assert state.resolution() == before
        assert state.event_count == index
        actual = state.feed(item)
        assert actual == predicted
        assert pair[: len(actual)] == actual
    assert state.resolution() == resolve_tool_operations(events)


def test_prospective_checks_do_not_nest() -> None:
    state = ResolverState()
    state._undo = []  # simulate being inside a check
    with pytest.raises(RuntimeError):
        state.issues_if_fed([call("c1")])
    with pytest.raises(RuntimeError):
        state.feed(call("c1"))
    state._undo = None
