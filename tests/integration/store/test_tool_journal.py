"""Tool journal T1 / T2 and the generic write path through the real store
(docs/reference/tool-journal.md#t1-t2, docs/reference/ledger.md#write-rules).

Mirrors the T1/T2, reserved-fact, transition-validator and fail-stop items of the reference
suites sqlite-runtime-store, recovery-persistence-authority and tool-recovery-authority
(reference suites). Recovery bundles are in ``test_tool_journal_bundles.py``.

Most tests run on ``store_app`` (a real SQLite file); ``any_app`` where the point is the
domain rule rather than the store. Every refusal is checked against ``store_snapshot``: a
refused command leaves the store byte-for-byte unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import (
    EventIdentityMismatchError,
    MakaError,
    ReservedFactError,
    RunSealedError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
    ToolOperationConflictError,
    ToolOperationNotFoundError,
    ToolOutcomeConflictError,
)
from maka_es.ledger.model.facts import RuntimeEventRecorded, ToolMetadataRecorded, run_stream_id
from maka_es.testing.builders import SAMPLE_DIGEST as DIGEST
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.testing.probes import StoreSnapshot, commit_unchecked, store_snapshot
from maka_es.tooljournal.model.operation import expected_journal_state
from maka_es.tooljournal.model.resolver import ResolverState
from maka_es.tooljournal.model.scanner import ResolverIssue
from maka_es.wire.codec import canonical_args_hash, canonical_json
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1_PROTOCOL
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import dispatch_fact as build_dispatch_event

SPINE = Spine()
RUN = SPINE.run_id
EV = Events.wire()
WRITE_ARGS: dict[str, Any] = {"path": "notes.txt", "content": "after"}
#: frozen vector for ``Write {content:'after', path:'notes.txt'}`` (wire.md#args-hash)
WRITE_ARGS_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"


def open_run(app: RuntimeApplication, *, marker: str | None = T1_PROTOCOL) -> None:
    """Session s1, run r1 and its first (user) event, declaring the T1 protocol by default."""
    app.open_session(SPINE.session_id, "/workspace")
    app.ledger.create_run(run_header(SPINE))
    app.ledger.append_event(RUN, EV.user(marker=marker))


def save_unvalidated(app: RuntimeApplication, event: dict[str, Any]) -> None:
    """Append ``event`` to r1 bypassing every domain check, as an older writer without the
    transition validator would have: one ``RuntimeEventRecorded`` saved directly."""
    run = app._store.load_run(RUN)
    decoded = RuntimeEvent.model_validate(event)
    commit_unchecked(
        app,
        RuntimeEventRecorded(
            originator_id=run_stream_id(RUN),
            originator_version=run.version + 1,
            event_seq=run.high_water + 1,
            event_id=decoded.id,
            payload=canonical_json(decoded),
            committed_at=1.0,
        ),
    )


def wires(app: RuntimeApplication) -> list[dict[str, Any]]:
    return [event.to_wire() for event in app.read_run_events(RUN)]


def ids(app: RuntimeApplication) -> list[str]:
    return [event.id for event in app.read_run_events(RUN)]


#: docs/reference/wire.md#vectors: invocation ``i1``, call ``c1``
OP_C1 = "toolop_d0f988070ecbf20ace41f566372d2e9a"


def refused(
    app: RuntimeApplication, command: Callable[[], object], error: type[MakaError], code: str
) -> MakaError:
    """Run ``command``, expect ``error`` with ``code``, and prove nothing was written."""
    before = store_snapshot(app)
    with pytest.raises(error) as info:
        command()
    assert info.value.code == code, info.value
    assert store_snapshot(app) == before
    return info.value


def new_rows(before: StoreSnapshot, after: StoreSnapshot) -> list[tuple[int, str, int, str]]:
    old = {row[0] for row in before.rows}
    return [row[:4] for row in after.rows if row[0] not in old]


@pytest.fixture
def no_armed_failpoints() -> Iterator[None]:
    yield
    failpoints.disarm()


def _raise_inside_save(name: str) -> None:
    raise RuntimeError(f"simulated failure at {name}")


# -- T1 -------------------------------------------------------------------------------------------


def test_operation_id_follows_the_frozen_vector(any_app: RuntimeApplication) -> None:
    """T1 derives the operation id from (invocationId, providerToolCallId) (wire.md#vectors)."""
    open_run(any_app)
    assert SPINE.operation_id("c1") == OP_C1
    assert (
        any_app.tool_journal.commit_tool_prepared(
            RUN, EV.call("c1", "Write", WRITE_ARGS)
        ).operation_id
        == OP_C1
    )


def test_t1_commits_call_and_dispatch_in_one_save(store_app: RuntimeApplication) -> None:
    """T1 appends exactly [call, dispatch]: dispatch id ``<op>_dispatch``, system lane, the args
    hash recomputed from the stored call args (frozen vector), refs {operationId, toolCallId};
    the journal holds one ``prepared`` operation at version 1 and the resolver says
    ``indeterminate / dispatch_without_response``."""
    open_run(store_app)
    # keys deliberately out of order: the hash is over the canonical form
    call = EV.call("c1", "Write", {"path": "notes.txt", "content": "after"})
    before = store_snapshot(store_app)

    commit = store_app.tool_journal.commit_tool_prepared(RUN, call, recovery_mode="reconcile")

    assert (commit.operation_id, commit.created) == (OP_C1, True)
    rows = new_rows(before, store_snapshot(store_app))
    assert [row[3] for row in rows] == [RuntimeEventRecorded.TOPIC] * 2
    assert [row[0] for row in rows] == [rows[0][0], rows[0][0] + 1]
    events = wires(store_app)
    assert [e["id"] for e in events] == ["user-1", "call-c1", f"{OP_C1}_dispatch"]
    assert events[1] == call
    assert events[2] == {
        **EV.event(event_id=f"{OP_C1}_dispatch"),
        "actions": {
            "toolDispatch": {
                "protocol": T1_PROTOCOL,
                "operationId": OP_C1,
                "providerToolCallId": "c1",
                "toolName": "Write",
                "canonicalArgsHash": WRITE_ARGS_HASH,
                "recoveryMode": "reconcile",
            }
        },
        "refs": {"operationId": OP_C1, "toolCallId": "c1"},
    }
    stored_call = store_app.read_run_events(RUN)[1].function_call
    assert stored_call is not None
    assert canonical_args_hash(stored_call.name, stored_call.args) == WRITE_ARGS_HASH

    (operation,) = store_app.tool_journal.tool_operations(RUN)
    assert (operation.operation_id, operation.state, operation.version) == (OP_C1, "prepared", 1)
    assert (operation.tool_call_id, operation.tool_name) == ("c1", "Write")
    assert (operation.call_event_id, operation.dispatch_event_id) == (
        "call-c1",
        SPINE.fact_id("c1", "dispatch"),
    )
    assert (operation.recovery_mode, operation.canonical_args_hash) == (
        "reconcile",
        WRITE_ARGS_HASH,
    )
    assert operation.result_event_id is None
    assert operation.is_unsettled
    (decision,) = store_app.tool_journal.resolve_run(RUN).decisions
    assert (decision.status, decision.reason) == ("indeterminate", "dispatch_without_response")
    assert expected_journal_state(decision) == "prepared"


@pytest.mark.usefixtures("no_armed_failpoints")
def test_t1_rolls_back_as_a_whole_when_its_save_fails(store_app: RuntimeApplication) -> None:
    """A failure inside the T1 transaction (rows inserted, no COMMIT) leaves neither the call nor
    the dispatch; the same T1 then commits with ``created=True``."""
    open_run(store_app)
    before = store_snapshot(store_app)
    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, _raise_inside_save)
    with pytest.raises(RuntimeError, match="simulated failure"):
        store_app.tool_journal.commit_tool_prepared(
            RUN, EV.call("c1", "Write", WRITE_ARGS), metadata={"k": "v"}
        )
    failpoints.disarm()
    assert store_snapshot(store_app) == before
    assert store_app.tool_journal.tool_operations(RUN) == ()
    assert ids(store_app) == ["user-1"]
    assert (
        store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS)).created
        is True
    )


def test_t1_claims_a_call_committed_during_a_permission_wait(
    store_app: RuntimeApplication,
) -> None:
    """The identical call was committed earlier on the generic path: T1 appends only the
    dispatch and binds the existing call event."""
    open_run(store_app)
    call = EV.call("c1", "Write", WRITE_ARGS)
    store_app.ledger.append_event(RUN, call)
    before = store_snapshot(store_app)

    commit = store_app.tool_journal.commit_tool_prepared(RUN, call)

    assert commit.created is True
    assert len(new_rows(before, store_snapshot(store_app))) == 1
    assert ids(store_app) == ["user-1", "call-c1", SPINE.fact_id("c1", "dispatch")]
    (operation,) = store_app.tool_journal.tool_operations(RUN)
    assert operation.call_event_id == "call-c1"


def test_exact_t1_retry_is_not_created_and_writes_nothing(
    store_app: RuntimeApplication, store_url: str
) -> None:
    """An exact T1 retry (same call, mode, metadata) returns ``created=False``: another
    dispatcher owns the operation. Nothing is written, also from a freshly opened app."""
    open_run(store_app)
    call = EV.call("c1", "Write", WRITE_ARGS)
    store_app.tool_journal.commit_tool_prepared(
        RUN, call, recovery_mode="reconcile", metadata={"a": 1}
    )
    before = store_snapshot(store_app)

    retry = store_app.tool_journal.commit_tool_prepared(
        RUN, call, recovery_mode="reconcile", metadata={"a": 1}
    )

    assert (retry.operation_id, retry.created) == (OP_C1, False)
    assert store_snapshot(store_app) == before
    with RuntimeApplication.open(store_url) as reopened:
        again = reopened.tool_journal.commit_tool_prepared(
            RUN, call, recovery_mode="reconcile", metadata={"a": 1}
        )
        assert again.created is False
        assert store_snapshot(reopened) == before


@pytest.mark.parametrize(
    ("change", "mode"),
    [
        pytest.param(
            {"args": {"path": "other.txt", "content": "after"}}, "never_auto_retry", id="args"
        ),
        pytest.param({"name": "Edit"}, "never_auto_retry", id="tool-name"),
        pytest.param({}, "reconcile", id="recovery-mode"),
        pytest.param({"event_id": "call-c1-again"}, "never_auto_retry", id="call-event-id"),
    ],
)
def test_t1_identity_drift_is_refused(
    store_app: RuntimeApplication, change: dict[str, Any], mode: str
) -> None:
    """Same provider call id (so the same operation) with other args / name / recovery mode /
    call event: ``tool_operation_conflict``, store unchanged, operation still as first prepared."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    drifted = EV.call(
        "c1",
        change.get("name", "Write"),
        change.get("args", dict(WRITE_ARGS)),
        event_id=change.get("event_id"),
    )
    error = refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_prepared(RUN, drifted, recovery_mode=mode),
        ToolOperationConflictError,
        "tool_operation_conflict",
    )
    assert error.detail == {"operationId": OP_C1}
    (operation,) = store_app.tool_journal.tool_operations(RUN)
    assert (operation.tool_name, operation.recovery_mode) == ("Write", "never_auto_retry")


def test_t1_metadata_is_journalled_and_survives_reopen(
    store_app: RuntimeApplication, store_url: str
) -> None:
    """T1 metadata is saved in the T1 transaction (its own fact, not a RuntimeEvent), is visible
    on ``tool_operations(run)[i].metadata`` and survives a reopen; T2 keeps it."""
    open_run(store_app)
    metadata = {"expectedDigest": DIGEST, "priorDigest": None, "nested": {"n": [1, 2]}}
    before = store_snapshot(store_app)
    store_app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c1", "Write", WRITE_ARGS), recovery_mode="reconcile", metadata=metadata
    )
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c2", "Write", WRITE_ARGS))
    assert [row[3] for row in new_rows(before, store_snapshot(store_app))] == [
        RuntimeEventRecorded.TOPIC,
        RuntimeEventRecorded.TOPIC,
        ToolMetadataRecorded.TOPIC,
        RuntimeEventRecorded.TOPIC,
        RuntimeEventRecorded.TOPIC,
    ]
    assert [dict(op.metadata) for op in store_app.tool_journal.tool_operations(RUN)] == [
        metadata,
        {},
    ]
    assert len(store_app.read_run_events(RUN)) == 5  # metadata is not a ledger event
    store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))

    with RuntimeApplication.open(store_url) as reopened:
        first, second = reopened.tool_journal.tool_operations(RUN)
        assert (first.state, dict(first.metadata)) == ("outcome_committed", metadata)
        assert dict(second.metadata) == {}
        assert reopened.tool_journal.tool_operations(RUN) == store_app.tool_journal.tool_operations(
            RUN
        )


def test_t1_refuses_an_event_that_is_not_a_function_call(any_app: RuntimeApplication) -> None:
    """T1 needs a function_call: anything else is a ``semantic_lane_conflict`` rejection."""
    open_run(any_app)
    refused(
        any_app,
        lambda: any_app.tool_journal.commit_tool_prepared(RUN, EV.text(event_id="m1")),
        ToolLedgerRejectionError,
        "semantic_lane_conflict",
    )


def test_t1_after_the_terminal_is_run_sealed(store_app: RuntimeApplication) -> None:
    """The terminal event seals the run: a new T1 is ``run_sealed`` and writes nothing."""
    open_run(store_app)
    store_app.ledger.append_event(RUN, EV.terminal(status="failed"))
    refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_prepared(
            RUN, EV.call("c1", "Write", WRITE_ARGS)
        ),
        RunSealedError,
        "run_sealed",
    )


# -- T2 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("is_error", [False, True], ids=["success", "error"])
def test_t2_binds_the_response_to_its_operation(
    store_app: RuntimeApplication, is_error: bool
) -> None:
    """T2 appends exactly the response ``<op>_response`` (refs.operationId / toolCallId bound);
    the journal moves ``prepared → outcome_committed`` (version 2) and the resolver says
    ``completed / matching_response / normal_t2`` with ``responseIsError``; error outcomes are
    outcomes too."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    response = EV.bound_response(
        "c1", "Write", "failed" if is_error else "ok", is_error=is_error or None
    )
    before = store_snapshot(store_app)

    commit = store_app.tool_journal.commit_tool_outcome(RUN, response)

    assert (commit.operation_id, commit.created) == (OP_C1, True)
    assert [row[3] for row in new_rows(before, store_snapshot(store_app))] == [
        RuntimeEventRecorded.TOPIC
    ]
    assert wires(store_app)[-1] == response
    assert response["id"] == f"{OP_C1}_response"
    (operation,) = store_app.tool_journal.tool_operations(RUN)
    assert (operation.state, operation.version) == ("outcome_committed", 2)
    assert operation.result_event_id == SPINE.fact_id("c1", "response")
    (decision,) = store_app.tool_journal.resolve_run(RUN).decisions
    assert (decision.status, decision.reason, decision.settlement_origin) == (
        "completed",
        "matching_response",
        "normal_t2",
    )
    assert decision.response_is_error is is_error
    assert expected_journal_state(decision) == "outcome_committed"
    plan = store_app.plan_resume(RUN)
    assert plan.disposition == "safe_replay"
    assert [op.status for op in plan.operations] == ["failed" if is_error else "succeeded"]


@pytest.mark.usefixtures("no_armed_failpoints")
def test_t2_rollback_keeps_t1(store_app: RuntimeApplication) -> None:
    """A failure inside the T2 transaction leaves the operation ``prepared`` with no response;
    retrying the same T2 then commits."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    before = store_snapshot(store_app)
    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, _raise_inside_save)
    with pytest.raises(RuntimeError, match="simulated failure"):
        store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))
    failpoints.disarm()
    assert store_snapshot(store_app) == before
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["prepared"]
    assert (
        store_app.tool_journal.commit_tool_outcome(
            RUN, EV.bound_response("c1", "Write", "ok")
        ).created
        is True
    )


def test_exact_t2_retry_is_not_created_and_writes_nothing(store_app: RuntimeApplication) -> None:
    """The same response again: ``created=False``, store unchanged."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))
    before = store_snapshot(store_app)
    retry = store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))
    assert (retry.operation_id, retry.created) == (OP_C1, False)
    assert store_snapshot(store_app) == before


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(EV.bound_response("c1", "Write", "other"), id="other-result"),
        pytest.param(
            EV.bound_response("c1", "Write", "failed", is_error=True), id="error-after-success"
        ),
        pytest.param(
            EV.bound_response("c1", "Write", "ok", event_id="another-response"), id="other-event-id"
        ),
    ],
)
def test_a_different_second_outcome_is_outcome_conflict(
    store_app: RuntimeApplication, second: dict[str, Any]
) -> None:
    """One operation, one outcome: a different second T2 is ``outcome_conflict``."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))
    error = refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_outcome(RUN, second),
        ToolOutcomeConflictError,
        "outcome_conflict",
    )
    assert error.detail == {"operationId": OP_C1, "state": "outcome_committed"}


def _without_refs() -> dict[str, Any]:
    response = EV.bound_response("c1", "Write", "ok")
    del response["refs"]
    return response


def _refs(**refs: str) -> dict[str, Any]:
    return {**EV.bound_response("c1", "Write", "ok"), "refs": refs}


def _renamed() -> dict[str, Any]:
    response = EV.bound_response("c1", "Write", "ok")
    response["content"]["name"] = "Edit"
    return response


@pytest.mark.parametrize(
    ("response", "error", "code"),
    [
        pytest.param(_without_refs(), ToolLedgerRejectionError, "identity_conflict", id="no-refs"),
        pytest.param(
            _refs(operationId=OP_C1),
            ToolLedgerRejectionError,
            "identity_conflict",
            id="no-call-ref",
        ),
        pytest.param(
            _refs(operationId=OP_C1, toolCallId="c2"),
            ToolLedgerRejectionError,
            "identity_conflict",
            id="call-ref-differs-from-content-id",
        ),
        pytest.param(
            _refs(operationId=SPINE.operation_id("c9"), toolCallId="c1"),
            ToolOperationNotFoundError,
            "tool_operation_not_found",
            id="unknown-operation",
        ),
        pytest.param(_renamed(), ToolLedgerRejectionError, "identity_conflict", id="tool-name"),
        pytest.param(
            {**EV.text(event_id="m1"), "refs": {"operationId": OP_C1, "toolCallId": "c1"}},
            ToolLedgerRejectionError,
            "identity_conflict",
            id="not-a-response",
        ),
        pytest.param(
            {**EV.bound_response("c1", "Write", "ok"), "runId": "r2"},
            EventIdentityMismatchError,
            "event_identity_mismatch",
            id="other-run",
        ),
    ],
)
def test_t2_refusals_are_typed_and_write_nothing(
    store_app: RuntimeApplication, response: dict[str, Any], error: type[MakaError], code: str
) -> None:
    """T2 needs refs.operationId of a prepared operation and refs.toolCallId == content.id, with
    the operation's tool name and spine; each violation is a typed refusal, nothing written,
    and the operation stays ``prepared``."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    refused(
        store_app, lambda: store_app.tool_journal.commit_tool_outcome(RUN, response), error, code
    )
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["prepared"]


def test_t2_after_the_terminal_is_run_sealed(store_app: RuntimeApplication) -> None:
    """A prepared operation whose run already has its terminal event cannot get its T2 any
    more: ``run_sealed``, nothing written, the operation stays ``prepared`` (unknown outcome)."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    store_app.ledger.append_event(RUN, EV.terminal(status="failed"))
    refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_outcome(
            RUN, EV.bound_response("c1", "Write", "ok")
        ),
        RunSealedError,
        "run_sealed",
    )
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["prepared"]


# -- generic path: reserved facts -----------------------------------------------------------------


def _dispatch_wire() -> dict[str, Any]:
    """A well-formed dispatch for the pending call c2 (hash recomputed from its args)."""
    call = RuntimeEvent.model_validate(EV.call("c2", "Write", WRITE_ARGS))
    return build_dispatch_event(call, SPINE.operation_id("c2"), "never_auto_retry").to_wire()


def _continuation_start() -> dict[str, Any]:
    source = Spine("s1", "i0", "r0", "t0")
    return EV.continuation_start(source, 9, event_id="start-1", claim_id="c-9", marker=False)


def _workspace_fact() -> dict[str, Any]:
    event = EV.event(event_id="ws-1")
    event["actions"] = {"workspaceFact": {"kind": "baseline", "workspaceEpoch": 1}}
    return event


RESERVED: list[Any] = [
    pytest.param(_dispatch_wire, "toolDispatch", id="dispatch"),
    pytest.param(
        lambda: EV.bound_response("c1", "Write", "ok"),
        "operation-bound function_response",
        id="bound-response",
    ),
    pytest.param(lambda: EV.reconcile("c1"), "toolRecovery", id="reconcile"),
    pytest.param(
        lambda: EV.completed_decision(
            "c1",
            evidence=[*EV.evidence("c1"), SPINE.fact_id("c1", "response")],
            outcome_event_id=SPINE.fact_id("c1", "response"),
        ),
        "toolRecovery",
        id="decision",
    ),
    pytest.param(_continuation_start, "continuationStart", id="continuation-start"),
    pytest.param(_workspace_fact, "workspaceFact", id="workspace-fact"),
]


@pytest.mark.parametrize(("build", "fact"), RESERVED)
def test_generic_path_refuses_every_reserved_fact(
    any_app: RuntimeApplication, build: Callable[[], dict[str, Any]], fact: str
) -> None:
    """Dispatch, operation-bound response, both recovery facts, continuation start and workspace
    facts have their own commands: the generic append refuses them (``reserved_fact``), also
    inside an otherwise valid batch, even when the fact would be legal for the ledger (c1 is
    prepared in ``reconcile`` mode, c2 is a committed call awaiting its dispatch)."""
    open_run(any_app)
    any_app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c1", "Write", WRITE_ARGS), recovery_mode="reconcile"
    )
    any_app.ledger.append_event(RUN, EV.call("c2", "Write", WRITE_ARGS))
    event = build()
    error = refused(
        any_app, lambda: any_app.ledger.append_event(RUN, event), ReservedFactError, "reserved_fact"
    )
    assert error.detail == {"eventId": event["id"], "fact": fact}
    refused(
        any_app,
        lambda: any_app.ledger.append_events(RUN, [EV.text(event_id="m1"), event]),
        ReservedFactError,
        "reserved_fact",
    )


# -- generic path: the prospective transition validator -------------------------------------------


def test_late_protocol_marker_is_refused(any_app: RuntimeApplication) -> None:
    """The marker is valid only on the run's first event: a later one is
    ``protocol_marker_invalid`` (also on a non-user event), nothing written."""
    open_run(any_app)
    late_user = EV.user(event_id="user-2", marker=True)
    late_text = {
        **EV.text(event_id="m1"),
        "actions": {"runtimeProtocol": {"toolBoundary": T1_PROTOCOL}},
    }
    for event in (late_user, late_text):
        error = refused(
            any_app,
            partial(any_app.ledger.append_event, RUN, event),
            ToolLedgerRejectionError,
            "protocol_marker_invalid",
        )
        assert error.detail == {"eventId": event["id"], "issueCode": "protocol_marker_invalid"}


def test_unknown_first_marker_is_refused(store_app: RuntimeApplication) -> None:
    """An unknown ``toolBoundary`` value on the first event is ``protocol_marker_invalid``; the
    run stays empty and can then start with the valid marker or with none (legacy)."""
    store_app.open_session(SPINE.session_id, "/workspace")
    store_app.ledger.create_run(run_header(SPINE))
    refused(
        store_app,
        lambda: store_app.ledger.append_event(RUN, EV.user(marker="t1_after_preflight_v2")),
        ToolLedgerRejectionError,
        "protocol_marker_invalid",
    )
    assert store_app.read_run_events(RUN) == []
    store_app.ledger.append_event(RUN, EV.user(marker=T1_PROTOCOL))
    assert store_app.tool_journal.resolve_run(RUN).tool_boundary_protocol == T1_PROTOCOL


def _generic_issue_ledgers() -> list[Any]:
    return [
        pytest.param(
            [EV.call("c1", "Write", WRITE_ARGS)],
            EV.call("c1", "Write", WRITE_ARGS, event_id="call-c1-dup"),
            "duplicate_call",
            id="duplicate-call",
        ),
        pytest.param([], EV.refusal("c9", "Write"), "orphan_response", id="orphan-response"),
        pytest.param(
            [EV.call("c1", "Write", WRITE_ARGS), EV.refusal("c1", "Write")],
            EV.refusal("c1", "Write", event_id="refusal-c1-dup"),
            "duplicate_response",
            id="duplicate-response",
        ),
        pytest.param(
            [EV.call("c1", "Write", WRITE_ARGS)],
            EV.refusal("c1", "Edit"),
            "identity_conflict",
            id="response-name-mismatch",
        ),
    ]


@pytest.mark.parametrize(("history", "candidate", "code"), _generic_issue_ledgers())
def test_generic_tool_events_that_would_corrupt_the_ledger_are_refused(
    any_app: RuntimeApplication,
    history: list[dict[str, Any]],
    candidate: dict[str, Any],
    code: str,
) -> None:
    """Tool-bearing generic appends pass the prospective resolver: an event that would
    introduce an issue is ``ToolLedgerRejectionError`` whose code is the issue code."""
    open_run(any_app)
    if history:
        any_app.ledger.append_events(RUN, history)
    error = refused(
        any_app, lambda: any_app.ledger.append_event(RUN, candidate), ToolLedgerRejectionError, code
    )
    assert error.detail == {"eventId": candidate["id"], "issueCode": code}
    assert any_app.tool_journal.resolve_run(RUN).issues == ()


def test_generic_call_for_a_t1_call_id_is_duplicate_call(any_app: RuntimeApplication) -> None:
    """After T1 the provider call id is taken: another call with it is ``duplicate_call``."""
    open_run(any_app)
    any_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    refused(
        any_app,
        lambda: any_app.ledger.append_event(
            RUN, EV.call("c1", "Write", WRITE_ARGS, event_id="call-c1-late")
        ),
        ToolLedgerRejectionError,
        "duplicate_call",
    )


def test_unbound_generic_response_after_t1_is_refused(any_app: RuntimeApplication) -> None:
    """A dispatched operation is settled only through T2: a generic (unbound) response for it
    is ``identity_conflict``; the bound one is ``reserved_fact``."""
    open_run(any_app)
    any_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    refused(
        any_app,
        lambda: any_app.ledger.append_event(RUN, EV.refusal("c1", "Write")),
        ToolLedgerRejectionError,
        "identity_conflict",
    )
    refused(
        any_app,
        lambda: any_app.ledger.append_event(RUN, EV.bound_response("c1", "Write", "ok")),
        ReservedFactError,
        "reserved_fact",
    )


def test_pre_t1_synthetic_pair_on_the_generic_lane_is_accepted(
    store_app: RuntimeApplication,
) -> None:
    """A pre-T1 refusal commits call + synthetic error response on the generic lane (no
    dispatch, no operationId): resolver ``completed / matching_response / pre_t1_synthetic``,
    no journal operation (it never crossed T1), the plan may replay it."""
    open_run(store_app)
    result = store_app.ledger.append_events(
        RUN, [EV.call("c1", "Write", WRITE_ARGS), EV.refusal("c1", "Write")]
    )
    assert (result.appended, result.retried) == (2, 0)
    (decision,) = store_app.tool_journal.resolve_run(RUN).decisions
    assert (decision.status, decision.reason, decision.settlement_origin) == (
        "completed",
        "matching_response",
        "pre_t1_synthetic",
    )
    assert (decision.operation_id, decision.dispatch_runtime_event_id) == (None, None)
    assert decision.response_is_error is True
    assert expected_journal_state(decision) is None
    assert store_app.tool_journal.tool_operations(RUN) == ()
    assert store_app.tool_journal.resolve_run(RUN).has_corruption is False
    assert store_app.plan_resume(RUN).disposition == "safe_replay"


def test_t1_after_a_pre_t1_synthetic_response_is_refused(store_app: RuntimeApplication) -> None:
    """Once a call was settled by a pre-T1 refusal, T1 for it would put a dispatch after the
    response: ``event_order_conflict``, nothing written, no operation."""
    open_run(store_app)
    store_app.ledger.append_events(
        RUN, [EV.call("c1", "Write", WRITE_ARGS), EV.refusal("c1", "Write")]
    )
    error = refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_prepared(
            RUN, EV.call("c1", "Write", WRITE_ARGS)
        ),
        ToolLedgerRejectionError,
        "event_order_conflict",
    )
    assert error.detail["eventId"] == SPINE.fact_id("c1", "dispatch")
    assert store_app.tool_journal.tool_operations(RUN) == ()


# -- fail-stop on a corrupt ledger ----------------------------------------------------------------


@pytest.fixture
def corrupt_app(store_app: RuntimeApplication) -> RuntimeApplication:
    """r1 with c1 settled by T2, c2 prepared (mode reconcile), c3 settled by a completed
    bundle, then a duplicate call of c1 saved by an "older writer" that bypassed validation:
    the ledger now holds a ``duplicate_call`` resolver issue."""
    open_run(store_app)
    store_app.tool_journal.commit_tool_prepared(RUN, EV.call("c1", "Write", WRITE_ARGS))
    store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))
    store_app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c2", "Write", WRITE_ARGS), recovery_mode="reconcile"
    )
    store_app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c3", "Write", WRITE_ARGS), recovery_mode="reconcile"
    )
    store_app.tool_journal.commit_tool_recovery_bundle(
        RUN, SPINE.operation_id("c3"), **EV.completed_bundle("c3", "Write", "ok")
    )
    save_unvalidated(
        store_app, EV.call("c1", "Write", WRITE_ARGS, event_id="legacy-duplicate-call")
    )
    assert [(i.code, i.event_id) for i in store_app.tool_journal.resolve_run(RUN).issues] == [
        ("duplicate_call", "legacy-duplicate-call")
    ]
    return store_app


def _tool_writes(app: RuntimeApplication) -> list[tuple[str, Callable[[], object]]]:
    return [
        ("generic call", lambda: app.ledger.append_event(RUN, EV.call("c4", "Write", WRITE_ARGS))),
        (
            "generic pre-T1 pair",
            lambda: app.ledger.append_events(
                RUN, [EV.call("c5", "Write", WRITE_ARGS), EV.refusal("c5", "Write")]
            ),
        ),
        (
            "T1",
            lambda: app.tool_journal.commit_tool_prepared(RUN, EV.call("c6", "Write", WRITE_ARGS)),
        ),
        (
            "T2",
            lambda: app.tool_journal.commit_tool_outcome(
                RUN, EV.bound_response("c2", "Write", "ok")
            ),
        ),
        (
            "bundle",
            lambda: app.tool_journal.commit_tool_recovery_bundle(
                RUN, SPINE.operation_id("c2"), **EV.completed_bundle("c2", "Write", "ok")
            ),
        ),
    ]


def test_corrupt_ledger_fail_stops_tool_writes_but_not_ordinary_ones(
    corrupt_app: RuntimeApplication, store_url: str
) -> None:
    """With a resolver issue already in the ledger every tool-bearing write (generic call,
    generic pre-T1 pair, T1, T2, bundle) is ``tool_ledger_corruption`` naming the issue, and
    writes nothing; an ordinary text event is still accepted. Same after reopening. (The
    fail-stop is per run here, ADR 0007; the reference is per workspace.)"""
    for name, write in _tool_writes(corrupt_app):
        error = refused(corrupt_app, write, ToolLedgerCorruptionError, "tool_ledger_corruption")
        assert error.detail == {
            "issueCode": "duplicate_call",
            "eventId": "legacy-duplicate-call",
        }, name
    assert corrupt_app.ledger.append_event(RUN, EV.text(event_id="m1")).appended == 1

    with RuntimeApplication.open(store_url) as reopened:
        for _, write in _tool_writes(reopened):
            refused(reopened, write, ToolLedgerCorruptionError, "tool_ledger_corruption")
        assert reopened.ledger.append_event(RUN, EV.text(event_id="m2")).appended == 1


# reference suite recovery-persistence-authority: exact T1/T2/recovery retries fail on a corrupt
# ledger


def test_exact_t1_retry_on_a_corrupt_ledger_is_refused(corrupt_app: RuntimeApplication) -> None:
    """An exact T1 retry on a ledger with a resolver issue is ``tool_ledger_corruption``."""
    refused(
        corrupt_app,
        lambda: corrupt_app.tool_journal.commit_tool_prepared(
            RUN, EV.call("c1", "Write", WRITE_ARGS)
        ),
        ToolLedgerCorruptionError,
        "tool_ledger_corruption",
    )


def test_exact_t2_retry_on_a_corrupt_ledger_is_refused(corrupt_app: RuntimeApplication) -> None:
    """An exact T2 retry on a ledger with a resolver issue is ``tool_ledger_corruption``."""
    refused(
        corrupt_app,
        lambda: corrupt_app.tool_journal.commit_tool_outcome(
            RUN, EV.bound_response("c1", "Write", "ok")
        ),
        ToolLedgerCorruptionError,
        "tool_ledger_corruption",
    )


def test_exact_bundle_retry_on_a_corrupt_ledger_is_refused(
    corrupt_app: RuntimeApplication,
) -> None:
    """An exact recovery-bundle retry on a ledger with a resolver issue is
    ``tool_ledger_corruption``."""
    refused(
        corrupt_app,
        lambda: corrupt_app.tool_journal.commit_tool_recovery_bundle(
            RUN, SPINE.operation_id("c3"), **EV.completed_bundle("c3", "Write", "ok")
        ),
        ToolLedgerCorruptionError,
        "tool_ledger_corruption",
    )


# -- incremental cost -----------------------------------------------------------------------------


class _Counters:
    def __init__(self) -> None:
        self.steps = 0
        self.rows = 0

    def reset(self) -> tuple[int, int]:
        taken = (self.steps, self.rows)
        self.steps = self.rows = 0
        return taken


@pytest.fixture
def counted_app(
    store_app: RuntimeApplication, monkeypatch: pytest.MonkeyPatch
) -> tuple[RuntimeApplication, _Counters]:
    """``store_app`` with two work counters: resolver scanner steps (``ResolverState._step``,
    prospective and committed) and stored event rows read back from the recorder."""
    counters = _Counters()
    step = ResolverState._step

    def counting_step(
        self: ResolverState, event: RuntimeEvent, verified: bool = False
    ) -> tuple[ResolverIssue, ...]:
        counters.steps += 1
        return step(self, event, verified)

    monkeypatch.setattr(ResolverState, "_step", counting_step)
    select = store_app._es.recorder.select_events

    def counting_select(*args: Any, **kwargs: Any) -> Any:
        rows = select(*args, **kwargs)
        counters.rows += len(rows)
        return rows

    monkeypatch.setattr(store_app._es.recorder, "select_events", counting_select)
    return store_app, counters


def test_validating_one_append_does_not_grow_with_history(
    counted_app: tuple[RuntimeApplication, _Counters],
) -> None:
    """Tool events are appended one command at a time through one app (cached, fast-forwarded
    Run aggregate). At histories of 50, 100 and 200 tool events the same probe commands (generic
    call, T1 claiming it, T2, generic pre-T1 pair) cost exactly the same number of resolver
    steps and stored rows read: a small constant, not proportional to history."""
    app, counters = counted_app

    def measure() -> tuple[int, int]:
        app.ledger.run_high_water(RUN)  # the next load folds this command's facts: count them here
        return counters.reset()

    open_run(app)
    probes: dict[int, list[tuple[int, int]]] = {}
    tool_events = 0
    n = 0
    for checkpoint in (50, 100, 200):
        while tool_events < checkpoint:
            n += 1
            call_id = f"h{n}"
            app.tool_journal.commit_tool_prepared(RUN, EV.call(call_id, "Write", WRITE_ARGS))
            app.tool_journal.commit_tool_outcome(RUN, EV.bound_response(call_id, "Write", "ok"))
            tool_events += 3  # call, dispatch, response
        app.ledger.run_high_water(RUN)  # fast-forward the cached Run before measuring
        counters.reset()
        costs = []
        probe = f"p{checkpoint}"
        app.ledger.append_event(RUN, EV.call(probe, "Write", WRITE_ARGS))
        costs.append(measure())
        app.tool_journal.commit_tool_prepared(RUN, EV.call(probe, "Write", WRITE_ARGS))
        costs.append(measure())
        app.tool_journal.commit_tool_outcome(RUN, EV.bound_response(probe, "Write", "ok"))
        costs.append(measure())
        app.ledger.append_events(
            RUN,
            [EV.call(f"q{checkpoint}", "Write", WRITE_ARGS), EV.refusal(f"q{checkpoint}", "Write")],
        )
        costs.append(measure())
        probes[checkpoint] = costs
        tool_events += 5

    assert probes[50] == probes[100] == probes[200], probes
    # steps: each new event is stepped once prospectively and once when folded after commit
    # (the claimed call of T1 is an exact retry: only the dispatch is new); rows: on SQLite
    # none, the cached aggregate folds this process's own committed facts from memory while
    # `data_version` shows no other connection has written (ADR 0026); on PostgreSQL, which
    # has no such proof, exactly the command's new facts are read back
    new_rows = (0, 0, 0, 0) if store_url_kind(app) == "sqlite" else (1, 1, 1, 2)
    assert probes[50] == [(2, rows) for rows in new_rows[:3]] + [(4, new_rows[3])], probes
    assert app.tool_journal.resolve_run(RUN).has_corruption is False


def store_url_kind(app: RuntimeApplication) -> str:
    """``sqlite`` or ``postgres``: which store ``app`` runs on."""
    module = app.env.get("PERSISTENCE_MODULE") or ""
    return "postgres" if "postgres" in module else "sqlite"
