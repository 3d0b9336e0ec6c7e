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
crash, and all three leave a ``runtime_admission`` start without a terminal
(``continuation_started_indeterminate``), as does a kill during the first model call. The
restarted host (same host id: its previous process is gone) ends it and the session continues
from its boundary; under the reference's rule (``end_start_only_continuations=False``) it is
left alone, and another host's live lease keeps it alone too (ADR 0035). A kill *inside* the
claim transaction leaves nothing at all.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.continuation.executor import (
    AFTER_CLAIM_COMMITTED,
    AFTER_RUN_CREATED,
    AFTER_START_COMMITTED,
    AFTER_TERMINAL_EVENT,
    AFTER_TERMINAL_HEADER,
)
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.failpoints import INSIDE_SAVE_BEFORE_COMMIT
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.recovery.startup import Repair
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.crash import CrashOutcome, crash_child
from maka_es.testing.crash_child import CHILD_CLOCK_MS, RecordingProvider, open_app
from maka_es.testing.probes import store_snapshot

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
#: Not a failpoint: the child is killed while its provider answers its first model call.
IN_MODEL_CALL = "in_model_call"


def _source_steps(created_at: int = 1000) -> list[dict[str, Any]]:
    """A failed session-inline source run: user -> call -> response -> failed terminal,
    created at ``created_at`` (before the child's clock: its continuation is the newer run)."""
    ledger = LedgerBuilder(SPINE, prefix="r1-")
    ledger.user("fix the port")
    ledger.call("c1", "Bash", {"command": "ls"})
    ledger.response("c1", "Bash")
    ledger.terminal("failed")
    return [
        CHILD_APP,
        {"op": "open_session", "session_id": "s1", "cwd": "/workspace"},
        {
            "op": "create_run",
            "header": run_header(
                SPINE, workspaceIdentity=WORKSPACE, createdAt=created_at, updatedAt=created_at
            ),
        },
        {"op": "append", "run_id": "r1", "events": ledger.events},
        {
            "op": "update_header",
            "run_id": "r1",
            "patch": {"status": "failed", "updatedAt": 1001, "failureClass": "provider_error"},
        },
    ]


def _crash(
    tmp_path: Path,
    store: str,
    name: str,
    nth: int = 1,
    *,
    app: dict[str, Any] | None = None,
    created_at: int = 1000,
) -> tuple[str, Path, CrashOutcome]:
    """SIGKILL the child at the ``nth`` hit of ``name`` (:data:`IN_MODEL_CALL`: while its
    provider is answering, after the call was recorded); the store setting it wrote to.
    ``app``: the child's application settings (default :data:`CHILD_APP`); ``created_at``:
    the source run's creation time."""
    db = tmp_path / "runtime.sqlite"
    calls = tmp_path / "provider-calls.txt"
    hang = name == IN_MODEL_CALL
    steps = [
        *_source_steps(created_at),
        {"op": "continue", "session_id": "s1", "calls_file": str(calls), "hang_in_provider": hang},
    ]
    steps[0] = app or CHILD_APP
    assert steps[CONTINUE_STEP]["op"] == "continue"
    failpoint = None if hang else (name, nth, CONTINUE_STEP)
    outcome = crash_child(db, steps, failpoint=failpoint, store=store)
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
    [claim] = app.claims.all_claims()
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
        claims = app.claims.all_claims()
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
        report = app.recover(end_start_only_continuations=False)  # the reference's rule
        assert [(r.run_id, r.kind) for r in report.repairs] == [(TARGET_RUN, "left_live_start")]
        assert not report.changed_anything
        assert store_snapshot(app).rows == before
        assert _reasons(app) == ("continuation_started_indeterminate",)
        # a second restart does not change its mind either
        reference = app.recover(end_start_only_continuations=False)
        assert [r.kind for r in reference.repairs] == ["left_live_start"]
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
        assert app.claims.all_claims() == []
        assert app._store.load_run("r1").sealed_by is None
        assert not app.run_exists(TARGET_RUN)
        assert app.ledger.all_run_ids() == ["r1"]
        assert [h.run_id for h in app.list_runs("s1")] == ["r1"]
        assert app.recover().repairs == ()

        plan = app.plan_continuation("s1")
        assert plan.disposition == "continue"
        assert plan.continuation is not None
        outcome = app.execute_continuation(plan, RecordingProvider(str(calls)))
        assert outcome.status == "completed"
        assert outcome.target_run_id == plan.continuation.run_id == "parent-2"
        [claim] = app.claims.all_claims()
        assert claim.target_run_id == outcome.target_run_id
        assert app._store.load_run("r1").sealed_by == claim.claim_id
        assert _reasons(app) == ("continuation_already_exists",)

    # only the parent's execution reached the provider
    assert [line.split()[1] for line in _provider_calls(calls)] == ["parent-2"]


# -- a start-only continuation whose owner is gone (ADR 0035) ---------------------------------

START_ONLY = (*LIVE_START, IN_MODEL_CALL)
HOST_A = {**CHILD_APP, "env": {**CHILD_APP["env"], "MAKA_HOST_ID": "host-a"}}
#: Past host-a's lease (renewed at the child's clock, 1 000 ms, for 30 000 ms).
AFTER_LEASE_MS = 40_000


class _Model:
    """The restarted host's model: records the history it is sent, answers one text."""

    def __init__(self) -> None:
        self.sent: list[list[dict[str, Any]]] = []

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.sent.append(request.openai_messages())
        return ProviderTurn(outputs=({"kind": "text", "text": "the port is fixed"},))


def _host_b(store: str, clock_ms: float) -> RuntimeApplication:
    """Another host (``host-b``) restarting on the store at ``clock_ms``."""
    counter = itertools.count(1)
    return RuntimeApplication.open(
        store,
        clock=lambda: clock_ms,
        env={**CHILD_APP["env"], "MAKA_HOST_ID": "host-b"},
        id_factory=lambda: f"parent-{next(counter)}",
        host_inspector=StaticHostInspector(HostObservation.model_validate(OBSERVATION)),
    )


def _ended_start_only(app: RuntimeApplication, claim_id: str) -> Repair:
    """The start-only target ended with the recovered terminal; its report line."""
    start, terminal = app.read_run_events(TARGET_RUN)
    assert start.actions is not None
    assert start.actions.continuation_start is not None
    assert terminal.id == f"{TARGET_RUN}-recovered-terminal"
    assert terminal.actions is not None
    assert terminal.actions.state_delta == {
        "recovered": True,
        "recoveryReason": "run_interrupted",
        "lastEventType": "run_started",
        "failureClass": "app_restarted",
    }
    header = app.get_run_header(TARGET_RUN)
    assert (header.status, header.failure_class) == ("failed", "app_restarted")
    detail = {"recoveryReason": "run_interrupted", "lastEventType": "run_started"}
    return Repair(TARGET_RUN, "start_only_ended", {**detail, "claimId": claim_id})


def _continues_from_the_ended_start(app: RuntimeApplication) -> None:
    """The next plan continues from the ended target's boundary, and its model gets the
    source's history once: no duplicated user message, no dangling call."""
    plan = app.plan_continuation("s1")
    assert plan.disposition == "continue", plan.rejection_reasons
    assert plan.continuation is not None
    source = plan.continuation
    assert (source.source_run_id, source.source_runtime_event_high_water) == (TARGET_RUN, 2)
    model = _Model()
    outcome = app.execute_continuation(plan, model)
    assert outcome.status == "completed"
    [sent] = model.sent
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["fix the port"]
    assert [call["id"] for call in sent[1]["tool_calls"]] == [sent[2]["tool_call_id"]]
    assert app.get_run_header(outcome.target_run_id).status == "completed"
    assert _reasons(app) == ("continuation_already_exists",)


@pytest.mark.parametrize("name", START_ONLY, ids=lambda n: n.split(".")[-1])
def test_a_start_only_continuation_is_ended_and_the_session_goes_on(
    tmp_path: Path, store_url: str, name: str
) -> None:
    """Killed before its first model call or during it; the same host id restarts: its
    previous process is gone, so recovery ends the target and the session continues."""
    db, calls, _ = _crash(tmp_path, store_url, name, created_at=900)

    with _fresh(db) as app:
        [claim] = app.claims.all_claims()
        assert _reasons(app) == ("continuation_started_indeterminate",)
        report = app.recover()
        assert report.repairs == (_ended_start_only(app, claim.claim_id),)
        assert report.changed_anything
        after = store_snapshot(app).rows
        assert app.recover().repairs == ()  # converged: nothing needs attention any more
        assert store_snapshot(app).rows == after
        _continues_from_the_ended_start(app)

    # the dead child's provider was called only when it was killed during that call
    called = [line.split()[1] for line in _provider_calls(calls)]
    assert called == ([TARGET_RUN] if name == IN_MODEL_CALL else [])


def test_another_hosts_start_only_continuation_is_taken_over_once_its_lease_expired(
    tmp_path: Path, store_url: str
) -> None:
    db, _, _ = _crash(tmp_path, store_url, IN_MODEL_CALL, app=HOST_A, created_at=900)

    with _host_b(db, CHILD_CLOCK_MS) as app:  # host-a's lease is live: left alone
        before = store_snapshot(app).rows
        report = app.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [(TARGET_RUN, "left_live_owner")]
        assert store_snapshot(app).rows == before
        assert _reasons(app) == ("continuation_started_indeterminate",)

    with _host_b(db, AFTER_LEASE_MS) as app:
        [claim] = app.claims.all_claims()
        report = app.recover()
        assert report.repairs == (
            Repair(TARGET_RUN, "owner_taken_over", {"previousHostId": "host-a", "epoch": 2}),
            _ended_start_only(app, claim.claim_id),
        )
        _continues_from_the_ended_start(app)
