"""Bad input catalogue: every malformed event or command gets its typed error with a stable code,
and the SQLite store's contents (rows, max notification id, file bytes) are unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.testing.builders import Events, LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot

Command = Callable[[RuntimeApplication, LedgerBuilder], Any]


def _event(ledger: LedgerBuilder, **changes: Any) -> dict[str, Any]:
    base = Events.wire(ledger.spine, ts=5000).text("x", event_id="bad-1")
    base.update(changes)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP: Any = object()


def _append(**changes: Any) -> Command:
    return lambda app, ledger: app.ledger.append_event("r1", _event(ledger, **changes))


CATALOGUE: list[tuple[str, Command, str]] = [
    ("unknown envelope key", _append(kind="text"), "invalid_runtime_event"),
    ("missing id", _append(id=_DROP), "invalid_runtime_event"),
    ("empty id", _append(id=""), "invalid_runtime_event"),
    ("ts is a string", _append(ts="1000"), "invalid_runtime_event"),
    ("ts is NaN", _append(ts=float("nan")), "invalid_runtime_event"),
    ("ts is infinite", _append(ts=float("inf")), "invalid_runtime_event"),
    ("partial is a string", _append(partial="false"), "invalid_runtime_event"),
    ("bad role", _append(role="assistant"), "invalid_runtime_event"),
    ("bad author", _append(author="model"), "invalid_runtime_event"),
    ("bad status", _append(status="done"), "invalid_runtime_event"),
    ("null branch", _append(branch=None), "invalid_runtime_event"),
    ("bad content kind", _append(content={"kind": "image"}), "invalid_runtime_event"),
    (
        "function_call without args key",
        _append(content={"kind": "function_call", "id": "c", "name": "Bash"}),
        "invalid_runtime_event",
    ),
    (
        "NaN inside tool args",
        _append(
            content={
                "kind": "function_call",
                "id": "c",
                "name": "Bash",
                "args": {"x": float("nan")},
            }
        ),
        "invalid_runtime_event",
    ),
    (
        "unknown content key",
        _append(content={"kind": "text", "text": "x", "extra": 1}),
        "invalid_runtime_event",
    ),
    ("unknown action", _append(actions={"launchMissiles": True}), "invalid_runtime_event"),
    (
        "bad permission decision",
        _append(actions={"permissionDecision": {"requestId": "p", "decision": "maybe"}}),
        "invalid_runtime_event",
    ),
    (
        "closure not alone",
        _append(
            actions={
                "permissionClosureAccepted": {"requestId": "p", "reason": "timed_out"},
                "endInvocation": True,
            }
        ),
        "invalid_runtime_event",
    ),
    (
        "dispatch with a malformed hash",
        _append(
            role="system",
            author="system",
            content=_DROP,
            actions={
                "toolDispatch": {
                    "protocol": "t1_after_preflight_v1",
                    "operationId": "op",
                    "providerToolCallId": "c",
                    "toolName": "Bash",
                    "canonicalArgsHash": "md5:abc",
                    "recoveryMode": "never_auto_retry",
                }
            },
        ),
        "invalid_runtime_event",
    ),
    (
        "recovery fact of unknown version",
        _append(
            role="system",
            author="system",
            content=_DROP,
            actions={
                "toolRecovery": {"kind": "maka.tool.reconcile_result", "version": 2, "payload": {}}
            },
        ),
        "invalid_runtime_event",
    ),
    (
        "negative high-water ref",
        _append(refs={"sourceRuntimeEventHighWater": -1}),
        "invalid_runtime_event",
    ),
    ("event of another run", _append(runId="r2"), "event_identity_mismatch"),
    ("event of another session", _append(sessionId="s2"), "event_identity_mismatch"),
    ("event of another invocation", _append(invocationId="i9"), "event_identity_mismatch"),
    ("event of another turn", _append(turnId="t9"), "event_identity_mismatch"),
    ("partial event", _append(partial=True), "partial_event_refused"),
    (
        "same id, other content",
        lambda app, ledger: app.ledger.append_event("r1", {**ledger.events[0], "ts": 1}),
        "event_id_conflict",
    ),
    (
        "stale expected high-water",
        lambda app, ledger: app.ledger.append_event("r1", _event(ledger), expected_high_water=5),
        "runtime_offset_mismatch",
    ),
    (
        "append to a missing run",
        lambda app, ledger: app.ledger.append_event("nope", _event(ledger)),
        "run_not_found",
    ),
    (
        "create run in a missing session",
        lambda app, ledger: app.ledger.create_run(
            run_header(sessionId="nope", runId="r9", invocationId="i9")
        ),
        "session_not_found",
    ),
    (
        # the same header again is an exact retry, answered (test_create_run_retry.py)
        "create an existing run with another header",
        lambda app, ledger: app.ledger.create_run(run_header(modelId="another-model")),
        "run_already_exists",
    ),
    (
        "reuse an invocation",
        lambda app, ledger: app.ledger.create_run(run_header(runId="r9")),
        "invocation_spine_conflict",
    ),
    (
        "create a terminal run",
        lambda app, ledger: app.ledger.create_run(
            run_header(runId="r9", invocationId="i9", status="completed")
        ),
        "invalid_run_header",
    ),
    (
        "header with unknown key",
        lambda app, ledger: app.ledger.create_run(
            run_header(runId="r9", invocationId="i9", colour="red")
        ),
        "invalid_run_header",
    ),
    (
        "header without invocation",
        lambda app, ledger: app.ledger.create_run(
            {k: v for k, v in run_header(runId="r9").items() if k != "invocationId"}
        ),
        "invalid_run_header",
    ),
    (
        "open an existing session with another cwd",
        lambda app, ledger: app.open_session("s1", "/x"),
        "session_already_exists",
    ),
    (
        "open an existing session with another workspace identity",
        lambda app, ledger: app.open_session(
            "s1", "/workspace", "workspace:v1:00000000-0000-4000-8000-000000000000"
        ),
        "session_already_exists",
    ),
    (
        "patch an immutable header field",
        lambda app, ledger: app.ledger.update_run_header("r1", {"cwd": "/elsewhere"}),
        "header_update_refused",
    ),
    (
        "terminal header before the terminal event",
        lambda app, ledger: app.ledger.update_run_header("r1", {"status": "completed"}),
        "terminal_conflict",
    ),
    (
        "header patch with a bad status",
        lambda app, ledger: app.ledger.update_run_header("r1", {"status": "exploded"}),
        "invalid_run_header",
    ),
]


@pytest.mark.parametrize(("case", "command", "code"), CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_bad_input_is_refused_and_nothing_is_written(
    store_app: RuntimeApplication, case: str, command: Command, code: str
) -> None:
    store_app.open_session("s1", "/workspace")
    store_app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user()
    store_app.ledger.append_events("r1", ledger.events)
    before = store_snapshot(store_app)
    with pytest.raises(MakaError) as info:
        command(store_app, ledger)
    assert info.value.code == code, f"{case}: {info.value}"
    assert store_snapshot(store_app) == before
    # session, run, invocation binding, registration, the host's lease (ADR 0021), e1
    assert len(before.rows) == 6
    assert [e.id for e in store_app.read_run_events("r1")] == ["e1"]


def test_the_catalogue_is_large_enough() -> None:
    assert len(CATALOGUE) >= 20


def test_typed_errors_name_the_field(memory_app: RuntimeApplication) -> None:
    from maka_es.errors import InvalidRuntimeEventError
    from maka_es.wire.events import RuntimeEvent

    ledger = LedgerBuilder()
    with pytest.raises(InvalidRuntimeEventError) as info:
        RuntimeEvent.model_validate(
            _event(ledger, content={"kind": "function_call", "id": "c", "name": "B"})
        )
    assert info.value.field == "content.args"
    with pytest.raises(InvalidRuntimeEventError) as null_info:
        RuntimeEvent.model_validate(_event(ledger, branch=None))
    assert null_info.value.field == "branch"
