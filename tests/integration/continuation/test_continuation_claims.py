"""Durable claims in planning (docs/reference/continuation.md#planner-steps, step 5, and
docs/reference/continuation.md#existing-claims) on a real SQLite store: a claim is checked against
the recomputed plan, its target's header and start must be exactly what the claim implies, the claim
records which writer started its target, and stores written before start kinds were recorded still
classify."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
    source_boundary,
)
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.errors import ContinuationStartConflictError
from maka_es.ledger.model.facts import (
    ContinuationStartRecorded,
    StartKind,
    bind_invocation,
    claim_stream_id,
)
from maka_es.ledger.model.run import Run
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import commit_unchecked, store_snapshot
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader, terminal_event

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
OTHER_DIGEST = "sha256:" + "e" * 64
TARGET = ContinuationTarget("i2", "r2", "t2")
CLAIMED_AT = 5000.0


def open_app(db: str) -> RuntimeApplication:
    counter = itertools.count(1)
    return RuntimeApplication.open(
        db,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=StaticHostInspector(
            HostObservation(
                workspace_identity=WORKSPACE,
                workspace_path="/workspace",
                background_operations_settled=True,
                available_tool_names=("Bash", "Read"),
            )
        ),
    )


@pytest.fixture
def app(store_url: str) -> Iterator[RuntimeApplication]:
    application = open_app(store_url)
    application.open_session("s1", "/workspace")
    failed_source(application)
    yield application
    application.close()


def failed_source(app: RuntimeApplication) -> None:
    ledger = LedgerBuilder(Spine(), prefix="r1-")
    app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
    ledger.user("fix the port")
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    app.ledger.append_events("r1", ledger.events)
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})


def real_boundary(app: RuntimeApplication) -> SourceBoundary:
    return source_boundary(build_composite_replay([app.read_run_events("r1")]))


def claimed_continuation(
    app: RuntimeApplication,
    *,
    boundary: SourceBoundary | None = None,
    header: dict[str, Any] | None = None,
    start: dict[str, Any] | None = None,
    kind: StartKind = "runtime_admission",
    record: tuple[str, StartKind] | None = ("r2-start", "runtime_admission"),
    projection_version: int = 1,
    end: str | None = "completed",
) -> str:
    """Write a claimed continuation r2 of r1 the way the executor does (one save), with the
    given deviations: ``boundary`` claimed, ``header`` fields changed after the claim fixed the
    claimed header, ``start`` changes to the start fact, ``record`` = the start record
    ``(event id, kind)`` (``None``: no record). Returns the claim id."""
    claimed = boundary or real_boundary(app)
    claimed_header = continuation_header(
        app.get_run_header("r1"),
        claimed,
        TARGET,
        workspace_identity=WORKSPACE,
        claimed_at=CLAIMED_AT,
    )
    actual_header = RunHeader.model_validate({**claimed_header.to_wire(), **(header or {})})
    start_event = continuation_start_event(
        claimed, TARGET, event_id="r2-start", ts=CLAIMED_AT, provenance=kind
    )
    if start:
        start_event = RuntimeEvent.model_validate({**start_event.to_wire(), **start})
    claim = ContinuationClaim.create(
        claimed, TARGET, "r2-start", CLAIMED_AT, target_run_header=claimed_header
    )
    facts: list[Any] = [
        claim.model_copy(update={"provider_projection_version": projection_version})
    ]
    if record is not None:
        event_id, start_kind = record
        facts.append(
            ContinuationStartRecorded(
                originator_id=claim_stream_id(claimed.claim_id),
                originator_version=2,
                claim_id=claimed.claim_id,
                start_event_id=event_id,
                start_kind=start_kind,
            )
        )
    facts += [
        app._store.load_run("r1").decide_seal(claimed.claim_id, sealed_at=CLAIMED_AT),
        *Run.create_continuation(actual_header, start_event, created_at=CLAIMED_AT),
        bind_invocation(actual_header),
        app.ledger.session_registration("s1", "r2", CLAIMED_AT),
    ]
    commit_unchecked(app, *facts)
    if end is not None:
        app.end_run(
            "r2",
            terminal_event(actual_header.spine, event_id="r2-terminal", ts=6000.0, status=end),
        )
    return claimed.claim_id


def reasons(app: RuntimeApplication) -> tuple[str, ...]:
    return tuple(app.plan_continuation("s1", "r1").rejection_reasons)


# -- the forge is faithful: a consistent claim classifies like an executed one ------------------


def _without_protocol_marker(app: RuntimeApplication) -> dict[str, Any]:
    start = continuation_start_event(real_boundary(app), TARGET, event_id="r2-start", ts=CLAIMED_AT)
    return {"actions": {"continuationStart": start.to_wire()["actions"]["continuationStart"]}}


@pytest.mark.parametrize("variant", ["admission", "admission_without_marker", "claim_repair"])
def test_a_consistent_claim_already_exists(app: RuntimeApplication, variant: str) -> None:
    """A runtime-admission start (with or without the protocol marker, continuation.md#start-fact)
    or a claim-repair start the claim records, and a terminal that matches its header."""
    if variant == "claim_repair":
        claimed_continuation(app, kind="claim_repair", record=("r2-start", "claim_repair"))
    elif variant == "admission_without_marker":
        claimed_continuation(app, start=_without_protocol_marker(app))
    else:
        claimed_continuation(app)
    plan = app.plan_continuation("s1", "r1")
    assert plan.rejection_reasons == ("continuation_already_exists",)
    assert plan.diagnostics[0].detail == {"continuationRunId": "r2"}


def test_a_consistent_started_claim_is_indeterminate(app: RuntimeApplication) -> None:
    claim_id = claimed_continuation(app, end=None)
    plan = app.plan_continuation("s1", "r1")
    assert plan.rejection_reasons == ("continuation_started_indeterminate",)
    assert plan.diagnostics[0].detail == {"continuationRunId": "r2", "claimId": claim_id}


# -- issue 9 item 2: the claim is checked against the recomputed plan -------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"provider_replay_digest": OTHER_DIGEST},
        {"manifest_digest": OTHER_DIGEST},
        {"invocation_id": "i-other"},
    ],
    ids=["provider_replay_digest", "manifest_digest", "source_invocation"],
)
def test_a_claim_for_another_replay_needs_repair(
    app: RuntimeApplication, change: dict[str, Any]
) -> None:
    """Same claim id (session, run, high-water, prefix digest), but the claim's boundary or
    provider replay is not what planning recomputes: repair required, although the target
    itself ended consistently."""
    real = real_boundary(app)
    forged = dataclasses.replace(real, **change)
    assert forged.claim_id == real.claim_id
    claimed_continuation(app, boundary=forged)
    assert reasons(app) == ("continuation_claim_repair_required",)


def test_a_claim_for_another_projection_version_needs_repair(app: RuntimeApplication) -> None:
    claimed_continuation(app, projection_version=2)
    assert reasons(app) == ("continuation_claim_repair_required",)


# -- issue 9 item 3: existing-claim classification in full (continuation.md#existing-claims) --


def test_target_without_a_v2_source_needs_repair(app: RuntimeApplication) -> None:
    """The claimed target exists but its header does not name the claimed boundary."""
    boundary = real_boundary(app)
    commit_unchecked(app, ContinuationClaim.create(boundary, TARGET, "r2-start", CLAIMED_AT))
    app.ledger.create_run(run_header(Spine("s1", "i2", "r2", "t2"), workspaceIdentity=WORKSPACE))
    plan = app.plan_continuation("s1", "r1")
    assert plan.rejection_reasons == ("continuation_claim_repair_required",)
    assert plan.diagnostics[0].detail == {"continuationRunId": "r2", "claimId": boundary.claim_id}


def test_claim_without_a_target_needs_repair(app: RuntimeApplication) -> None:
    boundary = real_boundary(app)
    commit_unchecked(app, ContinuationClaim.create(boundary, TARGET, "r2-start", CLAIMED_AT))
    assert reasons(app) == ("continuation_claim_repair_required",)


@pytest.mark.parametrize(
    "deviation",
    [
        {"record": ("another-start", "runtime_admission")},  # first event is not the claimed start
        {"record": ("r2-start", "claim_repair")},  # provenance disagrees with the recorded kind
        {"start": {"ts": CLAIMED_AT - 1}},  # a start older than its claim
        {"header": {"modelId": "another-model"}},  # admission fields differ from the claimed header
        {"header": {"parentRunId": "r9"}},
    ],
    ids=["start_id", "start_kind", "start_ts", "header_model", "header_parent"],
)
def test_target_that_is_not_what_the_claim_implies_needs_repair(
    app: RuntimeApplication, deviation: dict[str, Any]
) -> None:
    claimed_continuation(app, **deviation)
    assert reasons(app) == ("continuation_claim_repair_required",)


def test_start_payload_must_equal_what_the_claim_implies(app: RuntimeApplication) -> None:
    start = continuation_start_event(
        real_boundary(app), TARGET, event_id="r2-start", ts=CLAIMED_AT
    ).to_wire()
    start["actions"]["continuationStart"]["replayManifestDigest"] = OTHER_DIGEST
    start["actions"]["continuationStart"]["boundaryDigest"] = OTHER_DIGEST
    claimed_continuation(app, start={"actions": start["actions"]})
    assert reasons(app) == ("continuation_claim_repair_required",)


def test_executor_records_runtime_admission_with_the_claim(app: RuntimeApplication) -> None:
    plan = app.plan_continuation("s1")
    assert plan.continuation is not None
    app.execute_continuation(plan, ScriptedProvider([ProviderTurn(outputs=())]))
    claim = app.claims.get_claim(plan.continuation.claim_id or "")
    assert claim is not None
    assert (claim.start_kind, claim.start_event_id) == ("runtime_admission", "new-2-start")
    assert claim.target_run_header is not None
    assert claim.target_run_header.run_id == "new-2"
    assert [c.start_kind for c in app.claims.all_claims()] == ["runtime_admission"]


def test_recording_a_start_kind_is_once_and_must_match_the_start(
    app: RuntimeApplication,
) -> None:
    """The command recovery calls: refused (typed, nothing written) when the claim already
    recorded a start, or when the start's provenance is not the kind being recorded."""
    boundary = real_boundary(app)
    commit_unchecked(app, ContinuationClaim.create(boundary, TARGET, "r2-start", CLAIMED_AT))
    repair = continuation_start_event(
        boundary, TARGET, event_id="repair-start", ts=CLAIMED_AT, provenance="claim_repair"
    )
    before = store_snapshot(app).rows
    with pytest.raises(ContinuationStartConflictError):
        app.claims.continuation_start_record(
            boundary.claim_id, repair, start_kind="runtime_admission"
        )
    with pytest.raises(ContinuationStartConflictError):
        app.claims.continuation_start_record("claim_missing", repair, start_kind="claim_repair")
    assert store_snapshot(app).rows == before
    commit_unchecked(
        app,
        app.claims.continuation_start_record(boundary.claim_id, repair, start_kind="claim_repair"),
    )
    claim = app.claims.get_claim(boundary.claim_id)
    assert claim is not None
    assert (claim.start_kind, claim.start_event_id) == ("claim_repair", "repair-start")
    after = store_snapshot(app).rows
    with pytest.raises(ContinuationStartConflictError):
        app.claims.continuation_start_record(boundary.claim_id, repair, start_kind="claim_repair")
    assert store_snapshot(app).rows == after


# -- stores written before start kinds were recorded -------------------------------------------


def _strip_to_legacy_claim(db: str) -> None:
    """Rewrite the file as the previous version wrote it: the claim row without
    ``provider_projection_version`` / ``target_run_header``, and no start record."""
    connection = sqlite3.connect(db)
    with connection:
        rows = connection.execute(
            "SELECT rowid, topic, state FROM stored_events WHERE topic LIKE 'maka_es.claim.%'"
        ).fetchall()
        assert sorted(topic for _, topic, _ in rows) == [
            "maka_es.claim.claimed.v1",
            "maka_es.claim.start_recorded.v1",
        ]
        for rowid, topic, state in rows:
            if topic == "maka_es.claim.start_recorded.v1":
                connection.execute("DELETE FROM stored_events WHERE rowid = ?", (rowid,))
                continue
            data = json.loads(state)
            del data["provider_projection_version"], data["target_run_header"]
            legacy = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
            connection.execute(
                "UPDATE stored_events SET state = ? WHERE rowid = ?", (legacy, rowid)
            )
    connection.close()


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # SQLite file specifics
def test_a_legacy_claim_still_loads_and_classifies(store_url: str) -> None:
    with open_app(store_url) as app:
        app.open_session("s1", "/workspace")
        failed_source(app)
        plan = app.plan_continuation("s1")
        app.execute_continuation(plan, ScriptedProvider([ProviderTurn(outputs=())]))
    _strip_to_legacy_claim(store_url)
    with open_app(store_url) as app:
        [claim] = app.claims.all_claims()
        assert (claim.start_kind, claim.target_run_header, claim.provider_projection_version) == (
            None,
            None,
            1,
        )
        assert claim.expected_start() == ("new-2-start", "runtime_admission")
        assert reasons(app) == ("continuation_already_exists",)
        assert app.recover().repairs == ()
