"""Claim repair (docs/reference/continuation.md#claim-repair) and the continuation target's header
states, on a real SQLite store: a claim whose target never started gets the deterministic
``claim_repair`` start and ``continuation_abandoned_before_provider_dispatch`` terminal (also when a
crash interrupted a repair after its start), and an admitted target's header says ``running``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import (
    ContinuationClaim,
    ContinuationTarget,
    continuation_header,
    continuation_start_event,
)
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.ledger.model.facts import RunHeaderUpdated
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.recovery.startup import StartupRecovery, claim_boundary, repair_id
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import leave_unstarted_claim, store_snapshot
from tests.support.restart import Restart

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
ABANDONED = "continuation_abandoned_before_provider_dispatch"
TARGET = ContinuationTarget("ti", "tr", "tt")
CLAIMED_AT = 5000
NOW = 1_700_000_000_000


def open_app(path: str) -> RuntimeApplication:
    counter = itertools.count(1)
    observation = HostObservation(
        workspace_identity=WORKSPACE,
        workspace_path="/workspace",
        background_operations_settled=True,
        available_tool_names=("Bash",),
    )
    return RuntimeApplication.open(
        path,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        clock=lambda: NOW,
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=StaticHostInspector(observation),
    )


def failed_source(app: RuntimeApplication) -> None:
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
    ledger = LedgerBuilder(Spine(), prefix="r1-")
    ledger.user()
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    app.ledger.append_events("r1", ledger.events)
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})


@pytest.fixture
def app(store_url: str) -> Iterator[RuntimeApplication]:
    application = open_app(store_url)
    failed_source(application)
    yield application
    application.close()


def _claim(app: RuntimeApplication, *, create_target: bool) -> ContinuationClaim:
    return leave_unstarted_claim(
        app, "s1", "r1", TARGET, claimed_at=CLAIMED_AT, create_target=create_target
    )


def _assert_repaired(app: RuntimeApplication, claim: ContinuationClaim) -> None:
    """The claim repair: deterministic start (ts = claimedAt, no protocol marker) and failed
    terminal (ts = claimedAt + 1), then the failed header."""
    start, terminal = app.read_run_events("tr")
    fact = start.actions.continuation_start if start.actions is not None else None
    assert fact is not None
    assert (start.id, start.ts, fact.provenance, fact.claim_id) == (
        repair_id("start", claim.claim_id),
        CLAIMED_AT,
        "claim_repair",
        claim.claim_id,
    )
    assert start.protocol_marker is None
    assert terminal.to_wire() == {
        "id": repair_id("terminal", claim.claim_id),
        "sessionId": "s1",
        "invocationId": "ti",
        "runId": "tr",
        "turnId": "tt",
        "ts": CLAIMED_AT + 1,
        "partial": False,
        "role": "system",
        "author": "system",
        "status": "failed",
        "content": {"kind": "error", "code": ABANDONED, "reason": ABANDONED, "message": ABANDONED},
        "actions": {
            "endInvocation": True,
            "stateDelta": {
                "recovered": True,
                "recoveryReason": ABANDONED,
                "failureClass": ABANDONED,
            },
        },
    }
    header = app.get_run_header("tr")
    assert (header.status, header.failure_class, header.completed_at) == (
        "failed",
        ABANDONED,
        CLAIMED_AT + 1,
    )
    assert app.plan_continuation("s1", "r1").rejection_reasons == ("continuation_already_exists",)


@pytest.mark.parametrize("create_target", [False, True], ids=["claim_only", "target_created"])
def test_a_claim_whose_target_never_started_is_repaired(
    restart: Restart, app: RuntimeApplication, create_target: bool
) -> None:
    claim = _claim(app, create_target=create_target)
    assert app.run_exists("tr") is create_target
    assert app.plan_continuation("s1", "r1").rejection_reasons == (
        "continuation_claim_repair_required",
    )

    report = restart(app).recover()

    assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
        ("tr", "claim_repaired", {"claimId": claim.claim_id})
    ]
    _assert_repaired(app, claim)
    before = store_snapshot(app).rows
    assert restart(app).recover().repairs == ()
    assert store_snapshot(app).rows == before


def test_a_created_target_that_is_not_the_claimed_one_is_left_alone(
    app: RuntimeApplication,
) -> None:
    """The run at the claimed target id is not what the claim describes (another writer's
    run): recovery writes nothing into it."""
    claim = _claim(app, create_target=False)
    app.ledger.create_run(run_header(Spine("s1", "ti", "tr", "tt")))  # no continuationSource
    before = store_snapshot(app).rows
    report = StartupRecovery(app.claims).run([], [claim.claim_id])
    assert [(r.run_id, r.kind) for r in report.repairs] == [("tr", "left_claim_conflict")]
    assert not report.changed_anything
    assert store_snapshot(app).rows == before


@pytest.mark.parametrize("create_target", [False, True], ids=["claim_only", "target_created"])
def test_a_repair_interrupted_after_its_start_converges(
    restart: Restart, app: RuntimeApplication, tmp_path: Path, create_target: bool
) -> None:
    """Recovery committed the repair start and stopped (in-process here; the SIGKILL version
    is in tests/crash): the next pass writes the same terminal, with the same id, and the
    result equals an uninterrupted repair's."""
    claim = _claim(app, create_target=create_target)
    boundary = claim_boundary(claim)
    start = continuation_start_event(
        boundary,
        TARGET,
        event_id=repair_id("start", claim.claim_id),
        ts=CLAIMED_AT,
        provenance="claim_repair",
    )
    if create_target:
        app.claims.start_claimed_run("tr", start)
    else:
        source = app.get_run_header("r1")
        header = continuation_header(
            source, boundary, TARGET, workspace_identity=WORKSPACE, claimed_at=CLAIMED_AT
        )
        app.claims.create_claimed_run(header, start)
    assert len(app.read_run_events("tr")) == 1
    assert app.get_run_header("tr").status == "created"

    report = restart(app).recover()

    assert [(r.run_id, r.kind) for r in report.repairs] == [("tr", "claim_repaired")]
    _assert_repaired(app, claim)
    with open_app(str(tmp_path / "control.sqlite")) as control:
        failed_source(control)
        _claim(control, create_target=create_target)
        control.recover()
        assert control.ledger.read_run_payloads("tr") == app.ledger.read_run_payloads("tr")
        assert control.get_run_header("tr") == app.get_run_header("tr")


# -- the admitted target's header ---------------------------------------------------------------


class _Crash(BaseException):
    """The process dies while the provider is running."""


class _DyingProvider:
    def complete(self, request: Any) -> ProviderTurn:
        raise _Crash()


def test_an_admitted_target_is_running_once_its_start_is_committed(
    restart: Restart,
    app: RuntimeApplication,
) -> None:
    plan = app.plan_continuation("s1")
    assert plan.continuation is not None
    with pytest.raises(_Crash):
        app.execute_continuation(plan, _DyingProvider())
    target = plan.continuation.run_id
    [start] = app.read_run_events(target)
    header = app.get_run_header(target)
    assert (header.status, header.updated_at, header.created_at) == ("running", start.ts, start.ts)
    # a running target with a start and no terminal: indeterminate, and recovery under the
    # reference's rule leaves it (ADR 0035)
    assert app.plan_continuation("s1", "r1").rejection_reasons == (
        "continuation_started_indeterminate",
    )
    before = store_snapshot(app).rows
    report = restart(app).recover(end_start_only_continuations=False)
    assert [(r.run_id, r.kind) for r in report.repairs] == [(target, "left_live_start")]
    assert store_snapshot(app).rows == before
    assert app.get_run_header(target).status == "running"


def test_a_finished_continuation_goes_running_then_terminal(app: RuntimeApplication) -> None:
    plan = app.plan_continuation("s1")
    outcome = app.execute_continuation(plan, ScriptedProvider([ProviderTurn(outputs=())]))
    header = app.get_run_header(outcome.target_run_id)
    assert header.status == "completed"
    stream = app._store.load_run(outcome.target_run_id).id
    facts = [app._es.mapper.to_domain_event(row) for row in app._es.recorder.select_events(stream)]
    statuses = [f.patch.get("status") for f in facts if isinstance(f, RunHeaderUpdated)]
    assert statuses == ["running", "completed"]
