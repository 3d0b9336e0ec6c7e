"""Store-free tests of the continuation gates one by one, and of the one mapping from a blocked
composite replay to its park reason (docs/reference/continuation.md#gates)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from maka_es.continuation.model.gates import (
    GateVerdicts,
    HistoryEdges,
    checkpoint_restore_gate,
    continuation_identity_reused_gate,
    cwd_gate,
    ledger_empty_gate,
    provider_boundary_gate,
    provider_history_start_gate,
    provider_item_edges,
    runtime_context_edges,
    runtime_identity_gate,
    runtime_offset_gate,
    workspace_ref_gate,
)
from maka_es.continuation.model.plan import (
    REPLAY_PARK_REASONS,
    ContinuationInputs,
    WorkspaceCheckpoint,
    build_continuation_plan,
    replay_blocked_plan,
    replay_park_reason,
)
from maka_es.continuation.model.replay import (
    CompositeReplay,
    ReplayBlockReason,
    build_composite_replay,
)
from maka_es.resume.models import ResumeRejectionReason
from maka_es.testing.builders import LedgerBuilder, Spine


def facts(**overrides: Any) -> ContinuationInputs:
    base: dict[str, Any] = {
        "sourceCwd": "/workspace",
        "currentCwd": "/workspace",
        "sourceWorkspaceIdentity": "w1",
        "currentWorkspaceIdentity": "w1",
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Bash"],
        "continuationIdentity": {"invocationId": "i9", "runId": "r9", "turnId": "t9"},
    }
    return ContinuationInputs.model_validate({**base, **overrides})


def blocked(reason: ReplayBlockReason) -> CompositeReplay:
    return CompositeReplay(
        blocked_reason=reason,
        blocked_segment_index=0,
        diagnostics=(),
        provider_projection_version=1,
        segments=(),
        runtime_context=(),
        provider_items=(),
        prefix_digests=(),
        manifest_digest=None,
        provider_replay_digest=None,
    )


# -- the one blocked-replay mapping -----------------------------------------------------------


def test_every_replay_block_reason_has_exactly_one_park_reason() -> None:
    assert set(REPLAY_PARK_REASONS) == set(get_args(ReplayBlockReason))
    assert set(REPLAY_PARK_REASONS.values()) <= set(get_args(ResumeRejectionReason))
    assert replay_park_reason("tool_recovery_corruption") == "runtime_ledger_unreadable"
    assert replay_park_reason("tool_recovery_unsettled") == "runtime_ledger_unreadable"
    assert replay_park_reason("provider_replay_unsupported") == "provider_replay_unsupported"


@pytest.mark.parametrize("reason", get_args(ReplayBlockReason))
def test_a_blocked_replay_parks_with_the_mapped_reason_alone(reason: ReplayBlockReason) -> None:
    plan = build_continuation_plan([], facts(), replay=blocked(reason))
    assert plan == replay_blocked_plan(blocked(reason))
    assert plan.rejection_reasons == (REPLAY_PARK_REASONS[reason],)
    assert [d.detail for d in plan.diagnostics] == [{"segmentIndex": 0, "replayReason": reason}]


# -- single gates -----------------------------------------------------------------------------


def test_offset_gate_compares_with_the_expected_high_water_only_when_given() -> None:
    gates = GateVerdicts()
    runtime_offset_gate(gates, None, 4)
    runtime_offset_gate(gates, 4, 4)
    assert gates.reasons == {}
    runtime_offset_gate(gates, 3, 4)
    assert list(gates.reasons) == ["runtime_offset_mismatch"]
    assert gates.diagnostics[0].detail == {"expected": 3, "actual": 4}


def test_identity_gates_need_a_source_and_the_empty_gate_needs_none() -> None:
    ledger = LedgerBuilder(Spine("s1", "i9", "r1", "t1"))
    ledger.user()
    ledger.add({**LedgerBuilder(Spine("s1", "i2", "r2", "t2")).user(), "id": "other"})
    events = ledger.decoded()
    gates = GateVerdicts()
    ledger_empty_gate(gates, None)
    runtime_identity_gate(gates, events, None)
    continuation_identity_reused_gate(gates, facts(), None)
    assert list(gates.reasons) == ["runtime_ledger_empty"]
    gates = GateVerdicts()
    ledger_empty_gate(gates, events[0])
    runtime_identity_gate(gates, events, events[0])
    continuation_identity_reused_gate(gates, facts(), events[0])  # i9 is the source's too
    assert list(gates.reasons) == ["runtime_identity_mismatch", "continuation_identity_reused"]
    assert gates.diagnostics[0].event_id == "other"


def test_cwd_gate_parks_when_strict_and_only_notes_when_relocatable() -> None:
    strict, relocatable = GateVerdicts(), GateVerdicts()
    cwd_gate(strict, facts(currentCwd="/elsewhere"))
    cwd_gate(relocatable, facts(currentCwd="/elsewhere", cwdPolicy="relocatable"))
    assert list(strict.reasons) == ["workspace_cwd_mismatch"]
    assert relocatable.reasons == {}
    assert [d.code for d in relocatable.diagnostics] == ["workspace_location_changed"]


@pytest.mark.parametrize(
    ("ref", "restored", "expected"),
    [
        (None, True, ["workspace_ref_missing"]),
        ("", False, ["workspace_ref_missing"]),
        ("ref-1", False, ["checkpoint_restore_failed"]),
        ("ref-1", True, []),
    ],
)
def test_checkpoint_gates_fire_at_most_one_of_l_and_m(
    ref: str | None, restored: bool, expected: list[str]
) -> None:
    checkpoint = WorkspaceCheckpoint(ref=ref, restored=restored, runtime_event_high_water=1)
    gates = GateVerdicts()
    workspace_ref_gate(gates, checkpoint)
    checkpoint_restore_gate(gates, checkpoint)
    assert list(gates.reasons) == expected


def test_head_and_tail_gates_read_the_history_edges() -> None:
    gates = GateVerdicts()
    provider_history_start_gate(gates, HistoryEdges("user", "e1", "tool", "e3"))
    provider_boundary_gate(gates, HistoryEdges("user", "e1", "tool", "e3"))
    assert gates.reasons == {}
    provider_history_start_gate(gates, HistoryEdges("assistant", "e1", "assistant", "e3"))
    provider_boundary_gate(gates, HistoryEdges("assistant", "e1", "assistant", "e3"))
    assert list(gates.reasons) == [
        "provider_resume_head_unsupported",
        "provider_resume_boundary_unsupported",
    ]
    assert [d.event_id for d in gates.diagnostics] == ["e1", "e3"]


def test_runtime_context_edges_use_ledger_roles_and_provider_item_edges_provider_roles() -> None:
    ledger = LedgerBuilder()
    ledger.user()
    ledger.call()
    ledger.response()
    ledger.text()
    assert runtime_context_edges(ledger.decoded()) == HistoryEdges("user", "e1", "model", "e4")
    replay = build_composite_replay([ledger.events])  # the model text is a trimmed suffix
    assert provider_item_edges(replay) == HistoryEdges("user", "e1", "tool", "e3")
    assert runtime_context_edges(()) == HistoryEdges(None, None, None, None)
