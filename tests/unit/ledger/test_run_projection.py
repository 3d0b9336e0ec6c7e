"""Store-free tests of the Run projector and of a continuation target's creation: replaying
the facts the commands returned rebuilds exactly the state they produced when applied one by
one (docs/reference/ledger.md#streams), and a corrupt stream is refused."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from maka_es.errors import ReservedFactError, StoreCorruptionError
from maka_es.ledger.model.facts import (
    RunCreated,
    RunHeaderUpdated,
    RuntimeEventRecorded,
    SessionOpened,
    StoredFact,
)
from maka_es.ledger.model.run import Run, project_run
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import bound_response, continuation_start_fact, terminal_fact
from tests.unit.ledger.support import (
    DIGEST,
    bundle,
    call,
    header,
    ledger,
    new_run,
    op_of,
    recorded,
    state_of,
)


class Lifetime:
    """Drives one run through every kind of command, applying each returned fact as a
    successful save would and recording the state after every fact (``states[k]`` is the
    state after ``log[: k + 1]``)."""

    def __init__(self) -> None:
        self.run, self.log = new_run()
        self.states = [state_of(self.run)]

    def save(self, facts: Iterable[StoredFact]) -> None:
        for fact in facts:
            self.run.apply(fact)
            self.log.append(fact)
            self.states.append(state_of(self.run))


def _lifetime() -> Lifetime:
    life = Lifetime()
    run = life.run
    builder = ledger()
    builder.text()
    write = call(builder, "c1", "Write")
    life.save(run.decide_append(builder.decoded()[:2], committed_at=1001).facts)
    prepared = run.decide_tool_prepared(
        write, recovery_mode="reconcile", committed_at=1002, metadata={"prior": "p"}
    )
    life.save(prepared.facts)
    bash = call(builder, "c2", "Bash")
    life.save(run.decide_tool_prepared(bash, recovery_mode="idempotent", committed_at=1003).facts)
    outcome = bound_response(bash, op_of(bash), ts=1004, result="ok", duration_ms=3)
    life.save(run.decide_tool_outcome(outcome, committed_at=1004).facts)
    life.save(run.decide_recovery_bundle(op_of(write), **bundle(write), committed_at=1005).facts)
    end = terminal_fact(run.header.spine, event_id="end", ts=1006, status="completed")
    life.save(run.decide_append([end], committed_at=1006).facts)
    patch = {"status": "completed", "updatedAt": 1006, "completedAt": 1006}
    life.save([run.decide_header_update(patch, updated_at=1006)])
    life.save([run.decide_seal("claim-1", sealed_at=1007)])
    return life


def test_projector_rebuild_equals_the_incrementally_applied_state_at_every_prefix() -> None:
    life = _lifetime()
    assert len(life.states) == len(life.log) == 15
    for k in range(1, len(life.log) + 1):
        rebuilt = project_run(None, life.log[:k])
        assert rebuilt is not None
        assert state_of(rebuilt) == life.states[k - 1], f"after fact {k}"
    final = project_run(None, life.log)
    assert final is not None
    assert final.events == life.run.events
    assert final.terminal_event == life.run.terminal_event
    assert [op.state for op in final.tool_operations] == ["recovery_completed", "outcome_committed"]
    assert final.tool_operations[0].metadata == {"prior": "p"}
    assert (final.header.status, final.sealed_by) == ("completed", "claim-1")
    assert project_run(None, []) is None


def test_projector_continues_from_a_snapshot() -> None:
    life = _lifetime()
    middle = project_run(None, life.log[:5])
    resumed = project_run(middle, life.log[5:])
    assert resumed is not None
    assert resumed is middle
    assert state_of(resumed) == life.states[-1]


def _recorded(run: Run, event_seq: int, version: int, event: RuntimeEvent) -> RuntimeEventRecorded:
    return RuntimeEventRecorded(
        originator_id=run.id,
        originator_version=version,
        event_seq=event_seq,
        event_id=event.id,
        payload=event.model_dump_json(by_alias=True, exclude_unset=True),
        committed_at=1,
    )


def test_a_corrupt_stream_is_refused() -> None:
    run, log = new_run()
    created = log[0]
    user = ledger().decoded()[0]
    with pytest.raises(StoreCorruptionError):
        project_run(None, [_recorded(run, 1, 1, user)])  # no RunCreated first
    with pytest.raises(StoreCorruptionError):
        project_run(None, [created, _recorded(run, 1, 3, user)])  # version gap
    with pytest.raises(StoreCorruptionError):
        project_run(None, [created, _recorded(run, 2, 2, user)])  # event_seq gap
    opened = SessionOpened(
        originator_id=run.id,
        originator_version=2,
        session_id="s1",
        cwd="/",
        workspace_identity=None,
        opened_at=1,
    )
    with pytest.raises(StoreCorruptionError):
        project_run(None, [created, opened])  # a session fact in a run stream


def _start(provenance: Any, claim_id: str = "claim-1") -> RuntimeEvent:
    target = header(status="created")
    return continuation_start_fact(
        target.spine,
        event_id="start",
        ts=4242,
        provenance=provenance,
        claim_id=claim_id,
        boundary_digest=DIGEST,
        source_spine={"sessionId": "s1", "invocationId": "i0", "runId": "r0", "turnId": "t0"},
        source_high_water=3,
        source_prefix_digest=DIGEST,
        provider_replay_digest=DIGEST,
    )


@pytest.mark.parametrize("admitted", [True, False])
def test_create_continuation_writes_the_start_as_event_one(admitted: bool) -> None:
    target = header(status="created")
    facts = Run.create_continuation(
        target, _start("runtime_admission"), created_at=4000, admitted=admitted
    )
    kinds = [type(f) for f in facts]
    assert kinds[:2] == [RunCreated, RuntimeEventRecorded]
    run = project_run(None, facts)
    assert run is not None
    assert [e.id for e in run.events] == ["start"]
    assert run.resolution().tool_boundary_protocol == "t1_after_preflight_v1"
    if admitted:
        assert kinds[2:] == [RunHeaderUpdated]
        assert (run.header.status, run.header.updated_at) == ("running", 4242)
    else:
        assert kinds[2:] == []
        assert run.header.status == "created"


def test_create_continuation_refuses_anything_but_a_start_fact() -> None:
    with pytest.raises(ReservedFactError):
        Run.create_continuation(header(status="created"), ledger().decoded()[0], created_at=1)


def _claimed_target(claim_id: str = "claim-1") -> Run:
    source = {
        "protocol": "continuation_source_v2",
        "claimId": claim_id,
        "boundaryDigest": DIGEST,
        "sourceInvocationId": "i0",
        "sourceRunId": "r0",
        "sourceTurnId": "t0",
        "sourceRuntimeEventHighWater": 3,
        "sourcePrefixDigest": DIGEST,
        "replayManifestDigest": DIGEST,
    }
    created = Run.create(header(status="created", continuationSource=source), 4000)
    run = project_run(None, [created])
    assert run is not None
    return run


def test_claim_repair_start_is_event_one_of_its_claims_target_only() -> None:
    run = _claimed_target()
    repair = _start("claim_repair")
    decision = run.decide_claim_repair_start(repair, committed_at=5000)
    assert [f.event_id for f in recorded(decision.facts)] == ["start"]
    for fact in decision.facts:
        run.apply(fact)
    retry = run.decide_claim_repair_start(repair, committed_at=5001)
    assert (retry.facts, retry.retried) == ((), 1)
    before = state_of(run)
    for wrong in (_start("runtime_admission"), _start("claim_repair", "claim-9")):
        with pytest.raises(ReservedFactError):
            _claimed_target().decide_claim_repair_start(wrong, committed_at=5000)
    with pytest.raises(ReservedFactError):  # a started run takes no second event 1
        run.decide_claim_repair_start(
            RuntimeEvent.model_validate({**repair.to_wire(), "id": "start-2"}), committed_at=5002
        )
    assert state_of(run) == before
