"""SIGKILL around the tool-journal transactions (reference suite sqlite-runtime-crash).

A real child process runs T1 / T2 / a recovery bundle through ``RuntimeApplication`` on a
SQLite file and is SIGKILLed either *inside* the last transaction (rows inserted, COMMIT not
reached: ``arm_inside_save``) or right *after* the command returned. A fresh application then
reopens the store and must see all of the transaction or none of it, with the journal, the
resolver and the Phase 0 plan agreeing; and the store must accept the next legal command. Every
case runs on both stores (``store_url``: SQLite file, PostgreSQL schema; ADR 0028).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.testing.crash import CrashOutcome, crash_child
from maka_es.testing.probes import store_snapshot

SPINE = Spine()
RUN = SPINE.run_id
EV = Events.wire()
WRITE_ARGS: dict[str, Any] = {"path": "notes.txt", "content": "after"}

pytestmark = pytest.mark.crash

OP = SPINE.operation_id("c1")
CALL = EV.call("c1", "Write", WRITE_ARGS)
RESPONSE = EV.bound_response("c1", "Write", "ok")
BUNDLES: dict[str, dict[str, dict[str, Any]]] = {
    "completed": EV.completed_bundle("c1", "Write", "ok"),
    "parked": EV.parked_bundle("c1", "diverged"),
}
BUNDLE_STATE = {"completed": "recovery_completed", "parked": "recovery_parked"}
SETUP: list[dict[str, Any]] = [
    {"op": "open_session", "session_id": SPINE.session_id, "cwd": "/workspace"},
    {"op": "create_run", "header": run_header(SPINE)},
    {"op": "append", "run_id": RUN, "events": [EV.user(marker=True)]},
]
METADATA: dict[str, Any] = {"expectedDigest": "sha256:" + "b" * 64}
T1_STEP = {
    "op": "t1",
    "run_id": RUN,
    "call": CALL,
    "recovery_mode": "reconcile",
    "metadata": METADATA,
}
T2_STEP = {"op": "t2", "run_id": RUN, "response": RESPONSE}


def bundle_step(kind: str) -> dict[str, Any]:
    return {"op": "bundle", "run_id": RUN, "operation_id": OP, **BUNDLES[kind]}


def killed(db: Path, store: str, steps: list[dict[str, Any]], *, inside: bool) -> None:
    """Run ``steps`` in a child on ``store`` and SIGKILL it inside / after the last one."""
    outcome: CrashOutcome = crash_child(db, [*SETUP, *steps], arm_inside_save=inside, store=store)
    assert outcome.said == ("INSIDE" if inside else "READY"), outcome.stderr
    assert outcome.returncode == -9  # SIGKILL
    assert not outcome.finally_marker_written


def event_ids(app: RuntimeApplication) -> list[str]:
    return [event.id for event in app.read_run_events(RUN)]


def states(app: RuntimeApplication) -> list[str]:
    return [operation.state for operation in app.tool_journal.tool_operations(RUN)]


def test_kill_inside_t1_persists_nothing_of_it(tmp_path: Path, store_url: str) -> None:
    """Killed inside the T1 transaction: neither call, dispatch nor metadata survive, the
    earlier events are intact, and the same T1 then commits with ``created=True``."""
    db = tmp_path / "runtime.sqlite"
    killed(db, store_url, [T1_STEP], inside=True)
    with RuntimeApplication.open(store_url) as app:
        assert event_ids(app) == ["user-1"]
        assert app.tool_journal.tool_operations(RUN) == ()
        assert app.tool_journal.resolve_run(RUN).decisions == ()
        assert app.plan_resume(RUN).disposition == "safe_replay"
        commit = app.tool_journal.commit_tool_prepared(
            RUN, CALL, recovery_mode="reconcile", metadata=METADATA
        )
        assert (commit.operation_id, commit.created) == (OP, True)
        assert states(app) == ["prepared"]


def test_kill_after_t1_keeps_the_operation_prepared(tmp_path: Path, store_url: str) -> None:
    """Killed after T1 returned: the operation is ``prepared`` with its metadata; the resolver
    says ``indeterminate`` and requires reconciliation; the plan is ``blocked`` with
    ``pending_tool_result`` / ``dangling_tool_state``; planning writes nothing; an exact T1
    retry is ``created=False`` (the tool must not run again) and T2 still commits."""
    db = tmp_path / "runtime.sqlite"
    killed(db, store_url, [T1_STEP], inside=False)
    with RuntimeApplication.open(store_url) as app:
        assert event_ids(app) == ["user-1", "call-c1", SPINE.fact_id("c1", "dispatch")]
        (operation,) = app.tool_journal.tool_operations(RUN)
        assert (operation.state, operation.recovery_mode) == ("prepared", "reconcile")
        assert dict(operation.metadata) == METADATA
        resolution = app.tool_journal.resolve_run(RUN)
        (decision,) = resolution.decisions
        assert (decision.status, decision.reason) == ("indeterminate", "dispatch_without_response")
        assert resolution.requires_reconciliation is True
        before = store_snapshot(app)
        plan = app.plan_resume(RUN)
        assert plan.disposition == "blocked"
        assert plan.rejection_reasons == ("dangling_tool_state",)
        assert [d.code for d in plan.diagnostics] == ["pending_tool_result"]
        assert [op.status for op in plan.operations] == ["indeterminate"]
        assert plan.requires_verification is True
        assert store_snapshot(app) == before
        retry = app.tool_journal.commit_tool_prepared(
            RUN, CALL, recovery_mode="reconcile", metadata=METADATA
        )
        assert retry.created is False
        assert store_snapshot(app) == before
        assert app.tool_journal.commit_tool_outcome(RUN, RESPONSE).created is True


def test_kill_inside_t2_keeps_t1_and_no_response(tmp_path: Path, store_url: str) -> None:
    """Killed inside the T2 transaction: T1 survives, the response does not; the operation is
    still ``prepared`` and the same T2 then commits with ``created=True``."""
    db = tmp_path / "runtime.sqlite"
    killed(db, store_url, [T1_STEP, T2_STEP], inside=True)
    with RuntimeApplication.open(store_url) as app:
        assert event_ids(app) == ["user-1", "call-c1", SPINE.fact_id("c1", "dispatch")]
        assert states(app) == ["prepared"]
        assert app.tool_journal.resolve_run(RUN).decisions[0].status == "indeterminate"
        assert app.plan_resume(RUN).disposition == "blocked"
        assert app.tool_journal.commit_tool_outcome(RUN, RESPONSE).created is True
        assert states(app) == ["outcome_committed"]


def test_kill_after_t2_keeps_the_outcome(tmp_path: Path, store_url: str) -> None:
    """Killed after T2 returned: the outcome is durable (``outcome_committed``, resolver
    ``completed / normal_t2``), the plan is ``safe_replay``, and an exact T2 retry is
    ``created=False`` writing nothing."""
    db = tmp_path / "runtime.sqlite"
    killed(db, store_url, [T1_STEP, T2_STEP], inside=False)
    with RuntimeApplication.open(store_url) as app:
        assert event_ids(app) == [
            "user-1",
            "call-c1",
            SPINE.fact_id("c1", "dispatch"),
            SPINE.fact_id("c1", "response"),
        ]
        assert states(app) == ["outcome_committed"]
        (decision,) = app.tool_journal.resolve_run(RUN).decisions
        assert (decision.status, decision.settlement_origin) == ("completed", "normal_t2")
        plan = app.plan_resume(RUN)
        assert plan.disposition == "safe_replay"
        assert [op.status for op in plan.operations] == ["succeeded"]
        before = store_snapshot(app)
        assert app.tool_journal.commit_tool_outcome(RUN, RESPONSE).created is False
        assert store_snapshot(app) == before


@pytest.mark.parametrize("kind", sorted(BUNDLES))
def test_kill_inside_a_bundle_persists_nothing_of_it(
    tmp_path: Path, store_url: str, kind: str
) -> None:
    """Killed inside the bundle transaction: none of reconcile / outcome / decision survives,
    the operation is still ``prepared`` (resolver ``indeterminate``), and the same bundle then
    commits with ``created=True``."""
    db = tmp_path / "runtime.sqlite"
    killed(db, store_url, [T1_STEP, bundle_step(kind)], inside=True)
    with RuntimeApplication.open(store_url) as app:
        assert event_ids(app) == ["user-1", "call-c1", SPINE.fact_id("c1", "dispatch")]
        (operation,) = app.tool_journal.tool_operations(RUN)
        assert (operation.state, operation.observation) == ("prepared", None)
        assert app.tool_journal.resolve_run(RUN).decisions[0].status == "indeterminate"
        commit = app.tool_journal.commit_tool_recovery_bundle(RUN, OP, **BUNDLES[kind])
        assert (commit.operation_id, commit.created) == (OP, True)
        assert states(app) == [BUNDLE_STATE[kind]]


@pytest.mark.parametrize("kind", sorted(BUNDLES))
def test_kill_after_a_bundle_keeps_it(tmp_path: Path, store_url: str, kind: str) -> None:
    """Killed after the bundle committed: all of it is durable, the journal and the resolver
    agree (completed → ``recovery_completed`` / safe replay; parked → ``recovery_parked`` /
    blocked), and an exact bundle retry is ``created=False`` writing nothing."""
    db = tmp_path / "runtime.sqlite"
    killed(db, store_url, [T1_STEP, bundle_step(kind)], inside=False)
    parts = BUNDLES[kind]
    with RuntimeApplication.open(store_url) as app:
        expected = ["user-1", "call-c1", SPINE.fact_id("c1", "dispatch")]
        expected += [
            parts[slot]["id"] for slot in ("reconcile", "outcome", "decision") if slot in parts
        ]
        assert event_ids(app) == expected
        assert states(app) == [BUNDLE_STATE[kind]]
        (decision,) = app.tool_journal.resolve_run(RUN).decisions
        if kind == "completed":
            assert (decision.status, decision.reason) == ("completed", "recovery_bundle_completed")
            assert app.plan_resume(RUN).disposition == "safe_replay"
        else:
            assert (decision.status, decision.reason) == ("parked", "reconcile_diverged")
            plan = app.plan_resume(RUN)
            assert plan.disposition == "blocked"
            assert [d.code for d in plan.diagnostics] == ["tool_recovery_parked"]
        before = store_snapshot(app)
        assert app.tool_journal.commit_tool_recovery_bundle(RUN, OP, **parts).created is False
        assert store_snapshot(app) == before
