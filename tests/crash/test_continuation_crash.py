"""SIGKILL at each continuation failpoint (failpoints and startup recovery of
docs/reference/continuation.md; reference runtime-continuation-crash.test.ts), adapted to maka_es's
one-transaction claim.

A real child commits a failed source run, plans the continuation and executes it, and is
SIGKILLed at the failpoint. A fresh application then reopens the store and checks what planning
and startup recovery make of what the dead process left behind. Every case runs on both stores
(``store_url``: SQLite file, PostgreSQL schema; ADR 0028).

In maka_es the claim, the source seal, the target run and its V2 continuation-start fact are
ONE save, so ``after_continuation_claim_committed``, ``after_run_created`` and
``after_continuation_start_committed`` are the same physical point: the reference's
"claim only" / "run created without start" states (claim repair) cannot be produced by a
crash, and all three leave a live ``runtime_admission`` start without a terminal
(``continuation_started_indeterminate``, left alone by recovery). A kill *inside* the claim
transaction leaves nothing at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.builders import LedgerBuilder, Spine, run_header
from maka_es.continuation.executor import (
    AFTER_CLAIM_COMMITTED,
    AFTER_RUN_CREATED,
    AFTER_START_COMMITTED,
    AFTER_TERMINAL_EVENT,
    AFTER_TERMINAL_HEADER,
)
from maka_es.failpoints import INSIDE_SAVE_BEFORE_COMMIT
from maka_es.testing.crash import CrashOutcome, crash_child
from maka_es.testing.crash_child import RecordingProvider, open_app
from maka_es.testing.store_probe import store_snapshot

pytestmark = pytest.mark.crash

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
SPINE = Spine("s1", "i1", "r1", "t1")
OBSERVATION: dict[str, Any] = {
    "workspaceIdentity": WORKSPACE,
    "workspacePath": "/workspace",
    "backgroundOperationsSettled": True,
    "availableToolNames": ["Bash", "Read"],
}
CHILD_APP: dict[str, Any] = {
    "op": "app",
    "env": {"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
    "id_prefix": "child-",
    "observation": OBSERVATION,
}
#: ids drawn in planner order: invocation, run, turn, claim
TARGET_RUN = "child-2"
CONTINUE_STEP = 5
LIVE_START = (AFTER_CLAIM_COMMITTED, AFTER_RUN_CREATED, AFTER_START_COMMITTED)


def _source_steps() -> list[dict[str, Any]]:
    """A failed session-inline source run: user -> call -> response -> failed terminal."""
    ledger = LedgerBuilder(SPINE, prefix="r1-")
    ledger.user("fix the port")
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    return [
        CHILD_APP,
        {"op": "open_session", "session_id": "s1", "cwd": "/workspace"},
        {"op": "create_run", "header": run_header(SPINE, workspaceIdentity=WORKSPACE)},
        {"op": "append", "run_id": "r1", "events": ledger.events},
        {
            "op": "update_header",
            "run_id": "r1",
            "patch": {"status": "failed", "updatedAt": 1001, "failureClass": "provider_error"},
        },
    ]


def _crash(tmp_path: Path, store: str, name: str, nth: int = 1) -> tuple[str, Path, CrashOutcome]:
    """SIGKILL the child at the ``nth`` hit of ``name``; the store setting it wrote to."""
    db = tmp_path / "runtime.sqlite"
    calls = tmp_path / "provider-calls.txt"
    steps = [
        *_source_steps(),
        {"op": "continue", "session_id": "s1", "calls_file": str(calls)},
    ]
    assert steps[CONTINUE_STEP]["op"] == "continue"
    outcome = crash_child(db, steps, failpoint=(name, nth, CONTINUE_STEP), store=store)
    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written
    return store, calls, outcome


def _fresh(store: str) -> RuntimeApplication:
    """A restarted host: same observation and flag, its own fresh ids."""
    return open_app(store, {**CHILD_APP, "id_prefix": "parent-"})


def _provider_calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def _assert_claimed_once(app: RuntimeApplication) -> None:
    """One claim, owning the target run and sealing the source."""
    [claim] = app.all_claims()
    assert claim.target_run_id == TARGET_RUN
    assert app._store.load_run("r1").sealed_by == claim.claim_id
    assert [h.run_id for h in app.list_runs("s1")] == ["r1", TARGET_RUN]


def _reasons(app: RuntimeApplication) -> tuple[str, ...]:
    return tuple(app.plan_continuation("s1").rejection_reasons)


@pytest.mark.parametrize("name", LIVE_START, ids=lambda n: n.split(".")[-1])
def test_kill_after_claim_leaves_a_live_start_that_keeps_parking(
    tmp_path: Path, store_url: str, name: str
) -> None:
    db, calls, _ = _crash(tmp_path, store_url, name)

    with _fresh(db) as app:
        claims = app.all_claims()
        assert len(claims) == 1
        claim = claims[0]
        assert claim.target_run_id == TARGET_RUN
        assert app._store.load_run("r1").sealed_by == claim.claim_id
        events = app.read_run_events(TARGET_RUN)
        assert len(events) == 1  # the start fact only: no output, no terminal
        start = events[0].actions.continuation_start if events[0].actions else None
        assert start is not None
        assert start.protocol == "continuation_start_v2"
        assert start.provenance == "runtime_admission"
        assert start.claim_id == claim.claim_id
        assert app.get_run_header(TARGET_RUN).status == "running"  # admitted with its start
        assert [h.run_id for h in app.list_runs("s1")] == ["r1", TARGET_RUN]

        assert _reasons(app) == ("continuation_started_indeterminate",)
        before = store_snapshot(app).rows
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [(TARGET_RUN, "left_live_start")]
        assert not report.changed_anything
        assert store_snapshot(app).rows == before
        assert _reasons(app) == ("continuation_started_indeterminate",)
        # a second restart does not change its mind either
        assert [r.kind for r in app.recover().repairs] == ["left_live_start"]
        assert _reasons(app) == ("continuation_started_indeterminate",)
        assert len(app.read_run_events(TARGET_RUN)) == 1

    assert _provider_calls(calls) == []  # killed before the provider was asked


def test_kill_after_terminal_event_repairs_the_header(tmp_path: Path, store_url: str) -> None:
    db, calls, _ = _crash(tmp_path, store_url, AFTER_TERMINAL_EVENT)

    with _fresh(db) as app:
        _assert_claimed_once(app)
        assert app.get_run_header(TARGET_RUN).status == "running"
        assert _reasons(app) == ("continuation_claim_repair_required",)
        before = store_snapshot(app).rows
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [(TARGET_RUN, "header_repaired")]
        after = store_snapshot(app).rows
        # the header repair is one header fact; no RuntimeEvent was added
        assert after[: len(before)] == before
        assert len(after) == len(before) + 1
        assert len(app.read_run_events(TARGET_RUN)) == 3
        assert app.get_run_header(TARGET_RUN).status == "completed"
        assert _reasons(app) == ("continuation_already_exists",)
        events = app.read_run_events(TARGET_RUN)
        assert [e.id for e in events if e.is_terminal] == [f"{TARGET_RUN}-terminal"]
        assert events[-1].is_terminal
        assert app.recover().repairs == ()
        assert store_snapshot(app).rows == after

    assert len(_provider_calls(calls)) == 1


def test_kill_after_terminal_header_needs_no_repair(tmp_path: Path, store_url: str) -> None:
    db, calls, _ = _crash(tmp_path, store_url, AFTER_TERMINAL_HEADER)

    with _fresh(db) as app:
        _assert_claimed_once(app)
        assert app.get_run_header(TARGET_RUN).status == "completed"
        assert _reasons(app) == ("continuation_already_exists",)
        before = store_snapshot(app).rows
        report = app.recover()
        assert not report.changed_anything
        assert store_snapshot(app).rows == before
        assert _reasons(app) == ("continuation_already_exists",)
        events = app.read_run_events(TARGET_RUN)
        assert [e.id for e in events] == [
            f"{TARGET_RUN}-start",
            f"{TARGET_RUN}-out-1",
            f"{TARGET_RUN}-terminal",
        ]

    assert len(_provider_calls(calls)) == 1


def test_kill_inside_the_claim_transaction_leaves_nothing(tmp_path: Path, store_url: str) -> None:
    # planning and revalidation never write: the first save of the step is the claim's
    db, calls, _ = _crash(tmp_path, store_url, INSIDE_SAVE_BEFORE_COMMIT, nth=1)

    with _fresh(db) as app:
        assert app.all_claims() == []
        assert app._store.load_run("r1").sealed_by is None
        assert not app.run_exists(TARGET_RUN)
        assert app.all_run_ids() == ["r1"]
        assert [h.run_id for h in app.list_runs("s1")] == ["r1"]
        assert app.recover().repairs == ()

        plan = app.plan_continuation("s1")
        assert plan.disposition == "continue"
        assert plan.continuation is not None
        outcome = app.execute_continuation(plan, RecordingProvider(str(calls)))
        assert outcome.status == "completed"
        assert outcome.target_run_id == plan.continuation.run_id == "parent-2"
        [claim] = app.all_claims()
        assert claim.target_run_id == outcome.target_run_id
        assert app._store.load_run("r1").sealed_by == claim.claim_id
        assert _reasons(app) == ("continuation_already_exists",)

    # only the parent's execution reached the provider
    assert [line.split()[1] for line in _provider_calls(calls)] == ["parent-2"]
