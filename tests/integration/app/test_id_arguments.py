"""Ids and ``open_session`` arguments that no stream can have are typed refusals, on both stores.

Every public entry of ``RuntimeApplication`` and of the asyncio facade that names a session,
run, claim or host by id derives a uuid5 stream id over UTF-8. A lone surrogate (what a
non-UTF-8 command-line byte becomes) raised a raw ``UnicodeEncodeError`` there; now it is
``invalid_runtime_event`` with ``field`` naming the wire field, and nothing is written.
``open_session`` with a non-``str`` argument raised pydantic's ``ValidationError`` or stored
``b"x"`` as ``"x"`` under another stream's id; now it is the same typed refusal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from maka_es import HostConfig
from maka_es.aio import AsyncRuntimeApplication
from maka_es.app import RuntimeApplication
from maka_es.errors import InvalidRuntimeEventError, InvalidWorkspaceError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.wire.events import RuntimeEvent
from tests.support.host_surface import entries_taking

BAD = "\ud800"
#: The parameters that name a stream (operation ids and new ids of a header are not stream ids:
#: they are checked by the tool journal and the header model).
STREAM_ID_PARAMETERS = {"session_id", "run_id", "claim_id", "host_id", "fork_run_id"}

LEDGER = LedgerBuilder(Spine())
EVENT = LEDGER.user()
CALL = LEDGER.call()
START = RuntimeEvent.decode(
    LedgerBuilder(Spine(run_id="r2", invocation_id="i2", turn_id="t2")).continuation_start(
        Spine(), 1
    )
)

Call = Callable[[RuntimeApplication], object]

#: Every public entry of RuntimeApplication and of the plumbing on its service attributes
#: (``service.method``) that takes a stream id, called with the lone surrogate.
SYNC_CALLS: dict[str, tuple[str, Call]] = {
    "open_session": ("sessionId", lambda app: app.open_session(BAD, "/w")),
    "get_session": ("sessionId", lambda app: app.get_session(BAD)),
    "list_runs": ("sessionId", lambda app: app.list_runs(BAD)),
    "start_run": ("sessionId", lambda app: app.start_run(BAD, config=_config())),
    "get_run_header": ("runId", lambda app: app.get_run_header(BAD)),
    "run_exists": ("runId", lambda app: app.run_exists(BAD)),
    "ledger.append_events": ("runId", lambda app: app.ledger.append_events(BAD, [EVENT])),
    "ledger.append_event": ("runId", lambda app: app.ledger.append_event(BAD, EVENT)),
    "ledger.update_run_header": ("runId", lambda app: app.ledger.update_run_header(BAD, {})),
    "end_run": ("runId", lambda app: app.end_run(BAD, LEDGER.terminal())),
    "read_run_events": ("runId", lambda app: app.read_run_events(BAD)),
    "ledger.run_high_water": ("runId", lambda app: app.ledger.run_high_water(BAD)),
    "ledger.read_run_payloads": ("runId", lambda app: app.ledger.read_run_payloads(BAD)),
    "tool_journal.commit_tool_prepared": (
        "runId",
        lambda app: app.tool_journal.commit_tool_prepared(BAD, CALL),
    ),
    "tool_journal.commit_tool_outcome": (
        "runId",
        lambda app: app.tool_journal.commit_tool_outcome(BAD, CALL),
    ),
    "tool_journal.commit_tool_recovery_bundle": (
        "runId",
        lambda app: app.tool_journal.commit_tool_recovery_bundle(
            BAD, "op", reconcile=CALL, decision=CALL
        ),
    ),
    "tool_journal.tool_operations": ("runId", lambda app: app.tool_journal.tool_operations(BAD)),
    "tool_journal.resolve_run": ("runId", lambda app: app.tool_journal.resolve_run(BAD)),
    "attest_operation": (
        "runId",
        lambda app: app.attest_operation(BAD, "op", applied=False, actor="ops"),
    ),
    "fork_run": ("runId", lambda app: app.fork_run(BAD, before_operation="op", actor="ops")),
    "execute_fork": ("runId", lambda app: app.execute_fork(BAD, _no_provider())),
    "plan_resume": ("runId", lambda app: app.plan_resume(BAD)),
    "claims.start_claimed_run": ("runId", lambda app: app.claims.start_claimed_run(BAD, START)),
    "claims.get_claim": ("claimId", lambda app: app.claims.get_claim(BAD)),
    "claims.claim_exists": ("claimId", lambda app: app.claims.claim_exists(BAD)),
    "claims.continuation_start_record": (
        "claimId",
        lambda app: app.claims.continuation_start_record(
            BAD, START, start_kind="runtime_admission"
        ),
    ),
    "ownership.lease": ("hostId", lambda app: app.ownership.lease(BAD)),
    "end_start_only_run": ("runId", lambda app: app.end_start_only_run(BAD)),
    "tool_journal.attestations": ("runId", lambda app: app.tool_journal.attestations(BAD)),
    "run_turn": ("sessionId", lambda app: app.run_turn(BAD, "hello", _no_provider())),
    "resume": ("sessionId", lambda app: app.resume(BAD, _no_provider())),
}

AsyncCall = Callable[[AsyncRuntimeApplication], Awaitable[object]]

#: The same for every entry of the asyncio facade that takes a stream id.
ASYNC_CALLS: dict[str, tuple[str, AsyncCall]] = {
    "open_session": ("sessionId", lambda aio: aio.open_session(BAD, "/w")),
    "get_session": ("sessionId", lambda aio: aio.get_session(BAD)),
    "list_runs": ("sessionId", lambda aio: aio.list_runs(BAD)),
    "get_run_header": ("runId", lambda aio: aio.get_run_header(BAD)),
    "ledger.append_events": ("runId", lambda aio: aio.ledger.append_events(BAD, [EVENT])),
    "ledger.update_run_header": ("runId", lambda aio: aio.ledger.update_run_header(BAD, {})),
    "end_run": ("runId", lambda aio: aio.end_run(BAD, LEDGER.terminal())),
    "read_run_events": ("runId", lambda aio: aio.read_run_events(BAD)),
    "ledger.run_high_water": ("runId", lambda aio: aio.ledger.run_high_water(BAD)),
    "execute_tool": ("runId", lambda aio: aio.execute_tool(BAD, CALL)),
    "tool_journal.commit_tool_prepared": (
        "runId",
        lambda aio: aio.tool_journal.commit_tool_prepared(BAD, CALL),
    ),
    "tool_journal.commit_tool_outcome": (
        "runId",
        lambda aio: aio.tool_journal.commit_tool_outcome(BAD, CALL),
    ),
    "tool_journal.tool_operations": ("runId", lambda aio: aio.tool_journal.tool_operations(BAD)),
    "plan_resume": ("runId", lambda aio: aio.plan_resume(BAD)),
    "start_run": ("sessionId", lambda aio: aio.start_run(BAD, config=_config())),
    "run_exists": ("runId", lambda aio: aio.run_exists(BAD)),
    "ledger.append_event": ("runId", lambda aio: aio.ledger.append_event(BAD, EVENT)),
    "ledger.read_run_payloads": ("runId", lambda aio: aio.ledger.read_run_payloads(BAD)),
    "tool_journal.commit_tool_recovery_bundle": (
        "runId",
        lambda aio: aio.tool_journal.commit_tool_recovery_bundle(
            BAD, "op", reconcile=CALL, decision=CALL
        ),
    ),
    "tool_journal.resolve_run": ("runId", lambda aio: aio.tool_journal.resolve_run(BAD)),
    "attest_operation": (
        "runId",
        lambda aio: aio.attest_operation(BAD, "op", applied=False, actor="ops"),
    ),
    "fork_run": ("runId", lambda aio: aio.fork_run(BAD, before_operation="op", actor="ops")),
    "execute_fork": ("runId", lambda aio: aio.execute_fork(BAD, _no_async_provider())),
    "end_start_only_run": ("runId", lambda aio: aio.end_start_only_run(BAD)),
    "claims.start_claimed_run": ("runId", lambda aio: aio.claims.start_claimed_run(BAD, START)),
    "claims.get_claim": ("claimId", lambda aio: aio.claims.get_claim(BAD)),
    "claims.claim_exists": ("claimId", lambda aio: aio.claims.claim_exists(BAD)),
    "claims.continuation_start_record": (
        "claimId",
        lambda aio: aio.claims.continuation_start_record(
            BAD, START, start_kind="runtime_admission"
        ),
    ),
    "ownership.lease": ("hostId", lambda aio: aio.ownership.lease(BAD)),
    "tool_journal.attestations": ("runId", lambda aio: aio.tool_journal.attestations(BAD)),
    "run_turn": ("sessionId", lambda aio: aio.run_turn(BAD, "hello", _no_async_provider())),
    "resume": ("sessionId", lambda aio: aio.resume(BAD, _no_async_provider())),
}


def _config() -> HostConfig:
    return HostConfig(
        backend_kind="fake", llm_connection_slug="c", model_id="m", permission_mode="ask"
    )


def _no_provider() -> Any:
    class Unused:
        def complete(self, request: object) -> object:
            raise AssertionError("the provider must not be called")

    return Unused()


def _no_async_provider() -> Any:
    class Unused:
        async def complete(self, request: object) -> object:
            raise AssertionError("the provider must not be called")

    return Unused()


def _seeded(app: RuntimeApplication) -> RuntimeApplication:
    """A store that holds one session and one run, so "nothing written" is about a real store."""
    app.open_session("s1", "/w")
    app.ledger.create_run(run_header(Spine()))
    app.ledger.append_events("r1", [EVENT])
    return app


def test_the_tables_cover_every_public_entry_that_takes_a_stream_id() -> None:
    hooks = {"on_events_committed"}  # the host's own override: it is called, never calls
    assert entries_taking(STREAM_ID_PARAMETERS) - hooks == set(SYNC_CALLS) | {"plan_continuation"}
    facade = entries_taking(STREAM_ID_PARAMETERS, AsyncRuntimeApplication)
    assert facade == set(ASYNC_CALLS) | {"plan_continuation"}


@pytest.mark.parametrize("entry", sorted(SYNC_CALLS))
def test_a_lone_surrogate_id_is_a_typed_refusal_and_nothing_is_written(
    store_app: RuntimeApplication, entry: str
) -> None:
    field, call = SYNC_CALLS[entry]
    before = store_snapshot(_seeded(store_app))

    with pytest.raises(InvalidRuntimeEventError) as refused:
        call(store_app)

    assert refused.value.code == "invalid_runtime_event"
    assert refused.value.detail == {"field": field, "reason": "lone_surrogate"}
    assert store_snapshot(store_app) == before


@pytest.mark.parametrize("entry", sorted(ASYNC_CALLS))
def test_the_async_facade_gives_the_same_refusal(store_url: str, entry: str) -> None:
    field, call = ASYNC_CALLS[entry]
    app = _seeded(RuntimeApplication.open(store_url))
    before = store_snapshot(app)

    async def main() -> None:
        async with AsyncRuntimeApplication(app) as aio:
            with pytest.raises(InvalidRuntimeEventError) as refused:
                await call(aio)
            assert refused.value.detail == {"field": field, "reason": "lone_surrogate"}

    asyncio.run(main())
    reopened = RuntimeApplication.open(store_url)
    try:
        assert store_snapshot(reopened).rows == before.rows
    finally:
        reopened.close()


@pytest.mark.parametrize("where", ["session", "source_run"])
def test_planning_a_continuation_with_such_an_id_parks_and_writes_nothing(
    store_url: str, where: str
) -> None:
    app = _seeded(RuntimeApplication.open(store_url, safe_boundary_resume=True))
    before = store_snapshot(app)
    try:
        if where == "session":
            plan = app.plan_continuation(BAD)
        else:
            plan = app.plan_continuation("s1", BAD)
        assert plan.disposition == "park"
        assert store_snapshot(app) == before
    finally:
        app.close()


# --- open_session with arguments that are not text ---------------------------------------------

NOT_TEXT: list[object] = [7, 1.5, True, b"s2", ["s2"], {"id": "s2"}]
OPEN_SESSION_CASES = [
    *[("sessionId", (value, "/w", None)) for value in [*NOT_TEXT, None]],
    *[("cwd", ("s2", value, None)) for value in [*NOT_TEXT, None]],
    *[("workspaceIdentity", ("s2", "/w", value)) for value in NOT_TEXT],
]


@pytest.mark.parametrize(
    ("field", "args"),
    OPEN_SESSION_CASES,
    ids=[f"{field}={args!r}" for field, args in OPEN_SESSION_CASES],
)
def test_open_session_refuses_an_argument_that_is_not_text(
    store_app: RuntimeApplication, field: str, args: tuple[Any, Any, Any]
) -> None:
    before = store_snapshot(_seeded(store_app))

    with pytest.raises(InvalidRuntimeEventError) as refused:
        store_app.open_session(*args)

    assert refused.value.code == "invalid_runtime_event"
    assert refused.value.field == field
    assert store_snapshot(store_app) == before
    assert store_app.list_sessions() == ["s1"]


@pytest.mark.parametrize("where", ["sessionId", "cwd", "workspaceIdentity"])
def test_the_ledger_itself_refuses_them_too(store_app: RuntimeApplication, where: str) -> None:
    args: list[Any] = ["s2", "/w", None]
    args[["sessionId", "cwd", "workspaceIdentity"].index(where)] = b"s2"
    before = store_snapshot(_seeded(store_app))

    with pytest.raises(InvalidRuntimeEventError) as refused:
        store_app.ledger.open_session(*args)

    assert refused.value.field == where
    assert store_snapshot(store_app) == before


@pytest.mark.parametrize("where", ["sessionId", "cwd"])
def test_a_refused_open_publishes_no_workspace_marker(
    tmp_path: Path, store_url: str, where: str
) -> None:
    """With a host config the resolver would publish ``.maka-workspace.json`` in the cwd: a
    refused call (a bad session id checked before it runs; a cwd no path can name refused by
    the resolver itself) leaves the workspace untouched."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    cwd = str(workspace) if where == "sessionId" else f"{workspace}/{BAD}"
    config = _config().model_copy(update={"cwd": str(workspace)})
    app = RuntimeApplication.open(store_url, host_config=config)
    try:
        if where == "sessionId":
            with pytest.raises(InvalidRuntimeEventError) as refused:
                app.open_session(BAD, cwd)
            assert refused.value.field == where
        else:  # a cwd is a path, not a stream id: the resolver's own typed refusal
            with pytest.raises(InvalidWorkspaceError):
                app.open_session("s1", cwd)
        assert list(workspace.iterdir()) == []
        assert app.list_sessions() == []
    finally:
        app.close()
