"""An operator forks a run before an uncertain call (ADR 0022), on a real SQLite file.

The source: a ``never_auto_retry`` Send whose process died after T1, then sealed by startup
recovery as it did before ADR 0019's amendment of 2026-12-01 (today's recovery leaves such a
run awaiting the operator), so it can be neither attested nor continued. The fork continues
the prefix before the call; the source's committed events stay byte for byte as they were.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.errors import CodecInputError, MakaError, RunForkRefusedError
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.telemetry import RecordingTelemetrySink, RunForkedEvent, Telemetry
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from tests.support.old_recovery import seal_like_old_recovery
from tests.support.send_tool import Killed, send_tool

NOW = 1_700_000_000_000
LATER = NOW + 60_000  # the operator forks after the restart
IDENTITY = "workspace:v1:3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
SPINE = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")
OBSERVATION = HostObservation(
    workspace_identity=IDENTITY,
    background_operations_settled=True,
    available_tool_names=("Send",),
)


def _ids() -> Any:
    counter = iter(range(1, 1000))
    return lambda: f"fork-{next(counter)}"


def _open(db: str, clock_ms: int = NOW, **kwargs: Any) -> RuntimeApplication:
    return RuntimeApplication.open(db, clock=lambda: clock_ms, **kwargs)


def _continuing(db: str, **kwargs: Any) -> RuntimeApplication:
    return _open(
        db,
        LATER,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        host_inspector=StaticHostInspector(OBSERVATION),
        **kwargs,
    )


def _parked(db: str) -> str:
    """A run whose ``never_auto_retry`` Send died after T1, sealed by the old recovery rule
    (a store recovered before the rule changed); its op id."""
    operation = _interrupted(db)
    with _open(db) as app:
        seal_like_old_recovery(app, "r1")
        assert app.get_run_header("r1").status == "failed"
        assert app.plan_resume("r1").disposition == "blocked"
    return operation


def _completed(db: str) -> str:
    """A run whose Send completed, then ended: both a fork and a continuation are possible."""
    with _open(db, tools=[send_tool(dies=False)]) as app:
        app.open_session("s1", "/workspace", IDENTITY)
        app.ledger.create_run(run_header(SPINE, workspaceIdentity=IDENTITY))
        ledger = LedgerBuilder(SPINE)
        ledger.user(marker=True)
        app.ledger.append_events("r1", ledger.events)
        app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    with _open(db) as app:
        app.recover()
    return SPINE.operation_id("c1")


def _wire(app: RuntimeApplication, run_id: str) -> list[str]:
    return [json.dumps(e.to_wire(), sort_keys=True) for e in app.read_run_events(run_id)]


def test_a_fork_replays_the_prefix_before_the_uncertain_call(store_url: str) -> None:
    """The fork's start records the source and the kept high-water, its provenance is stored,
    the source's events are byte-identical, and a continuation of the fork runs without the
    abandoned call in its replay."""
    operation = _parked(store_url)
    sink = RecordingTelemetrySink()
    with _open(store_url, LATER, id_factory=_ids(), telemetry=Telemetry([sink])) as app:
        source_before = _wire(app, "r1")
        report = app.fork_run("r1", before_operation=operation, actor="alice", note="not sent")
        assert report.created
        assert report.high_water == 1
        assert report.abandoned_operation_id == operation
        assert report.forked_at == LATER
        assert _wire(app, "r1") == source_before
        fork = app.get_run_header(report.fork_run_id)
        assert fork.continuation_source is not None
        assert fork.continuation_source.source_run_id == "r1"
        assert fork.continuation_source.source_runtime_event_high_water == 1
        (start,) = app.read_run_events(report.fork_run_id)
        assert start.actions is not None
        assert start.actions.continuation_start is not None
        assert start.actions.continuation_start.immediate_source.high_water == 1
        assert [e for e in sink.events if isinstance(e, RunForkedEvent)] == [
            RunForkedEvent(
                session_id="s1",
                source_run_id="r1",
                fork_run_id=report.fork_run_id,
                operation_id=operation,
                actor="alice",
            )
        ]
        provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "again"},))])
        outcome = app.execute_fork(report.fork_run_id, provider, system_prompt="be careful")
        assert outcome.status == "completed"
        (request,) = provider.requests
        assert [e.id for e in request.replay_context] == [app.read_run_events("r1")[0].id]
        assert not any(e.function_call is not None for e in request.replay_context)
        with pytest.raises(RunForkRefusedError) as refused:
            app.execute_fork(report.fork_run_id, provider)
        assert refused.value.code == "fork_not_pending"
        assert _wire(app, "r1") == source_before
    with _continuing(store_url) as app:  # the ended fork is an ordinary continuation source
        plan = app.plan_continuation("s1", report.fork_run_id)
        assert plan.continuation is not None, plan.rejection_reasons
        assert plan.continuation.source_run_id == report.fork_run_id
        provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "more"},))])
        assert app.execute_continuation(plan, provider).status == "completed"
        (request,) = provider.requests
        assert not any(e.function_call is not None for e in request.replay_context)
        assert _wire(app, "r1") == source_before


def test_the_same_fork_again_is_idempotent(store_url: str) -> None:
    operation = _parked(store_url)
    with _open(store_url, id_factory=_ids()) as app:
        first = app.fork_run("r1", before_operation=operation, actor="alice", note="n")
    with _open(store_url, NOW + 5) as app:
        before = store_snapshot(app)
        again = app.fork_run("r1", before_operation=operation, actor="alice", note="n")
        assert not again.created
        assert again.fork_run_id == first.fork_run_id
        assert again.forked_at == NOW
        assert store_snapshot(app) == before


@pytest.mark.parametrize(
    ("kwargs", "error", "code"),
    [
        (
            {"before_operation": "toolop_" + "0" * 32, "actor": "a"},
            RunForkRefusedError,
            "fork_point_invalid",
        ),
        ({"actor": ""}, CodecInputError, "operator_action_invalid"),
        ({"actor": "bob", "note": "other"}, RunForkRefusedError, "fork_conflict"),
    ],
)
def test_refusals_are_typed_and_write_nothing(
    store_url: str, kwargs: dict[str, Any], error: type[MakaError], code: str
) -> None:
    operation = _parked(store_url)
    with _open(store_url, id_factory=_ids()) as app:
        if code == "fork_conflict":
            app.fork_run("r1", before_operation=operation, actor="alice")
        before = store_snapshot(app)
        with pytest.raises(error) as refused:
            app.fork_run("r1", **{"before_operation": operation, **kwargs})
        assert refused.value.code == code
        assert store_snapshot(app) == before


def test_a_continuation_first_refuses_the_fork(store_url: str) -> None:
    operation = _completed(store_url)
    with _continuing(store_url) as app:
        plan = app.plan_continuation("s1")
        provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "ok"},))])
        assert app.execute_continuation(plan, provider).status == "completed"
        before = store_snapshot(app)
        with pytest.raises(RunForkRefusedError) as refused:
            app.fork_run("r1", before_operation=operation, actor="alice")
        assert refused.value.code == "fork_conflict"
        assert store_snapshot(app) == before


def test_a_fork_and_a_continuation_racing_have_one_winner(store_url: str) -> None:
    """Two applications on one file, released together: one claims the source, the other
    gets a typed refusal, and the source is sealed by exactly one claim."""
    operation = _completed(store_url)
    forker, continuer = _open(store_url, id_factory=_ids()), _continuing(store_url)
    plan = continuer.plan_continuation("s1")
    assert plan.continuation is not None
    provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "ok"},))])
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def fork() -> None:
        barrier.wait()
        try:
            outcomes["fork"] = forker.fork_run("r1", before_operation=operation, actor="a")
        except MakaError as exc:
            outcomes["fork"] = exc

    def resume() -> None:
        barrier.wait()
        try:
            outcomes["continue"] = continuer.execute_continuation(plan, provider)
        except MakaError as exc:
            outcomes["continue"] = exc

    threads = [threading.Thread(target=fork), threading.Thread(target=resume)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    forker.close()
    continuer.close()
    errors = [o for o in outcomes.values() if isinstance(o, MakaError)]
    assert len(outcomes) == 2
    assert len(errors) == 1, outcomes
    with _open(store_url) as app:
        assert len(app.claims.all_claims()) == 1


def _interrupted(db: str, **kwargs: Any) -> str:
    """A run whose ``never_auto_retry`` Send died after T1 (its process gone); its op id."""
    with _open(db, tools=[send_tool(dies=True)], **kwargs) as app:
        app.open_session("s1", "/workspace", IDENTITY)
        app.ledger.create_run(run_header(SPINE, workspaceIdentity=IDENTITY))
        ledger = LedgerBuilder(SPINE)
        ledger.user(marker=True)
        app.ledger.append_events("r1", ledger.events)
        with pytest.raises(Killed):
            app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    return SPINE.operation_id("c1")


def test_forking_a_run_that_awaits_the_operator_ends_it_first(store_url: str) -> None:
    """The fork is the operator's decision to abandon the call: the source gets the recovered
    terminal (the call stays indeterminate in it), then the fork's claim seals it; a later
    recovery leaves the source alone (it used to raise ``run_sealed`` on the sealed source)."""
    operation = _interrupted(store_url)
    with _open(store_url) as app:
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "left_awaiting_operator")]
        assert app.get_run_header("r1").status == "running"
    with _open(store_url, LATER, id_factory=_ids()) as app:
        assert app.fork_run("r1", before_operation=operation, actor="alice").created
        assert app.get_run_header("r1").status == "failed"
        assert app.read_run_events("r1")[-1].id == "r1-recovered-terminal"
        assert [o.state for o in app.tool_journal.tool_operations("r1")] == ["prepared"]
        source_rows = [row for row in store_snapshot(app).rows if "r1" in repr(row)]
    with _open(store_url, LATER + 1) as app:
        assert all(r.run_id != "r1" for r in app.recover().repairs)
        assert [row for row in store_snapshot(app).rows if "r1" in repr(row)] == source_rows


def test_forking_a_source_whose_owner_is_live_is_refused_and_writes_nothing(
    store_url: str,
) -> None:
    operation = _interrupted(store_url, host_id="h1")  # h1's lease runs 30 s from NOW
    with _open(store_url, NOW + 1_000, id_factory=_ids()) as app:
        before = store_snapshot(app).rows
        with pytest.raises(RunForkRefusedError) as refused:
            app.fork_run("r1", before_operation=operation, actor="alice")
        assert (refused.value.code, refused.value.detail["reason"]) == (
            "fork_conflict",
            "source_live",
        )
        assert store_snapshot(app).rows == before
