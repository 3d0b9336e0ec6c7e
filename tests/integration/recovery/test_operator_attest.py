"""An operator attests an indeterminate operation's outcome (ADR 0022), on a real SQLite file.

The interruption is a ``never_auto_retry`` tool whose process dies after its side effect (a
``BaseException`` the tool runtime lets through like a kill): T1 is committed, T2 never is, and
no recovery settles it by itself. The attestation is the only way it becomes ``completed``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.errors import (
    CodecInputError,
    MakaError,
    RunSealedError,
    ToolOperationNotFoundError,
    ToolOperationSettledError,
    ToolOutcomeConflictError,
)
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.telemetry import (
    OperatorAttestedEvent,
    RecordingTelemetrySink,
    Telemetry,
)
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from tests.support.old_recovery import seal_like_old_recovery
from tests.support.send_tool import RESULT, Killed, send_tool

NOW = 1_700_000_000_000
IDENTITY = "workspace:v1:3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"


def _open(db: str, clock_ms: int = NOW, **kwargs: Any) -> RuntimeApplication:
    return RuntimeApplication.open(db, clock=lambda: clock_ms, **kwargs)


def _interrupted(db: str) -> str:
    """A run whose ``never_auto_retry`` Send died after T1; its operation id."""
    spine = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")
    with _open(db, tools=[send_tool(dies=True)]) as app:
        app.open_session("s1", "/workspace", IDENTITY)
        app.ledger.create_run(run_header(spine, workspaceIdentity=IDENTITY))
        ledger = LedgerBuilder(spine)
        ledger.user(marker=True)
        app.ledger.append_events("r1", ledger.events)
        with pytest.raises(Killed):
            app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
    return spine.operation_id("c1")


def test_attest_applied_commits_the_result_and_its_provenance(store_url: str) -> None:
    operation = _interrupted(store_url)
    sink = RecordingTelemetrySink()
    with _open(store_url, clock_ms=NOW + 5, telemetry=Telemetry([sink])) as app:
        assert app.plan_resume("r1").disposition == "blocked"
        report = app.attest_operation(
            "r1", operation, applied=True, result=RESULT, actor="alice", note="saw it in the log"
        )
        assert report.created is True
        assert report.attestation.attested_at == NOW + 5  # the application clock
        (op,) = app.tool_journal.tool_operations("r1")
        assert op.state == "outcome_committed"
        (decision,) = app.tool_journal.resolve_run("r1").decisions
        assert (decision.status, decision.settlement_origin) == ("completed", "normal_t2")
        # nothing else awaited an operator: the attestation finished the run's recovery
        assert [(r.kind, r.detail) for r in report.recovery] == [
            ("terminal_recovered", {"recoveryReason": "run_interrupted"})
        ]
        response, terminal = app.read_run_events("r1")[-2:]
        assert (response.id, terminal.id) == (f"{operation}_response", "r1-recovered-terminal")
        assert response.function_response is not None
        assert response.function_response.result == RESULT
        assert response.function_response.is_error is None
        plan = app.plan_resume("r1")
        (diagnostic,) = [d for d in plan.diagnostics if d.code == "operator_attested"]
        assert diagnostic.detail == {
            "operationId": operation,
            "applied": True,
            "actor": "alice",
            "note": "saw it in the log",
            "attestedAt": NOW + 5,
            "responseEventId": f"{operation}_response",
        }
        assert (diagnostic.tool_call_id, diagnostic.tool_name) == ("c1", "Send")
    (event,) = sink.events
    assert event == OperatorAttestedEvent(
        session_id="s1", run_id="r1", operation_id=operation, actor="alice", outcome="applied"
    )
    assert "saw it" not in str(event.to_wire())  # telemetry: identities and codes only


def test_attest_not_applied_gives_the_model_an_error_result(store_url: str) -> None:
    operation = _interrupted(store_url)
    with _open(store_url) as app:
        app.attest_operation("r1", operation, applied=False, actor="bob")
        response = app.read_run_events("r1")[-2].function_response
        assert response is not None
        assert response.is_error is True
        assert response.result == {
            "kind": "text",
            "text": "operator_attested_not_applied: an operator attested that this Send call "
            "did not take effect",
        }


def test_a_repeat_is_idempotent_and_keeps_the_first_time(store_url: str) -> None:
    operation = _interrupted(store_url)
    with _open(store_url, clock_ms=NOW) as app:
        app.attest_operation("r1", operation, applied=True, result=RESULT, actor="alice")
    with _open(store_url, clock_ms=NOW + 60_000) as app:
        before = store_snapshot(app)
        again = app.attest_operation("r1", operation, applied=True, result=RESULT, actor="alice")
        assert again.created is False
        assert again.attestation.attested_at == NOW
        assert store_snapshot(app) == before


@pytest.mark.parametrize(
    ("kwargs", "error", "code"),
    [
        (
            {"applied": False, "actor": "carol"},
            ToolOutcomeConflictError,
            "operator_attestation_conflict",
        ),
        (
            {"applied": True, "result": RESULT, "actor": "  "},
            CodecInputError,
            "operator_action_invalid",
        ),
        (
            {"applied": True, "actor": "carol"},
            CodecInputError,
            "operator_action_invalid",
        ),
        (
            {"applied": False, "result": RESULT, "actor": "carol"},
            CodecInputError,
            "operator_action_invalid",
        ),
        ({"applied": True, "result": float("nan"), "actor": "carol"}, MakaError, "non_strict_json"),
    ],
)
def test_refusals_are_typed_and_leave_the_store_unchanged(
    store_url: str, kwargs: dict[str, Any], error: type[MakaError], code: str
) -> None:
    operation = _interrupted(store_url)
    with _open(store_url) as app:
        app.attest_operation("r1", operation, applied=True, result=RESULT, actor="alice")
        before = store_snapshot(app)
        with pytest.raises(error) as refused:
            app.attest_operation("r1", operation, **kwargs)
        assert refused.value.code == code
        assert store_snapshot(app) == before


def test_only_an_indeterminate_operation_is_attestable(store_url: str) -> None:
    spine = Spine(run_id="r1", invocation_id="i-r1", turn_id="t-r1")
    with _open(store_url, tools=[send_tool(dies=False)]) as app:
        app.open_session("s1", "/workspace", IDENTITY)
        app.ledger.create_run(run_header(spine, workspaceIdentity=IDENTITY))
        ledger = LedgerBuilder(spine)
        ledger.user(marker=True)
        app.ledger.append_events("r1", ledger.events)
        app.tool_runtime.execute("r1", ledger.call("c1", "Send", {"to": "ops"}))
        before = store_snapshot(app)
        with pytest.raises(ToolOperationSettledError) as refused:
            app.attest_operation("r1", spine.operation_id("c1"), applied=False, actor="alice")
        assert refused.value.detail == {
            "operationId": spine.operation_id("c1"),
            "state": "outcome_committed",
        }
        with pytest.raises(ToolOperationNotFoundError):
            app.attest_operation("r1", "toolop_" + "0" * 32, applied=False, actor="alice")
        assert store_snapshot(app) == before


def test_a_run_sealed_by_recovery_refuses_the_attestation(store_url: str) -> None:
    """The reference's write rules stand: nothing follows a run's terminal event. A run the
    recovery of an older version sealed refuses, and the refusal names the way on (a fork)."""
    operation = _interrupted(store_url)
    with _open(store_url) as app:
        seal_like_old_recovery(app, "r1")
        before = store_snapshot(app)
        with pytest.raises(RunSealedError) as refused:
            app.attest_operation("r1", operation, applied=False, actor="alice")
        assert refused.value.detail == {
            "eventId": f"{operation}_response",
            "operationId": operation,
            "wayOn": "fork_run",
        }
        assert "fork" in str(refused.value)
        assert store_snapshot(app) == before


def test_two_concurrent_attesters_have_one_winner(store_url: str) -> None:
    """Two processes' applications on one file, released together: exactly one attestation
    lands; the other gets a typed conflict (a lost save, or the winner's attestation)."""
    operation = _interrupted(store_url)
    apps = [_open(store_url), _open(store_url)]
    for app in apps:
        app.tool_journal.tool_operations("r1")  # both have read the run before either writes
    barrier = threading.Barrier(2)
    outcomes: list[object] = [None, None]

    def attest(index: int) -> None:
        barrier.wait()
        try:
            outcomes[index] = apps[index].attest_operation(
                "r1",
                operation,
                applied=index == 0,
                result=RESULT if index == 0 else None,
                actor=f"op{index}",
            )
        except MakaError as exc:
            outcomes[index] = exc

    threads = [threading.Thread(target=attest, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for app in apps:
        app.close()
    errors = [o for o in outcomes if isinstance(o, MakaError)]
    assert len(errors) == 1
    assert errors[0].code in {"operator_attestation_conflict", "concurrent_write"}
    with _open(store_url) as app:
        assert len(app.plan_resume("r1").diagnostics) >= 1
        responses = [e for e in app.read_run_events("r1") if e.function_response is not None]
        assert len(responses) == 1
        (attestation,) = app.tool_journal.attestations("r1")
        winner = 0 if outcomes[0] is not errors[0] else 1
        assert attestation.actor == f"op{winner}"


def test_attest_then_recover_then_continue_end_to_end(store_url: str) -> None:
    """The operator attests before the host's restart; recovery then ends the run with nothing
    unsettled, Phase 0 is safe_replay, and a continuation runs to completion with the attested
    result in its replay."""
    operation = _interrupted(store_url)
    with _open(store_url) as app:
        app.attest_operation("r1", operation, applied=True, result=RESULT, actor="alice")
    with _open(store_url) as app:
        app.recover()
        assert app.get_run_header("r1").status == "failed"
        plan = app.plan_resume("r1")
        assert plan.disposition == "safe_replay"
        assert [d.code for d in plan.diagnostics] == ["operator_attested"]
    observation = HostObservation(
        workspace_identity=IDENTITY,
        background_operations_settled=True,
        available_tool_names=("Send",),
    )
    with _open(
        store_url,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        host_inspector=StaticHostInspector(observation),
    ) as app:
        continuation = app.plan_continuation("s1")
        assert continuation.continuation is not None, continuation.rejection_reasons
        provider = ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": "done"},))])
        outcome = app.execute_continuation(continuation, provider)
        assert outcome.status == "completed"
        (request,) = provider.requests
        replayed = [
            e.function_response.result for e in request.replay_context if e.function_response
        ]
        assert replayed == [RESULT]
