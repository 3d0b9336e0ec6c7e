"""The two fact shapes ``maka_es.wire.facts`` gained when the last hand-spelled facts moved into
it: the unbound response of a run without the tool-boundary marker (the crash harness's
ledger), and the runtime-admission start without its marker that a claim's classification
accepts (docs/reference/tool-journal.md#decisions, docs/reference/continuation.md#start-fact).
"""

from __future__ import annotations

import pytest

from maka_es.continuation.claims import ContinuationTarget, SourceBoundary, continuation_start_event
from maka_es.resume.failpoint_catalog import FAILPOINT_PREFIXES, harness_ledger
from maka_es.testing.builders import LedgerBuilder
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.events import RuntimeEvent, classify_lane
from maka_es.wire.facts import (
    StartProvenance,
    continuation_start_fact,
    terminal_fact,
    unbound_response,
)

DIGEST = "sha256:" + "cd" * 32
SPINE = {"sessionId": "s1", "invocationId": "i2", "runId": "r2", "turnId": "t2"}
SOURCE = {"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"}


def _legacy_call() -> tuple[list[RuntimeEvent], RuntimeEvent]:
    builder = LedgerBuilder()
    builder.user()  # no protocol marker: a legacy run
    builder.call("call-1", "Bash", {"command": "ls"})
    events = builder.decoded()
    return events, events[-1]


@pytest.mark.parametrize("is_error", [False, True])
def test_unbound_response_is_the_legacy_completion_of_its_call(is_error: bool) -> None:
    events, call = _legacy_call()
    response = unbound_response(call, event_id="resp-1", ts=2000, result="out", is_error=is_error)
    wire = response.to_wire()
    assert wire == {
        "id": "resp-1",
        **call.spine,
        "ts": 2000,
        "partial": False,
        "role": "tool",
        "author": "tool",
        "content": {
            "kind": "function_response",
            "id": "call-1",
            "name": "Bash",
            "result": "out",
            **({"isError": True} if is_error else {}),
        },
    }
    assert classify_lane(response).lane == "function_response"
    resolution = resolve_tool_operations([*events, response])
    assert resolution.issues == ()
    assert [(d.status, d.reason, d.response_is_error) for d in resolution.decisions] == [
        ("completed", "matching_response", is_error)
    ]


@pytest.mark.parametrize("prefix", FAILPOINT_PREFIXES)
@pytest.mark.parametrize("response_is_error", [False, True])
def test_the_harness_ledger_holds_the_runtimes_own_response_and_terminal(
    prefix: str, response_is_error: bool
) -> None:
    full = harness_ledger("after_terminal_event", response_is_error=response_is_error)
    user, call, response, terminal = full
    assert response == unbound_response(
        call,
        event_id="response",
        ts=3,
        result={"exitCode": 1 if response_is_error else 0},
        is_error=response_is_error,
    )
    assert terminal == terminal_fact(call.spine, event_id="terminal", ts=4, status="failed")
    assert (user.id, call.id) == ("user", "call")
    prefix_events = harness_ledger(prefix, response_is_error=response_is_error)
    assert prefix_events == full[: len(prefix_events)]


def _start(provenance: StartProvenance, *, marker: bool) -> RuntimeEvent:
    return continuation_start_fact(
        SPINE,
        event_id="r2-start",
        ts=6000,
        provenance=provenance,
        claim_id="claim-1",
        boundary_digest=DIGEST,
        source_spine=SOURCE,
        source_high_water=3,
        source_prefix_digest=DIGEST,
        provider_replay_digest=DIGEST,
        tool_boundary_marker=marker,
    )


def test_an_admission_start_without_its_marker_differs_only_by_the_marker() -> None:
    with_marker = _start("runtime_admission", marker=True).to_wire()
    without = _start("runtime_admission", marker=False)
    assert without.protocol_marker is None
    assert set(with_marker["actions"]) == {"continuationStart", "runtimeProtocol"}
    assert without.to_wire() == {
        **with_marker,
        "actions": {"continuationStart": with_marker["actions"]["continuationStart"]},
    }


def test_a_claim_repair_start_never_carries_the_marker() -> None:
    repair = _start("claim_repair", marker=True)
    assert repair.protocol_marker is None
    assert repair == _start("claim_repair", marker=False)


def test_the_claims_start_event_passes_the_marker_choice_through() -> None:
    boundary = SourceBoundary("s1", "i1", "r1", "t1", 3, DIGEST, DIGEST, DIGEST)
    target = ContinuationTarget("i2", "r2", "t2")
    for marker in (True, False):
        event = continuation_start_event(
            boundary, target, event_id="r2-start", ts=6000, tool_boundary_marker=marker
        )
        assert event.protocol_marker == ("t1_after_preflight_v1" if marker else None)
        assert event.to_wire()["actions"]["continuationStart"]["claimId"] == boundary.claim_id
