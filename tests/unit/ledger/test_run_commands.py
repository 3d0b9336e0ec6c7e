"""Store-free tests of the Run aggregate's commands: each command returns the facts a store
would save, never mutates the aggregate, and refuses bad input with its typed error
(docs/reference/ledger.md#write-rules, #header-rules)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from maka_es.errors import (
    EventIdConflictError,
    EventIdentityMismatchError,
    HeaderUpdateRefusedError,
    InvalidRunHeaderError,
    MakaError,
    PartialEventRefusedError,
    ReservedFactError,
    RunSealedError,
    RuntimeOffsetMismatchError,
    TerminalConflictError,
    ToolLedgerRejectionError,
)
from maka_es.ledger.model.facts import (
    InvocationBound,
    RunCreated,
    RunHeaderUpdated,
    RunSealed,
    RuntimeEventRecorded,
    bind_invocation,
    invocation_stream_id,
    run_stream_id,
)
from maka_es.ledger.model.run import Run
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import terminal_fact
from tests.unit.ledger.support import (
    CREATED_AT,
    SPINE,
    call,
    commit,
    events,
    header,
    ledger,
    new_run,
    prepared,
    recorded,
    state_of,
    with_changes,
)


def refused(run: Run, command: Callable[[], object], error: type[MakaError], code: str) -> None:
    """``command`` raises ``error`` with ``code`` and leaves the aggregate exactly as it was."""
    before = state_of(run)
    with pytest.raises(error) as info:
        command()
    assert info.value.code == code
    assert state_of(run) == before


def test_create_is_version_one_of_the_runs_stream() -> None:
    created = Run.create(header(), CREATED_AT)
    assert isinstance(created, RunCreated)
    assert created.originator_id == run_stream_id(SPINE.run_id)
    assert created.originator_version == 1
    assert created.header == header().to_wire()
    bound = bind_invocation(header())
    assert isinstance(bound, InvocationBound)
    assert bound.originator_id == invocation_stream_id(SPINE.invocation_id)
    assert (bound.run_id, bound.session_id, bound.turn_id) == ("r1", "s1", "t1")


def test_create_refuses_a_terminal_header_or_one_without_invocation() -> None:
    terminal = header(status="completed", completedAt=1000)
    with pytest.raises(InvalidRunHeaderError) as info:
        Run.create(terminal, CREATED_AT)
    assert info.value.detail["field"] == "status"
    unbound = header().model_copy(update={"invocation_id": None})
    for command in (lambda: Run.create(unbound, CREATED_AT), lambda: bind_invocation(unbound)):
        with pytest.raises(InvalidRunHeaderError) as info:
            command()
        assert info.value.detail["field"] == "invocationId"


def test_append_returns_recorded_facts_in_sequence_without_mutating() -> None:
    run, _ = new_run()
    batch = events(ledger())
    before = state_of(run)
    decision = run.decide_append(batch, committed_at=2000)
    assert state_of(run) == before
    assert decision.retried == 0
    assert decision.appended == tuple(batch)
    assert [(f.originator_version, f.event_seq, f.event_id) for f in recorded(decision.facts)] == [
        (2, 1, batch[0].id)
    ]
    fact = decision.facts[0]
    assert isinstance(fact, RuntimeEventRecorded)
    assert (fact.payload, fact.committed_at) == (canonical_json(batch[0]), 2000)
    commit(run, decision.facts)
    assert (run.version, run.high_water, run.events) == (2, 1, tuple(batch))


def test_exact_retry_is_skipped_and_counted() -> None:
    run, _ = new_run()
    builder = ledger()
    commit(run, run.decide_append(events(builder), committed_at=2000).facts)
    builder.text()
    retry = run.decide_append(events(builder), committed_at=2001)
    assert retry.retried == 1
    assert [f.event_id for f in recorded(retry.facts)] == [builder.decoded()[1].id]
    # the same new event twice in one batch is one fact and one retry
    twice = run.decide_append([builder.decoded()[1]] * 2, committed_at=2001)
    assert (len(twice.facts), twice.retried) == (1, 1)


def test_conflicting_retry_is_refused() -> None:
    run, _ = new_run()
    first = events(ledger())[0]
    commit(run, run.decide_append([first], committed_at=2000).facts)
    changed = with_changes(first, ts=first.ts + 1)
    refused(
        run,
        lambda: run.decide_append([changed], committed_at=2001),
        EventIdConflictError,
        "event_id_conflict",
    )


@pytest.mark.parametrize("key", ["sessionId", "invocationId", "runId", "turnId"])
def test_an_event_of_another_run_is_an_identity_mismatch(key: str) -> None:
    run, _ = new_run()
    stranger = with_changes(events(ledger())[0], **{key: "other"})
    with pytest.raises(EventIdentityMismatchError) as info:
        run.decide_append([stranger], committed_at=2000)
    assert info.value.detail["fields"] == [key]


def test_partial_events_are_refused() -> None:
    run, _ = new_run()
    partial = with_changes(events(ledger())[0], partial=True)
    refused(
        run,
        lambda: run.decide_append([partial], committed_at=2000),
        PartialEventRefusedError,
        "partial_event_refused",
    )


def test_after_the_terminal_event_the_run_is_sealed() -> None:
    run, _ = new_run()
    builder = ledger()
    builder.terminal()
    commit(run, run.decide_append(events(builder), committed_at=2000).facts)
    assert run.terminal_event == builder.decoded()[-1]
    builder.text()
    refused(
        run,
        lambda: run.decide_append([builder.decoded()[-1]], committed_at=2001),
        RunSealedError,
        "run_sealed",
    )
    second = terminal_fact(
        SPINE.envelope("x", 0, "system", "system"), event_id="t2", ts=1, status="completed"
    )
    refused(
        run,
        lambda: run.decide_append([second], committed_at=2001),
        TerminalConflictError,
        "terminal_conflict",
    )
    # a batch holding a terminal and then anything is refused as a whole
    fresh, _ = new_run()
    refused(
        fresh,
        lambda: fresh.decide_append([*events(builder)[:2], builder.decoded()[-1]], committed_at=1),
        RunSealedError,
        "run_sealed",
    )


def test_high_water_must_match_when_given() -> None:
    run, _ = new_run()
    commit(run, run.decide_append(events(ledger()), committed_at=2000).facts)
    with pytest.raises(RuntimeOffsetMismatchError) as info:
        run.decide_append([], committed_at=2001, expected_high_water=0)
    assert info.value.detail == {
        "expectedRuntimeEventHighWater": 0,
        "actualRuntimeEventHighWater": 1,
    }
    assert run.decide_append([], committed_at=2001, expected_high_water=1).facts == ()


def test_reserved_facts_are_refused_by_the_generic_append() -> None:
    run, _, _ = prepared()
    dispatch = run.events[-1]
    refused(
        run,
        lambda: run.decide_append([with_changes(dispatch, id="d-copy")], committed_at=1),
        ReservedFactError,
        "reserved_fact",
    )


def test_tool_bearing_appends_must_not_introduce_a_resolver_issue() -> None:
    run, call_event, _ = prepared()
    duplicate = with_changes(call_event, id="c1-again")
    with pytest.raises(ToolLedgerRejectionError) as info:
        run.decide_append([duplicate], committed_at=1)
    assert info.value.code == "duplicate_call"


def _with_terminal(status: str = "completed") -> tuple[Run, RuntimeEvent]:
    run, _ = new_run()
    builder = ledger()
    builder.terminal(status)
    commit(run, run.decide_append(events(builder), committed_at=2000).facts)
    return run, builder.decoded()[-1]


def test_header_update_allows_mutable_fields_only() -> None:
    run, _ = new_run()
    fact = run.decide_header_update({"updatedAt": 5}, updated_at=5)
    assert isinstance(fact, RunHeaderUpdated)
    assert (fact.originator_version, fact.patch) == (2, {"updatedAt": 5})
    refused(
        run,
        lambda: run.decide_header_update({"runId": "r9"}, updated_at=5),
        HeaderUpdateRefusedError,
        "header_update_refused",
    )


def test_terminal_header_needs_a_matching_durable_terminal_event() -> None:
    run, _ = new_run()
    done = {"status": "completed", "completedAt": 1002, "updatedAt": 1002}
    refused(
        run,
        lambda: run.decide_header_update(done, updated_at=5),
        TerminalConflictError,
        "terminal_conflict",
    )
    run, terminal = _with_terminal("completed")
    failed = {"status": "failed", "failureClass": "x", "completedAt": terminal.ts}
    refused(
        run,
        lambda: run.decide_header_update(failed, updated_at=5),
        TerminalConflictError,
        "terminal_conflict",
    )
    patch = {"status": "completed", "completedAt": terminal.ts, "updatedAt": terminal.ts}
    commit(run, [run.decide_header_update(patch, updated_at=5)])
    assert run.header.status == "completed"
    # a terminal header its terminal fact backs never changes again
    refused(
        run,
        lambda: run.decide_header_update({"updatedAt": 9}, updated_at=9),
        HeaderUpdateRefusedError,
        "header_update_refused",
    )


def test_an_unbacked_terminal_header_may_only_be_corrected_to_the_durable_fact() -> None:
    run, _ = new_run()
    # another writer stored a terminal header without its terminal event
    stale = RunHeaderUpdated(
        originator_id=run.id,
        originator_version=2,
        patch={"status": "cancelled", "abortSource": "user", "completedAt": 1},
        updated_at=1,
    )
    commit(run, [stale])
    builder = ledger()
    builder.terminal("completed")
    commit(run, run.decide_append(events(builder), committed_at=2000).facts)
    back_to_running = {"status": "running"}
    refused(
        run,
        lambda: run.decide_header_update(back_to_running, updated_at=5),
        HeaderUpdateRefusedError,
        "header_update_refused",
    )
    terminal = run.terminal_event
    assert terminal is not None
    fix = {"status": "completed", "completedAt": terminal.ts, "updatedAt": terminal.ts}
    assert run.decide_header_update(fix, updated_at=5).patch == fix


def test_sealing_refuses_every_later_event_and_a_second_seal() -> None:
    run, _ = new_run()
    seal = run.decide_seal("claim-1", sealed_at=7)
    assert isinstance(seal, RunSealed)
    assert (seal.originator_version, seal.claim_id) == (2, "claim-1")
    commit(run, [seal])
    assert run.sealed_by == "claim-1"
    refused(
        run,
        lambda: run.decide_append(events(ledger()), committed_at=8),
        RunSealedError,
        "run_sealed",
    )
    refused(run, lambda: run.decide_seal("claim-2", sealed_at=8), RunSealedError, "run_sealed")


def test_a_call_event_is_a_plain_append_before_t1() -> None:
    run, _ = new_run()
    builder = ledger()
    call(builder)
    decision = run.decide_append(events(builder), committed_at=2000)
    assert [f.event_id for f in recorded(decision.facts)] == ["e1", "e2"]
