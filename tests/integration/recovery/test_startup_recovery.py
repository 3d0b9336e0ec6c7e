"""Startup recovery speaks the reference runtime's vocabulary and repairs what it repairs
(docs/reference/continuation.md#recovered-terminal, docs/reference/ledger.md#header-rules,
docs/reference/continuation.md#startup-recovery), on a real SQLite store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import HeaderUpdateRefusedError, TerminalConflictError
from maka_es.ledger.model.facts import RunHeaderUpdated, run_stream_id
from maka_es.recovery.model.reason import (
    last_reference_event_type,
    recovery_reason,
    reference_event_type,
)
from maka_es.recovery.startup import StartupRecovery, recovered_terminal_id
from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header
from maka_es.testing.probes import commit_unchecked, store_snapshot
from maka_es.wire.events import RuntimeEvent
from tests.support.restart import Restart

SPINE = Spine("s1", "i1", "r1", "t1")
NOW = 1_700_000_000_000


@pytest.fixture
def app(store_url: str) -> Iterator[RuntimeApplication]:
    application = RuntimeApplication.open(store_url, clock=lambda: NOW)
    application.open_session("s1", "/workspace")
    yield application
    application.close()


def _permission_request(ledger: LedgerBuilder) -> dict[str, Any]:
    return ledger.permission_request(
        "perm_1",
        tool_call_id="c1",
        tool_name="Write",
        category="file_write",
        args={"path": "config.json"},
        remember_for_turn_allowed=True,
    )


def _permission_decision(ledger: LedgerBuilder) -> dict[str, Any]:
    return ledger.permission_decision("perm_1", "deny")


def _error(ledger: LedgerBuilder) -> dict[str, Any]:
    return ledger.event(
        role="model", author="agent", content={"kind": "error", "message": "stream broke"}
    )


def _steering(ledger: LedgerBuilder) -> dict[str, Any]:
    steering = {"kind": "text", "text": "also check tests", "steering": True}
    return ledger.event(role="user", author="user", content=steering)


Build = Callable[[LedgerBuilder], object]

#: (name, header status, ledger, recoveryReason, lastEventType) — every branch of the rule
LEDGERS: list[tuple[str, str, Build, str, str | None]] = [
    ("no_events", "running", lambda b: None, "run_interrupted", None),
    ("created_no_events", "created", lambda b: None, "run_interrupted", None),
    ("user", "running", lambda b: b.user(), "run_interrupted", "run_started"),
    (
        "model_text",
        "running",
        lambda b: (b.user(), b.text()),
        "model_stream_completed_without_runtime_terminal",
        "model_stream_completed",
    ),
    ("call", "running", lambda b: (b.user(), b.call("c1")), "tool_interrupted", "tool_started"),
    (
        "response",
        "running",
        lambda b: (b.user(), b.call("c1"), b.response("c1")),
        "run_interrupted",
        "tool_completed",
    ),
    (
        "error_response",
        "running",
        lambda b: (b.user(), b.call("c1"), b.response("c1", is_error=True)),
        "run_interrupted",
        "tool_failed",
    ),
    (
        "permission_request",
        "running",
        lambda b: (b.user(), _permission_request(b)),
        "stale_user_wait",
        "permission_requested",
    ),
    (
        "permission_decided",
        "running",
        lambda b: (b.user(), _permission_request(b), _permission_decision(b)),
        "run_interrupted",
        "permission_decided",
    ),
    (
        "waiting_for_user",
        "waiting_for_user",
        lambda b: b.user(),
        "stale_user_wait",
        "run_started",
    ),
    (
        "waiting_model_text",
        "waiting_for_user",
        lambda b: (b.user(), b.text()),
        "model_stream_completed_without_runtime_terminal",
        "model_stream_completed",
    ),
    (
        "stream_error",
        "running",
        lambda b: (b.user(), _error(b)),
        "run_interrupted",
        "model_stream_failed",
    ),
    (
        "steering_after_text",
        "running",
        lambda b: (b.user(), b.text(), _steering(b)),
        "model_stream_completed_without_runtime_terminal",
        "model_stream_completed",
    ),
]


@pytest.mark.parametrize(
    ("status", "build", "reason", "last_type"),
    [case[1:] for case in LEDGERS],
    ids=[case[0] for case in LEDGERS],
)
def test_recovered_terminal_speaks_the_reference_vocabulary(
    restart: Restart,
    app: RuntimeApplication,
    status: str,
    build: Build,
    reason: str,
    last_type: str | None,
) -> None:
    app.ledger.create_run(run_header(SPINE, status=status))
    ledger = LedgerBuilder(SPINE)
    build(ledger)
    if ledger.events:
        app.ledger.append_events("r1", ledger.events)

    report = restart(app).recover()

    assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
        ("r1", "terminal_recovered", {"recoveryReason": reason})
    ]
    terminal = app.read_run_events("r1")[-1]
    delta: dict[str, Any] = {
        "recovered": True,
        "recoveryReason": reason,
        "failureClass": "app_restarted",
    }
    if last_type is not None:
        delta["lastEventType"] = last_type
    assert terminal.to_wire() == {  # continuation.md#recovered-terminal
        **SPINE.envelope(recovered_terminal_id("r1"), NOW, "system", "system"),
        "status": "failed",
        "content": {
            "kind": "error",
            "code": "app_restarted",
            "reason": "app_restarted",
            "message": "app_restarted",
        },
        "actions": {"endInvocation": True, "stateDelta": delta},
    }
    header = app.get_run_header("r1")
    assert (header.status, header.failure_class, header.completed_at) == (
        "failed",
        "app_restarted",
        NOW,
    )
    before = store_snapshot(app).rows
    assert restart(app).recover().repairs == ()
    assert store_snapshot(app).rows == before


def _event(**fields: Any) -> RuntimeEvent:
    return Events.decoded(SPINE, ts=1).event(
        event_id="x", role=fields.pop("role", "system"), **fields
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"actions": {"stateDelta": {"continuationStart": True}}}, "run_started"),
        ({"actions": {"permissionAnswerAccepted": {"requestId": "p"}}}, "permission_decided"),
        (
            {"actions": {"permissionClosureAccepted": {"requestId": "p", "reason": "timed_out"}}},
            "permission_decided",
        ),
        ({"actions": {"stateDelta": {"note": "x"}}}, None),
        ({"actions": {"tokenUsage": {"inputTokens": 1}}}, None),
        ({"actions": {"userQuestionRequest": {"requestId": "q"}}}, None),
        ({"content": {"kind": "text", "text": "system note"}}, None),
        (
            {"role": "model", "content": {"kind": "thinking", "text": "hm"}},
            "model_stream_completed",
        ),
    ],
)
def test_events_without_an_agent_run_counterpart_map_to_none(
    fields: dict[str, Any], expected: str | None
) -> None:
    assert reference_event_type(_event(**fields)) == expected


def test_an_event_without_counterpart_leaves_the_previous_one_deciding() -> None:
    ledger = LedgerBuilder(SPINE)
    ledger.user()
    ledger.call("c1")
    noted = _event(actions={"stateDelta": {"note": "x"}})
    assert last_reference_event_type([*ledger.decoded(), noted]) == "tool_started"


def test_the_reference_fallback_reason_is_kept_for_other_statuses() -> None:
    """Recovery only classifies created / running / waiting_for_user runs, which the earlier
    branches all cover; the reference's fallback stays for any other status."""
    ledger = LedgerBuilder(SPINE)
    ledger.user()
    ledger.call("c1")
    ledger.response("c1")
    assert recovery_reason("completed", ledger.decoded()) == (
        "non_terminal_run_recovered",
        "tool_completed",
    )


# -- terminal fact without a failure class (item: header keeps app_restarted) ---------------


def test_failed_terminal_without_failure_class_gives_the_header_app_restarted(
    restart: Restart,
    app: RuntimeApplication,
) -> None:
    app.ledger.create_run(run_header(SPINE))
    ledger = LedgerBuilder(SPINE)
    ledger.user()
    ledger.terminal("failed", error_code=None)
    app.ledger.append_events("r1", ledger.events)
    events_before = app.ledger.read_run_payloads("r1")

    report = restart(app).recover()

    assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "header_repaired")]
    header = app.get_run_header("r1")
    assert (header.status, header.failure_class) == ("failed", "app_restarted")
    assert app.ledger.read_run_payloads("r1") == events_before  # no new event
    assert app.recovery_status.status("r1").header_matches_terminal  # type: ignore[union-attr]
    assert restart(app).recover().repairs == ()


def test_aborted_terminal_without_abort_source_gives_unknown(
    restart: Restart, app: RuntimeApplication
) -> None:
    app.ledger.create_run(run_header(SPINE))
    ledger = LedgerBuilder(SPINE)
    ledger.user()
    ledger.terminal("aborted")
    app.ledger.append_events("r1", ledger.events)
    restart(app).recover()
    header = app.get_run_header("r1")
    assert (header.status, header.abort_source) == ("cancelled", "unknown")


# -- terminal header without a terminal event --------------------------------------------------


def _force_terminal_header(app: RuntimeApplication, run_id: str, patch: dict[str, Any]) -> None:
    """Another writer (an import, an old build) made the header terminal with no event."""
    run = app._store.load_run(run_id)
    commit_unchecked(
        app,
        RunHeaderUpdated(
            originator_id=run_stream_id(run_id),
            originator_version=run.version + 1,
            patch=patch,
            updated_at=patch["updatedAt"],
        ),
    )


@pytest.mark.parametrize(
    ("build", "patch"),
    [
        (lambda b: None, {"status": "completed", "updatedAt": 1500, "completedAt": 1400}),
        (
            lambda b: (b.user(), b.text()),
            {"status": "cancelled", "updatedAt": 1600, "abortSource": "user_stop"},
        ),
    ],
    ids=["empty_ledger", "events_without_terminal"],
)
def test_terminal_header_without_terminal_event_gets_missing_terminal_event(
    restart: Restart, app: RuntimeApplication, build: Build, patch: dict[str, Any]
) -> None:
    app.ledger.create_run(run_header(SPINE))
    ledger = LedgerBuilder(SPINE)
    build(ledger)
    if ledger.events:
        app.ledger.append_events("r1", ledger.events)
    _force_terminal_header(app, "r1", patch)
    assert app.recovery_status.status("r1").needs_attention  # type: ignore[union-attr]

    report = restart(app).recover()

    ts = patch.get("completedAt", patch["updatedAt"])
    assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "terminal_recovered")]
    events = app.read_run_events("r1")
    assert len(events) == len(ledger.events) + 1
    assert events[-1].to_wire() == {
        **SPINE.envelope(recovered_terminal_id("r1"), ts, "system", "system"),
        "status": "failed",
        "content": {
            "kind": "error",
            "code": "missing_terminal_event",
            "reason": "missing_terminal_event",
            "message": "terminal run header had no terminal RuntimeEvent",
        },
        "actions": {
            "endInvocation": True,
            "stateDelta": {
                "recovered": True,
                "recoveryReason": "missing_terminal_event",
                "failureClass": "missing_terminal_event",
            },
        },
    }
    header = app.get_run_header("r1")
    assert (header.status, header.failure_class) == ("failed", "missing_terminal_event")
    assert (header.updated_at, header.completed_at) == (ts, ts)
    assert not app.recovery_status.status("r1").needs_attention  # type: ignore[union-attr]
    before = store_snapshot(app).rows
    assert restart(app).recover().repairs == ()
    assert store_snapshot(app).rows == before


def test_missing_terminal_repair_interrupted_before_the_header_converges(
    restart: Restart, app: RuntimeApplication, tmp_path: Path
) -> None:
    """The recovered terminal is durable, the header still says completed (a crash between
    the two): the next pass repairs the header from the event and writes nothing else."""
    app.ledger.create_run(run_header(SPINE))
    _force_terminal_header(app, "r1", {"status": "completed", "updatedAt": 1500})
    restart(app).recover()
    expected_events = app.ledger.read_run_payloads("r1")
    expected_header = app.get_run_header("r1").to_wire()

    other = RuntimeApplication.open(str(tmp_path / "other.sqlite"), clock=lambda: NOW)
    try:
        other.open_session("s1", "/workspace")
        other.ledger.create_run(run_header(SPINE))
        _force_terminal_header(other, "r1", {"status": "completed", "updatedAt": 1500})
        other.ledger.append_events("r1", app.read_run_events("r1"))  # the event, not the header
        assert other.get_run_header("r1").status == "completed"
        report = restart(other).recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "header_repaired")]
        assert other.ledger.read_run_payloads("r1") == expected_events
        assert other.get_run_header("r1").to_wire() == expected_header
    finally:
        other.close()


def test_a_terminal_header_changes_only_to_follow_a_durable_fact(
    restart: Restart,
    app: RuntimeApplication,
) -> None:
    app.ledger.create_run(run_header(SPINE))
    _force_terminal_header(app, "r1", {"status": "completed", "updatedAt": 1500})
    before = store_snapshot(app).rows
    with pytest.raises(TerminalConflictError):  # no terminal event to follow
        app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "x"})
    with pytest.raises(HeaderUpdateRefusedError):  # never back to non-terminal
        app.ledger.update_run_header("r1", {"status": "running"})
    assert store_snapshot(app).rows == before
    restart(app).recover()
    backed = store_snapshot(app).rows
    with pytest.raises(HeaderUpdateRefusedError):  # a backed terminal header is final
        app.ledger.update_run_header("r1", {"failureClass": "other"})
    assert store_snapshot(app).rows == backed


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # SQLite file specifics
def test_a_read_model_written_before_the_rule_change_is_rebuilt(
    app: RuntimeApplication, store_url: str
) -> None:
    """A read model of schema 1 said a terminal header without its event needs nothing; on
    open it is dropped and rebuilt, so recovery finds the run."""
    app.ledger.create_run(run_header(SPINE))
    _force_terminal_header(app, "r1", {"status": "completed", "updatedAt": 1500})
    app.recovery_status.catch_up()
    app.close()
    with sqlite3.connect(store_url) as conn:  # what schema 1 stored for this run
        conn.execute("UPDATE maka_es_recovery_status SET needs_attention = 0")
        conn.execute("UPDATE maka_es_recovery_tracking SET schema_version = 1")
    conn.close()

    reopened = RuntimeApplication.open(store_url, clock=lambda: NOW)
    try:
        report = reopened.recover()
        assert [(r.run_id, r.kind) for r in report.repairs] == [("r1", "terminal_recovered")]
        assert reopened.get_run_header("r1").failure_class == "missing_terminal_event"
    finally:
        reopened.close()


def test_a_run_another_process_ends_between_the_view_and_the_write_is_left_to_it(
    restart: Restart, app: RuntimeApplication, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two recoveries of one run (an operator's ``attest`` or ``end-run`` beside a sweeping
    host): the one whose terminal lands second answers nothing for the run instead of failing
    its whole sweep with ``event_id_conflict``, and the run keeps the first one's terminal."""
    app.ledger.create_run(run_header(SPINE, status="running"))
    app.ledger.append_events("r1", [_error(LedgerBuilder(SPINE))])
    sweeping, other = restart(app), restart(app)
    other.clock = lambda: NOW + 5  # the other process's terminal differs (its ts)
    original = StartupRecovery._repair_of
    raced: list[str] = []

    def repair_of(self: StartupRecovery, run: Any) -> Any:
        step = original(self, run)
        if raced or self.ledger is not sweeping.ledger:
            return step

        def racing_step() -> Any:
            raced.extend(r.kind for r in other.recover().repairs)
            return step()

        return racing_step

    monkeypatch.setattr(StartupRecovery, "_repair_of", repair_of)
    report = sweeping.recover()

    assert raced == ["terminal_recovered"]
    assert [r for r in report.repairs if r.kind == "terminal_recovered"] == []
    terminals = [e for e in sweeping.read_run_events("r1") if e.is_terminal]
    assert [(e.id, e.ts) for e in terminals] == [(recovered_terminal_id("r1"), NOW + 5)]
    assert sweeping.get_run_header("r1").status == "failed"
    before = store_snapshot(app).rows
    assert restart(app).recover().repairs == ()
    assert store_snapshot(app).rows == before
