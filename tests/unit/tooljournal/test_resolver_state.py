"""The incremental ResolverState: fold equivalence and pure prospective checks."""

from __future__ import annotations

import itertools

import pytest

from maka_es.errors import InvalidRuntimeEventError
from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model.resolver import (
    ResolverState,
    resolve_tool_operations,
    would_introduce_issue,
)
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1
from maka_es.wire.events import RuntimeEvent
from tests.support.tool_ledgers import ARGS, settled_and_bundled

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)


def rich_ledger() -> list[RuntimeEvent]:
    return [
        *settled_and_bundled(EV),
        EV.call("call-3", event_id="c3", with_refs=True),
        EV.call("call-3", event_id="c3", with_refs=True),  # duplicate id
        EV.response("call-9", "Bash", "ok", event_id="r9", with_refs=True),  # orphan
        EV.event(event_id="late", actions={"runtimeProtocol": {"toolBoundary": T1}}),
        EV.terminal(status="failed", error_code=None),
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
    assert state.feed(EV.user("run it", event_id="u")) == ()
    assert state.feed(EV.call("call-1", event_id="c1", with_refs=True)) == ()
    introduced = state.feed(EV.call("call-1", event_id="c2", with_refs=True))
    assert [(i.code, i.event_id) for i in introduced] == [("duplicate_call", "c2")]
    assert state.issues == introduced
    assert state.has_issues


def test_feed_accepts_wire_mappings() -> None:
    state = ResolverState()
    state.feed_all([e.to_wire() for e in rich_ledger()])
    assert state.resolution() == resolve_tool_operations(rich_ledger())


def test_would_introduce_issue_is_pure() -> None:
    state = ResolverState()
    state.feed_all(
        [
            EV.user("run it", event_id="u", marker=T1),
            EV.call("call-1", event_id="c1", with_refs=True),
            EV.dispatch("call-1", event_id="d1", operation_id="operation-1"),
        ]
    )
    before = state.resolution()

    issue = would_introduce_issue(
        state, EV.dispatch("call-1", event_id="d2", operation_id="operation-1")
    )
    assert issue is not None
    assert (issue.code, issue.event_id) == ("duplicate_dispatch", "d2")
    assert (
        would_introduce_issue(
            state, EV.response("call-1", "Bash", "ok", event_id="r1", operation_id="operation-1")
        )
        is None
    )
    marker = would_introduce_issue(
        state, EV.event(event_id="m", actions={"runtimeProtocol": {"toolBoundary": T1}})
    )
    assert marker is not None
    assert marker.code == "protocol_marker_invalid"

    assert state.resolution() == before
    assert state.event_count == 3
    # the state still folds exactly as a fresh scan would
    state.feed(EV.response("call-1", "Bash", "ok", event_id="r1", operation_id="operation-1"))
    assert state.resolution() == resolve_tool_operations(
        [
            EV.user("run it", event_id="u", marker=T1),
            EV.call("call-1", event_id="c1", with_refs=True),
            EV.dispatch("call-1", event_id="d1", operation_id="operation-1"),
            EV.response("call-1", "Bash", "ok", event_id="r1", operation_id="operation-1"),
        ]
    )


def test_first_event_marker_is_judged_prospectively() -> None:
    state = ResolverState()
    assert would_introduce_issue(state, EV.user("run it", event_id="u", marker=T1)) is None
    bad = would_introduce_issue(state, EV.user("run it", event_id="u", marker="future"))
    assert bad is not None
    assert (bad.code, bad.event_id) == ("protocol_marker_invalid", "u")
    assert state.tool_boundary_protocol is None
    assert state.event_count == 0


def test_batch_prospective_check_sees_its_own_events() -> None:
    state = ResolverState()
    state.feed(EV.user("run it", event_id="u", marker=T1))
    # T1 = call + dispatch: the dispatch is judged against the call of the same batch
    assert (
        state.issues_if_fed(
            [
                EV.call("call-1", event_id="c1", with_refs=True),
                EV.dispatch("call-1", event_id="d1", operation_id="operation-1"),
            ]
        )
        == ()
    )
    wrong = EV.dispatch(
        "call-1", event_id="d1", operation_id="operation-1", args_hash="sha256:" + "0" * 64
    )
    assert [
        i.code
        for i in state.issues_if_fed([EV.call("call-1", event_id="c1", with_refs=True), wrong])
    ] == ["canonical_args_hash_conflict"]
    # a dispatch alone (its call not yet committed) is an order conflict
    assert [
        i.code
        for i in state.issues_if_fed(
            [EV.dispatch("call-1", event_id="d1", operation_id="operation-1")]
        )
    ] == ["event_order_conflict"]
    assert state.resolution() == resolve_tool_operations(
        [EV.user("run it", event_id="u", marker=T1)]
    )


def test_invalid_input_leaves_state_unchanged() -> None:
    state = ResolverState()
    state.feed(EV.call("call-1", event_id="c1", with_refs=True))
    before = state.resolution()
    with pytest.raises(InvalidRuntimeEventError):
        state.issues_if_fed([EV.call("call-1", event_id="c2", with_refs=True), {"id": "broken"}])
    assert state.resolution() == before
    assert state.feed(EV.call("call-3", event_id="c3", with_refs=True)) == ()


def _bundle_events() -> list[RuntimeEvent]:
    return [
        EV.call("call-1", "Bash", ARGS, event_id="c", with_refs=True),
        EV.dispatch(
            "call-1", "Bash", ARGS, event_id="d", operation_id="op-1", recovery_mode="reconcile"
        ),
        EV.reconcile("call-1", event_id="rc", operation_id="op-1"),
        EV.response("call-1", "Bash", "ok", event_id="o", operation_id="op-1"),
        EV.completed_decision(
            "call-1",
            evidence=["c", "d", "rc", "o"],
            outcome_event_id="o",
            event_id="dc",
            operation_id="op-1",
        ),
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
        state.issues_if_fed([EV.call("call-1", event_id="c1", with_refs=True)])
    with pytest.raises(RuntimeError):
        state.feed(EV.call("call-1", event_id="c1", with_refs=True))
    state._undo = None
