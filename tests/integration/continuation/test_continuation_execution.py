"""Continuation execution on a real SQLite store: the happy path, every revalidation code
(refused before anything is written and before the provider is called), provider failure,
telemetry privacy, the crash-continue chain, and startup recovery."""

from __future__ import annotations

import itertools
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from maka_es.adapters.event_store import EventSourcedRunStore
from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import ContinuationClaim, ContinuationTarget, SourceBoundary
from maka_es.continuation.executor import ContinuationRevalidationError
from maka_es.continuation.host import HostObservation
from maka_es.continuation.model.plan import ContinuationPlan, WorkspaceCheckpoint
from maka_es.errors import RunSealedError
from maka_es.ledger.model.facts import RuntimeEventRecorded, run_stream_id
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.telemetry import (
    LoggingTelemetrySink,
    RecordingTelemetrySink,
    Telemetry,
    TelemetrySink,
)
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import commit_unchecked, store_snapshot
from maka_es.wire.codec import canonical_json
from tests.support.restart import Restart

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
CANARY = "CANARY-SECRET-7f3a9c"


class MutableInspector:
    def __init__(self) -> None:
        self.observation = HostObservation(
            workspace_identity=WORKSPACE,
            workspace_path="/workspace",
            background_operations_settled=True,
            available_tool_names=("Bash", "Read"),
        )

    def inspect(self, session_id: str, cwd: str) -> HostObservation:
        return self.observation

    def change(self, **changes: Any) -> None:
        self.observation = self.observation.model_copy(update=changes)


class Env:
    def __init__(self, db: str) -> None:
        self.db = db
        self.inspector = MutableInspector()
        self.sink = RecordingTelemetrySink()
        counter = itertools.count(1)
        self.app = RuntimeApplication.open(
            db,
            env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
            id_factory=lambda: f"new-{next(counter)}",
            host_inspector=self.inspector,
            telemetry=Telemetry([self.sink, LoggingTelemetrySink()]),
        )

    def failed_source(self, spine: Spine, *, text: str = "fix the port") -> LedgerBuilder:
        return failed_source(self.app, spine, text=text)


def failed_source(
    app: RuntimeApplication, spine: Spine, *, text: str = "fix the port"
) -> LedgerBuilder:
    """A session-inline run that committed user -> call -> result and then failed."""
    ledger = LedgerBuilder(spine, prefix=f"{spine.run_id}-")
    app.ledger.create_run(run_header(spine, workspaceIdentity=WORKSPACE))
    ledger.user(text)
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    app.ledger.append_events(spine.run_id, ledger.events)
    app.ledger.update_run_header(
        spine.run_id, {"status": "failed", "failureClass": "provider_error"}
    )
    return ledger


@pytest.fixture
def env(store_url: str) -> Iterator[Env]:
    environment = Env(store_url)
    environment.app.open_session("s1", "/workspace")
    yield environment
    environment.app.close()


def text_turn(text: str = "resumed") -> ProviderTurn:
    return ProviderTurn(outputs=({"kind": "text", "text": text},))


def test_continuation_executes_once_with_the_validated_replay(env: Env) -> None:
    source = env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    assert plan.continuation is not None
    provider = ScriptedProvider([text_turn()])

    outcome = env.app.execute_continuation(plan, provider)

    assert (outcome.status, outcome.target_run_id, outcome.outputs) == ("completed", "new-2", 1)
    (request,) = provider.requests
    assert [e.to_wire() for e in request.replay_context] == source.events
    users = [e for e in request.replay_context if e.role == "user"]
    assert len(users) == 1  # no new user event, no duplicate of the original one
    assert request.openai_messages()[0] == {"role": "user", "content": "fix the port"}
    header = env.app.get_run_header("new-2")
    assert (header.status, header.parent_run_id, header.parent_turn_id) == ("completed", "r1", "t1")
    assert header.continuation_source is not None
    events = env.app.read_run_events("new-2")
    start = events[0].actions.continuation_start if events[0].actions else None
    assert start is not None
    assert start.provenance == "runtime_admission"
    assert events[0].protocol_marker == "t1_after_preflight_v1"
    assert [e.id for e in events] == ["new-2-start", "new-2-out-1", "new-2-terminal"]
    claims = env.app.claims.all_claims()
    assert [c.target_run_id for c in claims] == ["new-2"]
    assert env.app._store.load_run("r1").sealed_by == claims[0].claim_id
    with pytest.raises(RunSealedError):
        env.app.ledger.append_event("r1", LedgerBuilder(Spine(), prefix="late-").text())
    assert [e.type for e in env.sink.events] == [
        "plan_approved",
        "execution_started",
        "execution_completed",
    ]
    replan = env.app.plan_continuation("s1", "r1")
    assert replan.rejection_reasons == ("continuation_already_exists",)


def test_provider_failure_is_committed_as_the_target_terminal(env: Env) -> None:
    class QuotaExceededError(Exception):
        code = "provider_quota_exceeded"

    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    outcome = env.app.execute_continuation(plan, ScriptedProvider([QuotaExceededError("429")]))
    assert (outcome.status, outcome.error_class) == ("failed", "provider_quota_exceeded")
    header = env.app.get_run_header(outcome.target_run_id)
    assert (header.status, header.failure_class) == ("failed", "provider_quota_exceeded")
    assert env.app.read_run_events(outcome.target_run_id)[-1].status == "failed"
    failed = env.sink.events[-1].to_wire()
    assert failed == {
        "type": "execution_failed",
        "sessionId": "s1",
        "sourceRunId": "r1",
        "targetRunId": outcome.target_run_id,
        "errorClass": "provider_quota_exceeded",
    }


def _forged(plan: ContinuationPlan, **changes: Any) -> ContinuationPlan:
    assert plan.continuation is not None
    return plan.model_copy(update={"continuation": plan.continuation.model_copy(update=changes)})


def _refused(env: Env, plan: ContinuationPlan, code: str, **kw: Any) -> None:
    provider = ScriptedProvider([text_turn()])
    before = store_snapshot(env.app).rows
    with pytest.raises(ContinuationRevalidationError) as info:
        env.app.execute_continuation(plan, provider, **kw)
    assert info.value.code == code, info.value
    assert provider.requests == []  # the provider is never called
    assert store_snapshot(env.app).rows == before  # nothing was written


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (
            {"workspace_identity": "workspace:v1:00000000-0000-4000-8000-000000000000"},
            "workspace_identity_changed",
        ),
        ({"background_operations_settled": False}, "background_operation_started"),
        ({"available_tool_names": ("Bash",)}, "tool_catalog_changed"),
        ({"available_tool_names": ("Bash", "Read", "Write")}, "tool_catalog_changed"),
    ],
)
def test_host_facts_are_revalidated(env: Env, change: dict[str, Any], code: str) -> None:
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    env.inspector.change(**change)
    _refused(env, plan, code)


def test_checkpoint_is_revalidated(env: Env) -> None:
    env.failed_source(Spine())
    checkpoint = WorkspaceCheckpoint(
        ref="refs/maka/cp-1", restored=True, runtime_event_high_water=4
    )
    env.inspector.change(workspace_checkpoint=checkpoint)
    plan = env.app.plan_continuation("s1")
    assert plan.disposition == "continue", plan.diagnostics
    env.inspector.change(workspace_checkpoint=checkpoint.model_copy(update={"ref": "refs/other"}))
    _refused(env, plan, "workspace_checkpoint_changed")


def test_source_facts_are_revalidated(env: Env) -> None:
    env.failed_source(Spine())
    running = Spine("s1", "i3", "r3", "t3")
    plan = env.app.plan_continuation("s1")
    _refused(env, plan, "source_cwd_changed", current_cwd="/elsewhere")
    _refused(env, _forged(plan, source_turn_id="t-other"), "source_identity_changed")
    _refused(env, _forged(plan, source_runtime_event_high_water=3), "source_high_water_changed")
    _refused(env, _forged(plan, source_invocation_id="i-other"), "source_ledger_identity_changed")
    assert plan.continuation is not None
    trimmed = plan.continuation.runtime_context[:-1]
    _refused(env, _forged(plan, runtime_context=trimmed), "source_replay_changed")
    # a plan that names a source which is not terminal (e.g. forged or stale)
    env.app.ledger.create_run(run_header(running, workspaceIdentity=WORKSPACE))
    env.app.ledger.append_events("r3", [LedgerBuilder(running).user()])
    forged = _forged(
        plan,
        source_run_id="r3",
        source_turn_id="t3",
        source_invocation_id="i3",
        source_runtime_event_high_water=1,
    )
    _refused(env, forged, "source_terminal_changed")


def test_another_active_run_refuses(env: Env) -> None:
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    env.app.ledger.create_run(run_header(Spine("s1", "i9", "r9", "t9")))  # running
    _refused(env, plan, "continuation_run_active")


@pytest.mark.parametrize("status", ["created", "running", "waiting_for_user"])
def test_any_non_terminal_run_of_the_session_is_live(env: Env, status: str) -> None:
    """ADR 0015: maka_es refuses with the typed ``continuation_run_active`` (the reference
    throws an uncoded error) and counts any non-terminal run header of the session as live,
    checked before anything else is re-read."""
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    env.app.ledger.create_run(run_header(Spine("s1", "i9", "r9", "t9"), status=status))
    _grow_source(env.app)  # would be source_identity_changed, but the live run comes first
    provider = ScriptedProvider([text_turn()])
    with pytest.raises(ContinuationRevalidationError) as info:
        env.app.execute_continuation(plan, provider)
    assert info.value.code == "continuation_run_active"
    assert info.value.detail == {"activeRunId": "r9"}
    assert provider.requests == []


def _grow_source(app: RuntimeApplication) -> None:
    """A writer that ignores the rules commits a 5th event to the failed source r1."""
    run = app._store.load_run("r1")
    event = LedgerBuilder(Spine(), prefix="late-").text("appended after the plan")
    commit_unchecked(
        app,
        RuntimeEventRecorded(
            originator_id=run_stream_id("r1"),
            originator_version=run.version + 1,
            event_seq=run.high_water + 1,
            event_id=event["id"],
            payload=canonical_json(event),
            committed_at=9000.0,
        ),
    )


def test_a_source_that_grew_is_an_identity_change(env: Env) -> None:
    """The boundary is re-read before the header checks (continuation.md#revalidation), so a source
    that grew past the planned high-water is ``source_identity_changed``, not a high-water
    change."""
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    _grow_source(env.app)
    assert env.app.ledger.run_high_water("r1") == 5
    _refused(env, plan, "source_identity_changed")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # SQLite file specifics
def test_a_rewritten_prefix_is_an_identity_change(env: Env) -> None:
    """An event of the planned prefix was rewritten in the file (same count, same identity):
    its prefix digest changed, so ``source_identity_changed``, before any replay comparison."""
    env.failed_source(Spine(), text="fix the port")
    plan = env.app.plan_continuation("s1")
    env.app.close()
    connection = sqlite3.connect(str(env.db))
    with connection:
        changed = connection.execute(
            "UPDATE stored_events "
            "SET state = CAST(replace(state, 'fix the port', 'rm -rf the port') AS BLOB) "
            "WHERE topic = 'maka_es.run.runtime_event_recorded.v1' "
            "AND instr(state, 'fix the port')"
        ).rowcount
    connection.close()
    assert changed == 1
    env.app = Env(env.db).app  # another process, reading the rewritten file
    env.app.host_inspector = env.inspector
    _refused(env, plan, "source_identity_changed")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"provider_replay_digest": "sha256:" + "e" * 64}, "source_replay_changed"),
        ({"provider_projection_version": 2}, "source_replay_changed"),
        ({"claim_id": "claim_" + "0" * 32}, "source_identity_changed"),
        ({"boundary": None}, "source_identity_changed"),
    ],
    ids=["provider_replay_digest", "projection_version", "claim_id", "no_boundary"],
)
def test_revalidation_compares_the_plan_digests(
    env: Env, change: dict[str, Any], code: str
) -> None:
    """Issue 9 item 6: not only the replay context; the plan's digests and claim id too."""
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    _refused(env, _forged(plan, **change), code)


def test_revalidation_compares_the_manifest_digest(env: Env) -> None:
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    assert plan.continuation is not None
    assert plan.continuation.boundary is not None
    boundary = plan.continuation.boundary.model_copy(
        update={"manifest_digest": "sha256:" + "e" * 64}
    )
    _refused(env, _forged(plan, boundary=boundary), "source_replay_changed")


def test_claims_and_targets_are_unique(env: Env) -> None:
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    env.app.execute_continuation(plan, ScriptedProvider([text_turn()]))
    _refused(env, plan, "continuation_claim_conflict")  # the same boundary twice

    other = Spine("s1", "i5", "r5", "t5")
    env.failed_source(other, text="second task")
    plan5 = env.app.plan_continuation("s1", "r5")
    assert plan5.disposition == "continue", plan5.diagnostics
    _refused(env, _forged(plan5, run_id="r1"), "target_run_conflict")


def test_a_parked_plan_cannot_be_executed(env: Env) -> None:
    plan = env.app.plan_continuation("s1")
    assert plan.disposition == "park"
    _refused(env, plan, "continuation_not_approved")


def test_telemetry_never_carries_prompts_args_or_results(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    spine = Spine()
    ledger = LedgerBuilder(spine, prefix="r1-")
    env.app.ledger.create_run(run_header(spine, workspaceIdentity=WORKSPACE))
    ledger.user(f"my password is {CANARY}")
    ledger.call("c1", "Bash", {"command": f"echo {CANARY}"})
    ledger.response("c1", "Bash", {"kind": "text", "text": CANARY})
    ledger.terminal("failed")
    env.app.ledger.append_events("r1", ledger.events)
    env.app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})

    class BoomError(Exception):
        pass

    plan = env.app.plan_continuation("s1")
    env.app.execute_continuation(
        plan, ScriptedProvider([BoomError(f"provider echoed {CANARY}")]), system_prompt=CANARY
    )
    env.app.plan_continuation("s1", "missing-run")
    dumped = repr([event.to_wire() for event in env.sink.events])
    assert CANARY not in dumped
    assert {e.type for e in env.sink.events} >= {"plan_approved", "execution_failed", "plan_parked"}
    for record in caplog.records:
        assert CANARY not in record.getMessage()
        assert CANARY not in repr(record.__dict__)


def _run_with_sinks(path: Path, sinks: list[TelemetrySink]) -> tuple[Any, Any, list[str]]:
    counter = itertools.count(1)
    app = RuntimeApplication.open(
        str(path),
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=MutableInspector(),
        telemetry=Telemetry(sinks),
    )
    with app:
        app.open_session("s1", "/workspace")
        failed_source(app, Spine())
        plan = app.plan_continuation("s1")
        outcome = app.execute_continuation(plan, ScriptedProvider([text_turn()]))
        return plan.model_dump(mode="json"), outcome, app.ledger.read_run_payloads("new-2")


def test_a_raising_sink_changes_nothing(tmp_path: Path) -> None:
    class Raising:
        def emit(self, event: Any) -> None:
            raise RuntimeError("sink down")

    recording = RecordingTelemetrySink()
    quiet = _run_with_sinks(tmp_path / "a.sqlite", [RecordingTelemetrySink()])
    noisy = _run_with_sinks(tmp_path / "b.sqlite", [Raising(), recording])
    assert quiet[0] == noisy[0]
    assert quiet[1] == noisy[1]
    assert len(quiet[2]) == len(noisy[2])
    assert [e.type for e in recording.events] == [
        "plan_approved",
        "execution_started",
        "execution_completed",
    ]


def test_crash_continue_chain_keeps_one_user_message(env: Env) -> None:
    """crash -> continue (provider fails) -> continue (fails) -> continue (succeeds): every
    provider request carries the original user message exactly once."""
    env.failed_source(Spine(), text="the one and only request")
    requests = []
    for turn in (RuntimeError("crash 1"), RuntimeError("crash 2"), text_turn("finally")):
        plan = env.app.plan_continuation("s1")
        assert plan.disposition == "continue", plan.rejection_reasons
        provider = ScriptedProvider([turn])
        env.app.execute_continuation(plan, provider)
        requests.extend(provider.requests)
    assert len(requests) == 3
    for request in requests:
        users = [e for e in request.replay_context if e.role == "user"]
        assert [u.content.text for u in users if u.content is not None] == [  # type: ignore[union-attr]
            "the one and only request"
        ]
        anthropic = request.anthropic_messages()
        assert anthropic[0]["role"] == "user"
    # the last continuation completed: nothing is left to resume
    final = env.app.plan_continuation("s1")
    assert final.disposition == "park"


# -- startup recovery ------------------------------------------------------------------------


def test_recovery_repairs_headers_and_missing_terminals(restart: Restart, env: Env) -> None:
    lagging = Spine("s1", "i1", "r1", "t1")
    ledger = LedgerBuilder(lagging)
    env.app.ledger.create_run(run_header(lagging))
    ledger.user()
    ledger.terminal("failed")
    env.app.ledger.append_events("r1", ledger.events)  # terminal event, header still running

    interrupted = Spine("s1", "i2", "r2", "t2")
    ledger2 = LedgerBuilder(interrupted, prefix="x")
    env.app.ledger.create_run(run_header(interrupted))
    ledger2.user()
    ledger2.call("c1", "Bash")
    env.app.ledger.append_events("r2", ledger2.events)

    finished = Spine("s1", "i3", "r3", "t3")
    ledger3 = LedgerBuilder(finished, prefix="y")
    env.app.ledger.create_run(run_header(finished))
    ledger3.user()
    ledger3.terminal("completed")
    env.app.ledger.append_events("r3", ledger3.events)
    env.app.ledger.update_run_header("r3", {"status": "completed"})

    report = restart(env.app).recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [
        ("r1", "header_repaired"),
        ("r2", "terminal_recovered"),
    ]
    assert env.app.get_run_header("r1").status == "failed"
    header2 = env.app.get_run_header("r2")
    assert (header2.status, header2.failure_class) == ("failed", "app_restarted")
    terminal = env.app.read_run_events("r2")[-1]
    assert terminal.actions is not None
    assert terminal.actions.state_delta is not None
    assert terminal.actions.state_delta["recoveryReason"] == "tool_interrupted"
    before = store_snapshot(env.app).rows
    assert restart(env.app).recover().repairs == ()  # re-running recovery changes nothing
    assert store_snapshot(env.app).rows == before
    # the interrupted tool call is still not replayable
    assert env.app.plan_resume("r2").disposition == "blocked"


def test_recovery_touches_only_runs_needing_attention(
    restart: Restart, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(1, 9):
        spine = Spine("s1", f"i{n}", f"r{n}", f"t{n}")
        ledger = LedgerBuilder(spine, prefix=f"r{n}-")
        env.app.ledger.create_run(run_header(spine))
        ledger.user()
        if n != 5:
            ledger.terminal("completed")
        env.app.ledger.append_events(spine.run_id, ledger.events)
        if n != 5:
            env.app.ledger.update_run_header(spine.run_id, {"status": "completed"})
    env.app.recovery_status.catch_up()
    loaded: list[str] = []
    original = EventSourcedRunStore.load_run

    def counting(self: EventSourcedRunStore, run_id: str) -> Any:
        loaded.append(run_id)
        return original(self, run_id)

    monkeypatch.setattr(EventSourcedRunStore, "load_run", counting)
    report = restart(env.app).recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [("r5", "terminal_recovered")]
    assert set(loaded) == {"r5"}


def test_claim_without_a_started_target_is_repaired_without_the_provider(env: Env) -> None:
    """A claim whose target never started (e.g. written by a two-step claimer) gets the
    deterministic claim_repair start and the failed terminal; planning then sees an ended
    continuation."""
    env.failed_source(Spine())
    events = env.app.read_run_events("r1")
    plan = env.app.plan_continuation("s1")
    assert plan.continuation is not None
    from maka_es.continuation.executor import ContinuationExecutor

    executor = ContinuationExecutor(
        env.app.claims, env.inspector, env.app.telemetry, env.app.tool_runtime
    )
    _, source, boundary, _ = executor.revalidate(plan.continuation, "s1", "/workspace")
    target = ContinuationTarget("new-1", "new-2", "new-3")
    commit_unchecked(
        env.app,
        ContinuationClaim.create(boundary, target, "never-written", 5000.0),
        source.decide_seal(boundary.claim_id, sealed_at=5000.0),
    )
    assert len(events) == 4
    replan = env.app.plan_continuation("s1", "r1")
    assert replan.rejection_reasons == ("continuation_claim_repair_required",)
    report = env.app.recover()
    assert [(r.run_id, r.kind) for r in report.repairs] == [("new-2", "claim_repaired")]
    header = env.app.get_run_header("new-2")
    assert (header.status, header.failure_class) == (
        "failed",
        "continuation_abandoned_before_provider_dispatch",
    )
    start = env.app.read_run_events("new-2")[0]
    assert start.id.startswith("continuation-repair-start-")
    assert start.actions is not None
    assert start.actions.continuation_start is not None
    assert start.actions.continuation_start.provenance == "claim_repair"
    assert start.protocol_marker is None  # a repair start does not declare the protocol
    assert env.app.plan_continuation("s1", "r1").rejection_reasons == (
        "continuation_already_exists",
    )
    assert env.app.recover().repairs == ()


def test_live_start_without_terminal_is_left_alone(restart: Restart, env: Env) -> None:
    """Under the reference's rule (``end_start_only_continuations=False``, ADR 0035)."""

    class Crash(BaseException):
        """The process dies while the provider is running."""

    class DyingProvider:
        def complete(self, request: Any) -> ProviderTurn:
            raise Crash()

    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    with pytest.raises(Crash):
        env.app.execute_continuation(plan, DyingProvider())
    assert env.app.plan_continuation("s1", "r1").rejection_reasons == (
        "continuation_started_indeterminate",
    )
    report = restart(env.app).recover(end_start_only_continuations=False)
    assert [(r.run_id, r.kind) for r in report.repairs] == [("new-2", "left_live_start")]
    assert env.app.get_run_header("new-2").status == "running"  # admitted: start committed
    assert env.app.plan_continuation("s1", "r1").rejection_reasons == (
        "continuation_started_indeterminate",
    )


def test_claim_ids_are_derived_from_the_boundary() -> None:
    """Every claimer of one boundary computes the same claim id; another boundary, another id."""
    digests = ("sha256:" + "a" * 64, "sha256:" + "b" * 64, "sha256:" + "c" * 64)
    first = SourceBoundary("s1", "i1", "r1", "t1", 4, *digests)
    again = SourceBoundary("s1", "i1", "r1", "t1", 4, *digests)
    later = SourceBoundary("s1", "i1", "r1", "t1", 5, *digests)
    assert first.claim_id == again.claim_id
    assert first.claim_id != later.claim_id
    assert first.claim_id.startswith("claim_")
    assert len(first.claim_id) == len("claim_") + 32


def test_a_parked_plan_reports_its_candidate_to_telemetry(env: Env) -> None:
    """Telemetry: ``plan_parked`` names the candidate run when there is one, '' otherwise."""
    env.app.plan_continuation("s1")  # no candidate yet
    spine = Spine()
    ledger = LedgerBuilder(spine, prefix="r1-")
    env.app.ledger.create_run(run_header(spine, workspaceIdentity=WORKSPACE))
    ledger.user()
    ledger.call("c1", "Bash")  # dangling: the plan parks
    ledger.terminal("failed")
    env.app.ledger.append_events("r1", ledger.events)
    env.app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    env.app.plan_continuation("s1")
    parked = [e.to_wire() for e in env.sink.events if e.type == "plan_parked"]
    assert [(p["sourceRunId"], p["rejectionReasons"]) for p in parked] == [
        ("", ["resume_candidate_missing"]),
        ("r1", ["runtime_ledger_unreadable"]),
    ]


def test_a_claim_that_lands_between_revalidation_and_admission_is_a_conflict_writing_nothing(
    env: Env,
) -> None:
    """Another host's claim commits after this process revalidated the source and before its
    own claim save, and a load in between advanced this process's cached source past that
    seal: the admission is refused ``continuation_claim_conflict`` and writes nothing (the
    guard in ``Claims.admit``; the store's uniqueness is the last line behind it)."""
    env.failed_source(Spine())
    plan = env.app.plan_continuation("s1")
    other = RuntimeApplication.open(
        env.db,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        id_factory=lambda: "other-1",
        host_inspector=env.inspector,
    )
    admit = env.app.claims.admit
    seen: dict[str, Any] = {}

    def other_host_claims_first(*args: Any, **kwargs: Any) -> Any:
        won = other.execute_continuation(
            other.plan_continuation("s1"), ScriptedProvider([text_turn()])
        )
        assert won.status == "completed"
        env.app._store.load_run("r1")  # a load in this process advances the cached source
        seen["before"] = store_snapshot(env.app).rows
        return admit(*args, **kwargs)

    env.app.claims.admit = other_host_claims_first  # type: ignore[method-assign]
    try:
        with pytest.raises(ContinuationRevalidationError) as lost:
            env.app.execute_continuation(plan, ScriptedProvider([text_turn()]))
    finally:
        other.close()
    assert lost.value.code == "continuation_claim_conflict"
    assert store_snapshot(env.app).rows == seen["before"]  # refused, nothing written
    assert [c.target_run_id for c in env.app.claims.all_claims()] == ["other-1"]
