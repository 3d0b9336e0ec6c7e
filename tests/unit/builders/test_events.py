"""Every public builder writes a valid RuntimeEvent in the lane its name promises.

A builder that wrote an event in another lane (a response with a status, a dispatch with extra
refs) would make every test built on it test something else; these tests pin each builder to
its lane (docs/reference/wire.md#lanes) in both flavours, wire dicts and decoded models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from maka_es.testing.builders import SAMPLE_DIGEST, Events, FactBuilder, LedgerBuilder, Spine
from maka_es.wire.events import RuntimeEvent, classify_lane

Build = Callable[[Events[Any]], Any]

SOURCE = Spine("s0", "i0", "r0", "t0")

#: (name, build, expected lane): one row per builder method, with and without its options.
CASES: list[tuple[str, Build, str]] = [
    ("event", lambda k: k.event(event_id="e1"), "ordinary"),
    ("user", lambda k: k.user(), "ordinary"),
    ("user with T1 marker", lambda k: k.user(marker=True), "ordinary"),
    ("model text", lambda k: k.text(event_id="e1"), "ordinary"),
    ("user text", lambda k: k.text("hi", event_id="e1", role="user"), "ordinary"),
    ("system note", lambda k: k.text("note", event_id="e1", role="system"), "ordinary"),
    ("thinking", lambda k: k.thinking(event_id="e1", signature="sig"), "ordinary"),
    ("permission request", lambda k: k.permission_request(event_id="p1"), "ordinary"),
    (
        "permission decision",
        lambda k: k.permission_decision("p1", "deny", event_id="e2"),
        "ordinary",
    ),
    ("completed terminal", lambda k: k.terminal(), "ordinary"),
    ("failed terminal", lambda k: k.terminal(status="failed", failure_class="x"), "ordinary"),
    ("continuation start", lambda k: k.continuation_start(SOURCE, 3), "ordinary"),
    (
        "claim-repair start",
        lambda k: k.continuation_start(SOURCE, 3, provenance="claim_repair"),
        "ordinary",
    ),
    (
        "stateDelta start",
        lambda k: k.state_delta_continuation_start(source=SOURCE, high_water=2),
        "ordinary",
    ),
    ("pre-T1 call", lambda k: k.call(), "function_call"),
    ("T1 call", lambda k: k.call("c1", "Write", {"path": "a"}, t1=True), "function_call"),
    ("hidden nested call", lambda k: k.call(parent=("op-0", "c0"), hidden=True), "function_call"),
    ("dispatch", lambda k: k.dispatch("c1", recovery_mode="reconcile"), "tool_dispatch"),
    ("nested dispatch", lambda k: k.dispatch(parent=("op-0", "c0")), "tool_dispatch"),
    ("unbound response", lambda k: k.response(), "function_response"),
    ("bound response", lambda k: k.bound_response("c1", is_error=True), "function_response"),
    ("refusal", lambda k: k.refusal("c1"), "function_response"),
    ("reconcile", lambda k: k.reconcile("c1", "diverged"), "reconcile_result"),
    (
        "completed decision",
        lambda k: k.completed_decision("c1", evidence=["a", "b", "c", "d"], outcome_event_id="d"),
        "recovery_decision",
    ),
    (
        "parked decision",
        lambda k: k.parked_decision("c1", evidence=["a", "b", "c"]),
        "recovery_decision",
    ),
]


def _ids(cases: list[tuple[str, Build, str]]) -> list[str]:
    return [name for name, _, _ in cases]


@pytest.mark.parametrize(("name", "build", "lane"), CASES, ids=_ids(CASES))
def test_wire_builders_validate_and_classify_to_their_lane(
    name: str, build: Build, lane: str
) -> None:
    wire = build(Events.wire())
    assert isinstance(wire, dict)
    event = RuntimeEvent.model_validate(wire)
    assert event.to_wire() == wire  # nothing the decoder would drop or reshape
    classification = classify_lane(event)
    assert (classification.lane, classification.conflict) == (lane, None), name


@pytest.mark.parametrize(("name", "build", "lane"), CASES, ids=_ids(CASES))
def test_decoded_builders_give_the_same_event_as_a_model(
    name: str, build: Build, lane: str
) -> None:
    spine = Spine("session-1", "invocation-1", "run-1", "turn-1")
    decoded = build(Events.decoded(spine, ts=7))
    assert isinstance(decoded, RuntimeEvent)
    assert decoded.to_wire() == build(Events.wire(spine, ts=7))
    assert (decoded.session_id, decoded.run_id, decoded.ts) == ("session-1", "run-1", 7)
    assert classify_lane(decoded).lane == lane, name


def test_bundles_are_valid_facts_in_their_lanes() -> None:
    kit = Events.wire()
    completed = kit.completed_bundle("c1", "Write")
    parked = kit.parked_bundle("c1", "matches_prior_state")
    lanes = {
        key: classify_lane(RuntimeEvent.model_validate(event)).lane
        for key, event in completed.items()
    }
    assert lanes == {
        "reconcile": "reconcile_result",
        "outcome": "function_response",
        "decision": "recovery_decision",
    }
    assert list(parked) == ["reconcile", "decision"]
    payload = parked["decision"]["actions"]["toolRecovery"]["payload"]
    assert payload["reasonCode"] == "reconcile_matches_prior_state"
    for event in parked.values():
        assert not classify_lane(RuntimeEvent.model_validate(event)).is_conflict


#: Every builder method; declared once on ``FactBuilder``, never again on a face.
BUILDERS = [
    "event", "user", "text", "thinking", "permission_request", "permission_decision",
    "terminal", "continuation_start", "state_delta_continuation_start", "call", "dispatch",
    "response", "bound_response", "refusal", "reconcile", "completed_decision",
    "parked_decision", "evidence", "completed_bundle", "parked_bundle",
]  # fmt: skip


@pytest.mark.parametrize("name", BUILDERS)
def test_one_api_each_builder_is_declared_once(name: str) -> None:
    """``Events`` and ``LedgerBuilder`` are faces of one API: neither re-declares a builder,
    so their signatures cannot drift apart (issue 22, part 3)."""
    assert name in vars(FactBuilder)
    assert name not in vars(Events)
    assert name not in vars(LedgerBuilder)


def test_a_ledger_builds_what_the_kit_builds_at_its_id_and_ts() -> None:
    ledger = LedgerBuilder(base_ts=1000)
    kit = Events.wire(Spine("s1", "i1", "r1", "t1"), ts=1001)
    assert ledger.user(marker=True) == kit.user(event_id="e1", marker=True)
    assert ledger.call("c1", t1=True) == kit.at(1002).call("c1", event_id="e2", t1=True)
    assert ledger.terminal("failed") == kit.at(1003).terminal("failed", event_id="e3")


def test_defaults_are_never_shared_between_events() -> None:
    """Mutating one event's args or result leaves the next event and the caller's value alone."""
    kit = Events.wire()
    first = kit.call()
    first["content"]["args"]["command"] = "changed"
    assert kit.call()["content"]["args"] == {"command": "do-it"}
    mine = {"path": "a.txt"}
    call = kit.call("c1", "Read", mine)
    call["content"]["args"]["path"] = "b.txt"
    assert mine == {"path": "a.txt"}
    response = kit.response()
    response["content"]["result"]["text"] = "changed"
    assert kit.response()["content"]["result"] == {"kind": "text", "text": "ok"}


def test_none_is_a_json_null_payload_not_the_default() -> None:
    kit = Events.wire()
    assert kit.response(result=None)["content"]["result"] is None
    assert kit.call(args=None)["content"]["args"] is None
    assert RuntimeEvent.model_validate(kit.response(result=None)).function_response is not None


def test_overrides_replace_top_level_keys() -> None:
    kit = Events.wire()
    partial = kit.text("stre", event_id="p1", partial=True, refs={"providerEventId": "step-1"})
    assert (partial["partial"], partial["refs"]) == (True, {"providerEventId": "step-1"})
    assert kit.user(ts=5)["ts"] == 5
    assert kit.at(9).user()["ts"] == 9


def test_placeholder_digest_has_the_wire_shape() -> None:
    start = Events.decoded().continuation_start(SOURCE, 1)
    assert start.actions is not None
    assert start.actions.continuation_start is not None
    assert start.actions.continuation_start.boundary_digest == SAMPLE_DIGEST
