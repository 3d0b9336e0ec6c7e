"""The continuation planner over a real SQLite store (pre-planner parks and planner steps of
docs/reference/continuation.md): pre-planner parks, candidate choice, lineage through earlier
continuations, digests, and that planning never writes."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import claim_id_for
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.continuation.model.boundary import build_segment, manifest_digest
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.continuation.service import PlannerSettings
from maka_es.errors import InvalidPlanRequestError
from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
FLAG = {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"}


def observation(**changes: Any) -> HostObservation:
    values: dict[str, Any] = {
        "workspace_identity": WORKSPACE,
        "workspace_path": "/workspace",
        "background_operations_settled": True,
        "available_tool_names": ("Bash", "Read"),
    }
    values.update(changes)
    return HostObservation(**values)


def open_app(db: str, *, flag: bool = True, inspector: Any = "default") -> RuntimeApplication:
    counter = itertools.count(1)
    return RuntimeApplication.open(
        db,
        env=FLAG if flag else {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "0"},
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=StaticHostInspector(observation()) if inspector == "default" else inspector,
    )


@pytest.fixture
def app(store_url: str) -> Iterator[RuntimeApplication]:
    application = open_app(store_url)
    application.open_session("s1", "/workspace")
    yield application
    application.close()


def failed_run(
    app: RuntimeApplication,
    spine: Spine,
    *,
    created_at: int = 1000,
    status: str = "failed",
    header: dict[str, Any] | None = None,
    body: Any = None,
) -> LedgerBuilder:
    """A session-inline run that committed user -> call -> result and then failed."""
    ledger = LedgerBuilder(spine, prefix=f"{spine.run_id}-")
    app.ledger.create_run(
        run_header(spine, createdAt=created_at, workspaceIdentity=WORKSPACE, **(header or {}))
    )
    if body is None:
        ledger.user("fix the port")
        ledger.call("c1", "Bash", {"command": "ls"})
        ledger.response("c1", "Bash")
    else:
        body(ledger)
    terminal_status = "aborted" if status == "cancelled" else "failed"
    ledger.terminal(terminal_status)
    if status == "cancelled":
        ledger.events[-1]["actions"]["stateDelta"] = {"abortSource": "user"}
    app.ledger.append_events(spine.run_id, ledger.events)
    patch: dict[str, Any] = {"status": status, "updatedAt": created_at + 1}
    if status == "failed":
        patch["failureClass"] = "provider_error"
    else:
        patch["abortSource"] = "user"
    app.ledger.update_run_header(spine.run_id, patch)
    return ledger


def continuation_of(
    app: RuntimeApplication, source: Spine, target: Spine, high_water: int, *, created_at: int
) -> LedgerBuilder:
    """A continuation run (V1 source, stateDelta start fact) that ran a tool and failed."""
    header = {
        "parentRunId": source.run_id,
        "parentTurnId": source.turn_id,
        "continuationSource": {
            "sourceInvocationId": source.invocation_id,
            "sourceRunId": source.run_id,
            "sourceTurnId": source.turn_id,
            "sourceRuntimeEventHighWater": high_water,
        },
    }

    def body(ledger: LedgerBuilder) -> None:
        ledger.state_delta_continuation_start(source=source, high_water=high_water, ts=5000)
        ledger.call(f"c-{target.run_id}", "Read", {"path": "a.txt"})
        ledger.response(f"c-{target.run_id}", "Read")
        ledger.text("interrupted thought")

    return failed_run(app, target, created_at=created_at, header=header, body=body)


def spine(n: int) -> Spine:
    return Spine("s1", f"i{n}", f"r{n}", f"t{n}")


# -- pre-planner parks (docs/reference/continuation.md#pre-planner) ------------------------


def test_feature_flag_must_be_exactly_one(store_url: str) -> None:
    with open_app(store_url, flag=False) as app:
        app.open_session("s1", "/workspace")
        failed_run(app, spine(1))
        plan = app.plan_continuation("s1")
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("resume_feature_disabled",)


def test_feature_flag_is_checked_before_the_session_is_read(store_url: str) -> None:
    """The flag is the first pre-planner park (docs/reference/continuation.md#pre-planner):
    with the flag off, an unknown session is ``resume_feature_disabled``, not
    ``resume_candidate_missing``, and nothing is read to find that out."""
    with open_app(store_url, flag=False) as app:
        plan = app.plan_continuation("no-such-session")
    assert plan.rejection_reasons == ("resume_feature_disabled",)


def test_no_candidate(app: RuntimeApplication) -> None:
    assert app.plan_continuation("s1").rejection_reasons == ("resume_candidate_missing",)
    app.ledger.create_run(run_header(spine(1), workspaceIdentity=WORKSPACE))  # running, not failed
    assert app.plan_continuation("s1").rejection_reasons == ("resume_candidate_missing",)
    assert app.plan_continuation("nope").rejection_reasons == ("resume_candidate_missing",)


def test_a_run_ended_before_its_first_user_message_is_no_candidate(
    app: RuntimeApplication,
) -> None:
    """The newest failed run holds only its terminal (ADR 0035): nothing to continue, and the
    older failed run is not taken instead; a source named explicitly still meets the gates."""
    failed_run(app, spine(1), created_at=1000)
    failed_run(app, spine(2), created_at=2000, body=lambda ledger: None)
    before = store_snapshot(app).rows
    plan = app.plan_continuation("s1")
    assert plan.rejection_reasons == ("resume_candidate_missing",)
    assert [d.detail for d in plan.diagnostics] == [{"sourceRunId": spine(2).run_id}]
    assert store_snapshot(app).rows == before
    assert app.plan_continuation("s1", spine(2).run_id).rejection_reasons == (
        "provider_resume_head_unsupported",
        "provider_resume_boundary_unsupported",
    )
    assert app.plan_continuation("s1", spine(1).run_id).disposition == "continue"


def test_candidate_is_the_newest_failed_or_cancelled_session_inline_run(
    app: RuntimeApplication,
) -> None:
    failed_run(app, spine(1), created_at=1000)
    failed_run(app, spine(2), created_at=3000, status="cancelled")
    failed_run(app, spine(3), created_at=2000)
    child = Spine("s1", "i4", "r4", "t4")
    app.ledger.create_run(
        run_header(child, createdAt=9000, parentRunId="r1", agentId="sub", status="running")
    )
    plan = app.plan_continuation("s1")
    assert plan.disposition == "continue", plan.diagnostics
    assert plan.continuation is not None
    assert plan.continuation.source_run_id == "r2"


def test_tie_on_created_at_picks_the_larger_run_id(app: RuntimeApplication) -> None:
    failed_run(app, spine(1), created_at=1000)
    failed_run(app, spine(2), created_at=1000)
    plan = app.plan_continuation("s1")
    assert plan.continuation is not None
    assert plan.continuation.source_run_id == "r2"


def test_no_inspector(store_url: str) -> None:
    with open_app(store_url, inspector=None) as app:
        app.open_session("s1", "/workspace")
        failed_run(app, spine(1))
        assert app.plan_continuation("s1").rejection_reasons == ("safety_observation_unavailable",)


def test_unreadable_source_and_missing_identity(app: RuntimeApplication) -> None:
    assert app.plan_continuation("s1", "ghost").rejection_reasons == ("source_run_unreadable",)
    ledger = LedgerBuilder(spine(1))
    app.ledger.create_run(run_header(spine(1)))  # no workspaceIdentity recorded
    ledger.user()
    ledger.terminal("failed")
    app.ledger.append_events("r1", ledger.events)
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    assert app.plan_continuation("s1").rejection_reasons == ("workspace_identity_missing",)


def test_inspector_failure_fails_closed(store_url: str) -> None:
    class Broken:
        def inspect(self, session_id: str, cwd: str) -> HostObservation:
            raise OSError("disk unplugged")

    with open_app(store_url, inspector=Broken()) as app:
        app.open_session("s1", "/workspace")
        failed_run(app, spine(1))
        plan = app.plan_continuation("s1")
    assert plan.rejection_reasons == ("safety_observation_unavailable",)
    assert plan.diagnostics[0].detail == {"errorClass": "OSError"}


# -- the planner -----------------------------------------------------------------------------


def test_fully_committed_boundary_continues_with_fresh_ids(app: RuntimeApplication) -> None:
    ledger = failed_run(app, spine(1))
    before = store_snapshot(app)
    plan = app.plan_continuation("s1")
    assert store_snapshot(app) == before  # planning never writes
    assert plan.disposition == "continue", plan.diagnostics
    continuation = plan.continuation
    assert continuation is not None
    assert (continuation.invocation_id, continuation.run_id, continuation.turn_id) == (
        "new-1",
        "new-2",
        "new-3",
    )
    assert (continuation.source_run_id, continuation.source_runtime_event_high_water) == ("r1", 4)
    assert [e.id for e in continuation.runtime_context] == [e["id"] for e in ledger.events]
    assert continuation.safety_snapshot.workspace_identity == WORKSPACE
    assert continuation.safety_snapshot.available_tool_names == ("Bash", "Read")


def test_running_header_is_terminal_repair_failed(app: RuntimeApplication) -> None:
    ledger = LedgerBuilder(spine(1))
    app.ledger.create_run(run_header(spine(1), workspaceIdentity=WORKSPACE))
    ledger.user()
    ledger.terminal("failed")
    app.ledger.append_events("r1", ledger.events)
    plan = app.plan_continuation("s1", "r1")
    assert "terminal_repair_failed" in plan.rejection_reasons


def test_dangling_tool_call_parks_as_unreadable_ledger(app: RuntimeApplication) -> None:
    def body(ledger: LedgerBuilder) -> None:
        ledger.user()
        ledger.call("c1", "Bash")

    failed_run(app, spine(1), body=body)
    plan = app.plan_continuation("s1")
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("runtime_ledger_unreadable",)


def test_host_facts_reach_the_gates(store_url: str) -> None:
    inspector = StaticHostInspector(
        observation(
            workspace_identity="workspace:v1:00000000-0000-4000-8000-000000000000",
            background_operations_settled=False,
            available_tool_names=("Read",),
        )
    )
    with open_app(store_url, inspector=inspector) as app:
        app.open_session("s1", "/workspace")
        failed_run(app, spine(1))
        plan = app.plan_continuation("s1", current_cwd="/elsewhere")
    assert plan.rejection_reasons == (
        "workspace_cwd_mismatch",
        "workspace_identity_mismatch",
        "background_operation_pending",
        "tool_catalog_mismatch",
    )


def test_relocatable_policy_accepts_a_moved_workspace(app: RuntimeApplication) -> None:
    failed_run(app, spine(1))
    plan = app.plan_continuation(
        "s1", current_cwd="/moved", settings=PlannerSettings(cwd_policy="relocatable")
    )
    assert plan.disposition == "continue"
    assert [d.code for d in plan.diagnostics] == ["workspace_location_changed"]


def _target(app: RuntimeApplication) -> LedgerBuilder:
    app.ledger.create_run(
        run_header(
            spine(2),
            parentRunId="r1",
            parentTurnId="t1",
            workspaceIdentity=WORKSPACE,
            continuationSource={
                "sourceInvocationId": "i1",
                "sourceRunId": "r1",
                "sourceTurnId": "t1",
                "sourceRuntimeEventHighWater": 4,
            },
        )
    )
    return LedgerBuilder(spine(2), prefix="r2-")


def _start(ledger: LedgerBuilder) -> dict[str, Any]:
    return ledger.state_delta_continuation_start(event_id="r2-start", ts=5000)


def test_unclaimed_continuation_already_exists_in_every_state(app: RuntimeApplication) -> None:
    """Planner step 6 (continuation.md#planner-steps): with no claim, a run whose continuationSource
    names this source run and high-water already continues it, whatever state it is in (created,
    started, ended, header lagging). Startup recovery cannot repair an unclaimed run, so it is never
    reported as ``continuation_claim_repair_required`` (issue 9 item 4)."""
    failed_run(app, spine(1))
    target = _target(app)

    def reasons() -> tuple[str, ...]:
        plan = app.plan_continuation("s1", "r1")
        assert plan.diagnostics[0].detail == {"continuationRunId": "r2"}
        return tuple(plan.rejection_reasons)

    assert reasons() == ("continuation_already_exists",)  # created, never started
    app.ledger.append_event("r2", _start(target))
    assert reasons() == ("continuation_already_exists",)  # started, no terminal
    app.ledger.append_event("r2", target.terminal("failed"))
    assert reasons() == ("continuation_already_exists",)  # terminal, header lagging
    app.ledger.update_run_header("r2", {"status": "failed", "failureClass": "provider_error"})
    assert reasons() == ("continuation_already_exists",)


def test_blocked_replay_parks_before_any_existing_continuation(app: RuntimeApplication) -> None:
    """Planner step 4 before steps 5-6 (continuation.md#planner-steps): a source whose dangling tool
    call blocks the replay is ``runtime_ledger_unreadable`` even when its boundary already has a
    finished child."""

    def body(ledger: LedgerBuilder) -> None:
        ledger.user()
        ledger.call("c1", "Bash")

    failed_run(app, spine(1), body=body)
    high_water = len(app.read_run_events("r1"))
    continuation_of(app, spine(1), spine(2), high_water, created_at=2000)
    plan = app.plan_continuation("s1", "r1")
    assert plan.rejection_reasons == ("runtime_ledger_unreadable",)
    assert plan.diagnostics[0].detail == {  # the unjournaled call has no operation id
        "segmentIndex": 0,
        "replayReason": "tool_recovery_unsettled",
        "operationId": None,
        "toolName": "Bash",
    }


# -- lineage ---------------------------------------------------------------------------------


def test_chain_replays_each_kept_prefix_once_with_one_user_message(app: RuntimeApplication) -> None:
    root = failed_run(app, spine(1), created_at=1000)
    previous, high_water = spine(1), len(root.events)
    chain = [root]
    for n in range(2, 6):
        ledger = continuation_of(app, previous, spine(n), high_water, created_at=1000 * n)
        chain.append(ledger)
        previous, high_water = spine(n), len(ledger.events)
    plan = app.plan_continuation("s1")
    assert plan.disposition == "continue", plan.diagnostics
    assert plan.continuation is not None
    context = [e.id for e in plan.continuation.runtime_context]
    users = [e for e in plan.continuation.runtime_context if e.role == "user"]
    assert [e.id for e in users] == ["r1-1"]  # exactly one copy of the original user message
    expected: list[str] = [e["id"] for e in chain[0].events]
    for ledger in chain[1:]:  # each segment once, its interrupted model text trimmed
        expected += [e["id"] for e in ledger.events if e.get("content", {}).get("kind") != "text"]
    assert context == expected


def test_cycle_missing_ancestor_and_identity(app: RuntimeApplication) -> None:
    failed_run(app, spine(1))
    # r2 continues r3 and r3 continues r2: a cycle
    continuation_of(app, spine(3), spine(2), 4, created_at=2000)
    continuation_of(app, spine(2), spine(3), 5, created_at=3000)
    assert app.plan_continuation("s1", "r3").rejection_reasons == ("runtime_lineage_cycle",)
    continuation_of(app, Spine("s1", "i9", "r9", "t9"), spine(4), 4, created_at=4000)
    assert app.plan_continuation("s1", "r4").rejection_reasons == ("runtime_lineage_missing",)
    continuation_of(app, spine(1), spine(5), 99, created_at=5000)  # beyond r1's high-water
    assert app.plan_continuation("s1", "r5").rejection_reasons == ("runtime_identity_mismatch",)


@pytest.mark.parametrize(("runs", "parks"), [(64, False), (65, True)])
def test_lineage_depth(app: RuntimeApplication, runs: int, parks: bool) -> None:
    root = failed_run(app, spine(1))
    previous, high_water = spine(1), len(root.events)
    for n in range(2, runs + 1):
        ledger = continuation_of(app, previous, spine(n), high_water, created_at=1000 + n)
        previous, high_water = spine(n), len(ledger.events)
    plan = app.plan_continuation("s1", f"r{runs}")
    if parks:
        assert plan.rejection_reasons == ("runtime_lineage_depth_exceeded",)
    else:
        assert plan.disposition == "continue", plan.diagnostics


# -- digests ---------------------------------------------------------------------------------


def test_store_boundary_reproduces_the_spec_vectors(app: RuntimeApplication) -> None:
    """docs/reference/wire.md#vectors: source [user "go", terminal failed] committed through the
    store."""
    vector = Spine("s1", "i1", "r1", "t1")
    app.ledger.create_run(run_header(vector, workspaceIdentity=WORKSPACE))
    at_1 = Events.wire(vector, ts=1)
    user = at_1.user("go", event_id="user")
    term = at_1.terminal("failed", event_id="term", error_code=None)
    app.ledger.append_events("r1", [user, term])
    events = app.read_run_events("r1")
    identity = {"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"}
    segment = build_segment(identity, [(i + 1, e.to_wire()) for i, e in enumerate(events)])
    assert segment["prefixDigest"] == (
        "sha256:0233d312baaacc040de803edaf225e284b75dac57bf5812640c96255f1dadf0c"
    )
    replay = build_composite_replay([events])
    assert (
        replay.manifest_digest
        == manifest_digest([segment])
        == ("sha256:1cc9ef1e56462052c17dfa2a88417e69540af89138444cf9d4ac508200e71a04")
    )
    assert replay.provider_replay_digest == (
        "sha256:b4e2ce82a65d97773350b596b375266bc5e72602b040426e6f590204835a9cac"
    )


# -- expected high-water and the HEAD plan object (issue 9 items 6, 7) ----------------------


def test_expected_high_water_is_checked_like_plan_resume(app: RuntimeApplication) -> None:
    failed_run(app, spine(1))  # 4 committed events
    assert app.plan_continuation("s1", expected_high_water=4).disposition == "continue"
    plan = app.plan_continuation("s1", expected_high_water=3)
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("runtime_offset_mismatch",)
    mismatch = next(d for d in plan.diagnostics if d.code == "runtime_offset_mismatch")
    assert mismatch.detail == {"expected": 3, "actual": 4}
    before = store_snapshot(app)
    for bad in (-1, True, 2.0, "4"):
        with pytest.raises(InvalidPlanRequestError):
            app.plan_continuation("s1", expected_high_water=bad)  # type: ignore[arg-type]
    assert store_snapshot(app) == before


def test_plan_carries_claim_id_boundary_and_provider_replay_digest(
    app: RuntimeApplication,
) -> None:
    """continuation.md#plan (HEAD): the plan names the claim it will make, the boundary cursor
    (every segment, oldest first, and the manifest digest) and the provider-replay digest."""
    root = failed_run(app, spine(1), created_at=1000)
    continuation_of(app, spine(1), spine(2), len(root.events), created_at=2000)
    plan = app.plan_continuation("s1")
    continuation = plan.continuation
    assert continuation is not None
    assert continuation.source_run_id == "r2"
    replay = build_composite_replay([app.read_run_events("r1"), app.read_run_events("r2")])
    boundary = continuation.boundary
    assert boundary is not None
    assert boundary.segments == tuple(s.boundary for s in replay.segments)
    identities = [s["identity"] for s in boundary.segments]
    assert [i["runId"] for i in identities if isinstance(i, dict)] == ["r1", "r2"]
    assert boundary.manifest_digest == replay.manifest_digest
    assert continuation.provider_replay_digest == replay.provider_replay_digest
    assert continuation.provider_projection_version == 1
    source = replay.segments[-1]
    assert continuation.claim_id == claim_id_for("s1", "r2", 5, source.prefix_digest)
    assert continuation.source_runtime_context == source.replay_runtime_events
    dumped = plan.model_dump(mode="json", by_alias=True)["continuation"]
    assert list(dumped) == [
        "invocationId",
        "runId",
        "turnId",
        "sourceInvocationId",
        "sourceRunId",
        "sourceTurnId",
        "sourceRuntimeEventHighWater",
        "claimId",
        "sourceRuntimeContext",
        "runtimeContext",
        "boundary",
        "providerReplayDigest",
        "providerProjectionVersion",
        "safetySnapshot",
    ]
    assert list(dumped["boundary"]) == ["protocol", "segments", "manifestDigest"]
    assert dumped["boundary"]["protocol"] == "runtime_boundary_cursor_v1"
    assert ContinuationPlan.model_validate_json(plan.model_dump_json(by_alias=True)) == plan
