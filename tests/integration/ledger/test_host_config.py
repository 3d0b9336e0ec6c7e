"""Less ceremony for hosts on a real SQLite file (docs/reference/ledger.md#run-header):
a host configuration fills the constant header fields, ``open_session`` resolves the workspace
identity from the cwd's marker (the same one at every restart), and refusals write nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from maka_es import HostConfig
from maka_es.adapters.workspace import WORKSPACE_MARKER_FILE
from maka_es.app import RuntimeApplication
from maka_es.errors import (
    InvalidRunHeaderError,
    SessionAlreadyExistsError,
    WorkspaceNotFoundError,
)
from maka_es.testing.probes import store_snapshot
from tests.conftest import FixedClock

CONFIG = HostConfig(
    backend_kind="ai-sdk",
    llm_connection_slug="openai-main",
    model_id="gpt-test",
    permission_mode="ask",
)


def open_app(db: str, clock: FixedClock, **kwargs: object) -> RuntimeApplication:
    counter = itertools.count(1)
    return RuntimeApplication.open(
        db,
        clock=clock,
        id_factory=lambda: f"id-{next(counter)}",
        host_config=kwargs.pop("host_config", CONFIG),
        **kwargs,
    )


def marker_identity(workspace: Path) -> str:
    marker = json.loads((workspace / WORKSPACE_MARKER_FILE).read_text())
    return f"workspace:v1:{marker['workspaceId']}"


def test_start_run_fills_the_header_from_the_host_config(
    store_url: str, clock: FixedClock, tmp_path: Path
) -> None:
    app = open_app(store_url, clock)
    app.open_session("s1", str(tmp_path))

    header = app.start_run("s1")

    assert (header.run_id, header.invocation_id, header.turn_id) == ("id-1", "id-2", "id-3")
    assert (header.backend_kind, header.llm_connection_slug) == ("ai-sdk", "openai-main")
    assert (header.model_id, header.permission_mode) == ("gpt-test", "ask")
    assert (header.cwd, header.status) == (str(tmp_path), "running")
    assert header.workspace_identity == marker_identity(tmp_path)
    assert header.created_at == header.updated_at
    assert header.created_at <= clock.now
    explicit = app.start_run("s1", run_id="r2", invocation_id="i2", turn_id="t2")
    assert (explicit.run_id, explicit.invocation_id, explicit.turn_id) == ("r2", "i2", "t2")
    app.close()
    reopened = open_app(store_url, clock)
    assert reopened.get_run_header("id-1") == header
    reopened.close()


def test_open_session_resolves_the_same_identity_at_every_restart(
    store_url: str, clock: FixedClock, tmp_path: Path
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    app = open_app(store_url, clock, host_config=CONFIG.model_copy(update={"cwd": str(workspace)}))
    first = app.open_session("s1")  # cwd from the host config
    assert first.cwd == str(workspace)
    assert first.workspace_identity == marker_identity(workspace)
    app.close()

    restarted = open_app(store_url, clock)
    again = restarted.open_session("s1", str(workspace))  # a restart: same session, no refusal
    assert again == first
    with pytest.raises(SessionAlreadyExistsError) as refused:
        restarted.open_session("s1", str(workspace), workspace_identity="workspace:v1:other")
    assert refused.value.detail["fields"] == ["workspaceIdentity"]
    restarted.close()


def test_an_unresolvable_cwd_is_refused_before_anything_is_written(
    store_url: str, clock: FixedClock, tmp_path: Path
) -> None:
    app = open_app(store_url, clock)
    before = store_snapshot(app)

    with pytest.raises(WorkspaceNotFoundError):
        app.open_session("s1", str(tmp_path / "missing"))

    assert store_snapshot(app) == before
    assert app.list_sessions() == []
    app.close()


def test_start_run_without_a_host_config_writes_nothing(store_url: str, clock: FixedClock) -> None:
    app = RuntimeApplication.open(store_url, clock=clock)
    app.open_session("s1", "/work/project")  # no resolver without a host config: unchanged
    assert app.get_session("s1").workspace_identity is None
    before = store_snapshot(app)

    with pytest.raises(InvalidRunHeaderError) as refused:
        app.start_run("s1", run_id="r1")

    assert refused.value.code == "invalid_run_header"
    assert store_snapshot(app) == before
    assert app.run_exists("r1") is False
    app.start_run("s1", run_id="r1", invocation_id="i1", turn_id="t1", config=CONFIG)
    assert app.get_run_header("r1").model_id == "gpt-test"
    app.close()
