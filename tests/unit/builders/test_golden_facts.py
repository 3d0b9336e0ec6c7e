"""Golden facts: the test builders build, byte for byte, what they built before they moved.

Why: the builders moved from ``maka_es.testing.builders`` into the test kit and onto
``maka_es.wire.facts`` (issue 22, part 3). A test's facts must not change with the move, so a
representative set of them (every builder, wire and decoded, a numbered ledger with a T1 call
and both bundles, a run header) is compared with the JSON they produced before it
(``golden_facts.json``). Regenerate it only for a deliberate change of a fact's shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header

GOLDEN = Path(__file__).with_name("golden_facts.json")


def _wire_kit() -> dict[str, Any]:
    kit = Events.wire(Spine("s9", "i9", "r9", "t9"), ts=1234.5)
    source = Spine(run_id="r0", turn_id="t0")
    return {
        "event": kit.event(event_id="ev-1", role="model", author="agent", partial=True),
        "user": kit.user(),
        "user_marker": kit.user("hello", event_id="u2", marker=True),
        "user_odd_marker": kit.user(event_id="u3", marker="tool_boundary_v9"),
        "text": kit.text(event_id="x1", role="tool"),
        "thinking": kit.thinking(event_id="th1", signature="sig"),
        "permission_request": kit.permission_request(event_id="p1", reason="why"),
        "permission_decision": kit.permission_decision(
            "p1", "deny", event_id="p2", tool_name="Bash"
        ),
        "terminal": kit.terminal(),
        "terminal_failed": kit.terminal("failed", event_id="tf", failure_class="provider_error"),
        "terminal_failed_bare": kit.terminal("failed", event_id="tf2", error_code=None),
        "continuation_start": kit.continuation_start(source, 7),
        "continuation_repair": kit.continuation_start(source, 3, provenance="claim_repair"),
        "continuation_no_marker": kit.continuation_start(source, 3, marker=False),
        "legacy_start": kit.state_delta_continuation_start(
            source=source, high_water=4, marker=True
        ),
        "call": kit.call(),
        "call_t1_hidden": kit.call("c2", "Read", {"path": "a"}, t1=True, hidden=True),
        "call_parent": kit.call("c3", parent=("op-p", "c-p"), step_id="s-1"),
        "call_refs": kit.call("c4", with_refs=True),
        "dispatch": kit.dispatch(),
        "dispatch_parent": kit.dispatch("c3", parent=("op-p", "c-p"), hidden=True),
        "response": kit.response(),
        "response_error": kit.response("c2", is_error=True, with_refs=True),
        "bound_response": kit.bound_response("c2", result={"v": 1}, is_error=True),
        "refusal": kit.refusal("c5"),
        "reconcile": kit.reconcile("c2", "diverged", payload_operation_id="other"),
        "completed_decision": kit.completed_decision(
            "c2", evidence=["a", "b"], outcome_event_id="c"
        ),
        "parked_decision": kit.parked_decision("c2", evidence=["a", "b"]),
        "completed_bundle": kit.completed_bundle("c6", call_event_id="call-x"),
        "parked_bundle": kit.parked_bundle("c7", "unreadable"),
        "evidence": kit.evidence("c8"),
        "at": kit.at(5).user(),
    }


def _decoded_kit() -> dict[str, Any]:
    kit = Events.decoded()
    events = [
        kit.user(marker=True),
        kit.call("c1", t1=True),
        kit.dispatch("c1"),
        kit.bound_response("c1"),
        *kit.completed_bundle("c2").values(),
        kit.terminal("failed", event_id="done", failure_class="tool_error"),
    ]
    return {"decoded": [event.model_dump(mode="json", by_alias=True) for event in events]}


def _ledger() -> dict[str, Any]:
    ledger = LedgerBuilder(Spine(run_id="r5"), prefix="n", base_ts=2000)
    ledger.user(marker=True)
    ledger.text()
    ledger.thinking(signature="s")
    ledger.event(content={"kind": "text", "text": "note"})
    ledger.t1_call("c1", recovery_mode="idempotent")
    ledger.bound_response("c1")
    ledger.t1_call("c2")
    ledger.reconcile("c2")
    ledger.bound_response("c2")
    ledger.completed_decision("c2")
    ledger.t1_call("c3")
    ledger.reconcile("c3", "diverged")
    ledger.parked_decision("c3")
    ledger.call("c4")
    ledger.refusal("c4")
    ledger.call("c5", event_id="own")
    ledger.response("c5", is_error=True)
    ledger.dispatch("c6", hidden=True)
    ledger.permission_request()
    ledger.permission_decision("n19", "deny")
    ledger.continuation_start(Spine(run_id="r4"), 9)
    ledger.state_delta_continuation_start()
    ledger.terminal("failed", failure_class="provider_error")
    return {
        "ledger": ledger.events,
        "evidence": ledger.evidence("c3"),
        "decoded": [e.model_dump(mode="json", by_alias=True) for e in ledger.decoded()],
    }


def build_all() -> dict[str, Any]:
    """Every golden fact, keyed by what built it."""
    return {
        "wire": _wire_kit(),
        **_decoded_kit(),
        "ledger": _ledger(),
        "run_header": run_header(Spine(run_id="r2"), status="failed", failureClass="x"),
        "run_header_default": run_header(),
    }


def test_builders_build_the_golden_facts_byte_for_byte() -> None:
    expected = GOLDEN.read_text(encoding="utf-8")
    built = json.dumps(build_all(), indent=1, sort_keys=False) + "\n"
    assert built == expected


if __name__ == "__main__":  # regenerate: python tests/unit/builders/test_golden_facts.py
    GOLDEN.write_text(json.dumps(build_all(), indent=1, sort_keys=False) + "\n", "utf-8")
