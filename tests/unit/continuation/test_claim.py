"""Store-free tests of the continuation claim aggregate (docs/reference/continuation.md#claims).

The claim's commands return facts and its read side folds them; nothing here touches a store,
so every rule of the aggregate is visible on its own: the derived ids, the facts a claim
writes, which start it accepts and how its stream is projected.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from maka_es.continuation.claims import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    claim_id_for,
    continuation_header,
    continuation_start_event,
    project_claim,
    record_start_fact,
    source_boundary,
)
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.errors import ContinuationStartConflictError, StoreCorruptionError
from maka_es.ledger.model.facts import (
    ContinuationClaimed,
    ContinuationStartRecorded,
    RunSealed,
    StartKind,
    claim_stream_id,
)
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV2, RunHeader

DIGESTS = ("sha256:" + "1" * 64, "sha256:" + "2" * 64, "sha256:" + "3" * 64)
BOUNDARY = SourceBoundary("s1", "i1", "r1", "t1", 4, *DIGESTS)
TARGET = ContinuationTarget("i2", "r2", "t2")
SOURCE_HEADER = RunHeader.model_validate(
    run_header(Spine(), status="failed", failureClass="provider_error", workspaceIdentity="w1")
)


def claimed(**kw: Any) -> ContinuationClaimed:
    return ContinuationClaim.create(BOUNDARY, TARGET, "r2-start", 2000, **kw)


def start(
    provenance: StartKind = "runtime_admission", *, target: ContinuationTarget = TARGET
) -> RuntimeEvent:
    return continuation_start_event(
        BOUNDARY, target, event_id="r2-start", ts=2001, provenance=provenance
    )


# -- the boundary and its derived ids ---------------------------------------------------------


def test_the_claim_id_is_derived_from_session_run_high_water_and_prefix_digest() -> None:
    assert BOUNDARY.claim_id == claim_id_for("s1", "r1", 4, DIGESTS[0])
    assert BOUNDARY.claim_id.startswith("claim_")
    assert len(BOUNDARY.claim_id) == len("claim_") + 32
    # invocation, turn and the two lineage digests do not name the claim
    same = dataclasses.replace(BOUNDARY, invocation_id="x", turn_id="y", manifest_digest="z")
    assert same.claim_id == BOUNDARY.claim_id
    for changed in ({"session_id": "s9"}, {"run_id": "r9"}, {"high_water": 5}):
        assert dataclasses.replace(BOUNDARY, **changed).claim_id != BOUNDARY.claim_id


def test_the_boundary_is_typed_by_name_or_stored_alias_and_refuses_wrong_types() -> None:
    by_name = SourceBoundary(
        session_id="s1",
        invocation_id="i1",
        run_id="r1",
        turn_id="t1",
        high_water=4,
        prefix_digest=DIGESTS[0],
        manifest_digest=DIGESTS[1],
        provider_replay_digest=DIGESTS[2],
    )
    assert by_name == BOUNDARY
    assert hash(by_name) == hash(BOUNDARY)
    with pytest.raises(ValidationError):
        SourceBoundary("s1", "i1", "r1", "t1", "4", *DIGESTS)  # type: ignore[arg-type]


def test_source_boundary_of_a_replay_is_the_source_segment_and_the_lineage_digests() -> None:
    ledger = LedgerBuilder(Spine("s1", "i1", "r1", "t1"))
    ledger.user()
    ledger.text()
    ledger.terminal("failed")
    replay = build_composite_replay([ledger.events])
    boundary = source_boundary(replay)
    assert (boundary.session_id, boundary.run_id, boundary.high_water) == ("s1", "r1", 3)
    assert boundary.prefix_digest == replay.prefix_digests[-1]
    assert boundary.manifest_digest == replay.manifest_digest
    assert boundary.provider_replay_digest == replay.provider_replay_digest


# -- the facts a claim writes -----------------------------------------------------------------


def test_create_is_version_1_of_the_stream_derived_from_the_boundary() -> None:
    fact = claimed()
    assert (fact.originator_id, fact.originator_version) == (
        claim_stream_id(BOUNDARY.claim_id),
        1,
    )
    assert (fact.claim_id, fact.boundary, fact.start_event_id) == (
        BOUNDARY.claim_id,
        BOUNDARY,
        "r2-start",
    )
    assert fact.target == {"sessionId": "s1", "invocationId": "i2", "runId": "r2", "turnId": "t2"}
    assert (fact.provider_projection_version, fact.target_run_header) == (1, None)
    assert fact.state()["boundary"]["highWater"] == 4  # stored camelCase, as ever


def test_the_target_header_is_created_with_the_v2_source_of_the_boundary() -> None:
    header = continuation_header(
        SOURCE_HEADER, BOUNDARY, TARGET, workspace_identity="w2", claimed_at=2000
    )
    assert (header.run_id, header.status, header.parent_run_id) == ("r2", "created", "r1")
    source = header.continuation_source
    assert isinstance(source, ContinuationSourceV2)
    assert (source.claim_id, source.boundary_digest, source.source_runtime_event_high_water) == (
        BOUNDARY.claim_id,
        BOUNDARY.manifest_digest,
        4,
    )
    assert claimed(target_run_header=header).target_run_header == header.to_wire()


def test_only_a_runtime_admission_start_declares_the_tool_boundary_protocol() -> None:
    admission, repair = start("runtime_admission"), start("claim_repair")
    assert admission.actions is not None
    assert repair.actions is not None
    assert admission.actions.runtime_protocol is not None
    assert repair.actions.runtime_protocol is None
    fact = admission.actions.continuation_start
    assert fact is not None
    assert (fact.claim_id, fact.provenance) == (BOUNDARY.claim_id, "runtime_admission")


# -- the read side and its start --------------------------------------------------------------


def test_a_new_claim_expects_the_planned_runtime_admission_start() -> None:
    claim = ContinuationClaim(claimed())
    assert (claim.version, claim.target_run_id, claim.start_kind) == (1, "r2", None)
    assert claim.target_identity == TARGET
    assert claim.source_boundary == BOUNDARY
    assert claim.expected_start() == ("r2-start", "runtime_admission")
    assert claim.target_run_header is None


@pytest.mark.parametrize("kind", ["runtime_admission", "claim_repair"])
def test_recording_a_start_is_version_2_and_then_the_authority(kind: Any) -> None:
    claim = ContinuationClaim(claimed())
    record = claim.record_start(start(kind), kind)
    assert (record.originator_id, record.originator_version) == (claim.id, 2)
    assert (record.start_event_id, record.start_kind) == ("r2-start", kind)
    claim.apply_start(record)
    assert (claim.version, claim.start_kind, claim.expected_start()) == (
        2,
        kind,
        ("r2-start", kind),
    )
    with pytest.raises(ContinuationStartConflictError):
        claim.record_start(start(kind), kind)  # a start is recorded once


def test_a_start_on_another_target_or_of_another_kind_is_refused() -> None:
    claim = ContinuationClaim(claimed())
    elsewhere = ContinuationTarget("i2", "r3", "t2")
    with pytest.raises(ContinuationStartConflictError):
        claim.record_start(start(target=elsewhere), "runtime_admission")
    with pytest.raises(ContinuationStartConflictError):
        claim.record_start(start("runtime_admission"), "claim_repair")  # provenance differs
    with pytest.raises(ContinuationStartConflictError):
        record_start_fact("claim_other", start(), "runtime_admission")
    assert claim.recorded_start is None


def test_projecting_a_claim_stream() -> None:
    record = record_start_fact(BOUNDARY.claim_id, start(), "runtime_admission")
    claim = project_claim(None, [claimed(), record])
    assert claim is not None
    assert claim.recorded_start == record
    assert project_claim(None, []) is None
    stranger = RunSealed(
        originator_id=claim_stream_id(BOUNDARY.claim_id),
        originator_version=3,
        claim_id=BOUNDARY.claim_id,
        sealed_at=2002,
    )
    for facts in ([record], [claimed(), stranger], [claimed(), claimed()]):
        with pytest.raises(StoreCorruptionError):
            project_claim(None, facts)


def test_a_second_or_foreign_start_record_is_corruption() -> None:
    claim = ContinuationClaim(claimed())
    foreign = ContinuationStartRecorded(
        originator_id=claim.id,
        originator_version=2,
        claim_id="claim_other",
        start_event_id="r2-start",
        start_kind="runtime_admission",
    )
    with pytest.raises(StoreCorruptionError):
        claim.apply_start(foreign)
    claim.apply_start(record_start_fact(BOUNDARY.claim_id, start(), "runtime_admission"))
    with pytest.raises(StoreCorruptionError):
        claim.apply_start(record_start_fact(BOUNDARY.claim_id, start(), "runtime_admission"))
