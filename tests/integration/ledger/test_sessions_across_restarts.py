"""A host repeats ``open_session`` at every start, and lists every run after a restart
(issue 11 §6), on a real SQLite file.

Opening an open session again with the same cwd and workspace identity returns it and writes
nothing; another cwd or identity is refused with ``session_already_exists`` naming what
differs, and nothing is written either. Two writers opening it at once both get the session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import SessionAlreadyExistsError
from maka_es.testing.builders import Spine, run_header
from maka_es.testing.probes import store_snapshot

IDENTITY = "workspace:v1:2d0c8a3e-4b1f-4c6d-8e9a-7f6b5c4d3e2a"


@pytest.fixture(autouse=True)
def _disarm() -> Iterator[None]:
    yield
    failpoints.disarm()


def test_reopening_with_the_same_cwd_and_identity_returns_the_session(store_url: str) -> None:
    with RuntimeApplication.open(store_url, clock=lambda: 1000) as app:
        opened = app.open_session("s1", "/workspace", IDENTITY)
        app.ledger.create_run(run_header(Spine()))
    with RuntimeApplication.open(store_url, clock=lambda: 9000) as app:  # restart
        before = store_snapshot(app)
        again = app.open_session("s1", "/workspace", IDENTITY)
        assert again == app.get_session("s1")
        assert (again.opened_at, again.run_ids) == (opened.opened_at, ("r1",))
        assert store_snapshot(app) == before
        assert app.list_sessions() == ["s1"]


@pytest.mark.parametrize(
    ("cwd", "identity", "fields"),
    [
        ("/elsewhere", IDENTITY, ["cwd"]),
        ("/workspace", None, ["workspaceIdentity"]),
        ("/workspace", "workspace:v1:00000000-0000-4000-8000-000000000000", ["workspaceIdentity"]),
        ("/elsewhere", None, ["cwd", "workspaceIdentity"]),
    ],
)
def test_another_cwd_or_identity_is_refused_and_nothing_is_written(
    store_app: RuntimeApplication, cwd: str, identity: str | None, fields: list[str]
) -> None:
    store_app.open_session("s1", "/workspace", IDENTITY)
    before = store_snapshot(store_app)
    with pytest.raises(SessionAlreadyExistsError) as info:
        store_app.open_session("s1", cwd, identity)
    assert info.value.code == "session_already_exists"
    assert dict(info.value.detail) == {"sessionId": "s1", "fields": fields}
    assert store_snapshot(store_app) == before
    assert store_app.get_session("s1").cwd == "/workspace"


def _race(store_url: str, other_cwd: str) -> RuntimeApplication:
    """Arm the failpoint so that another application opens ``s1`` (with ``other_cwd``) after
    this one found it absent and before this one writes it."""

    def other_writer_first(_: str) -> None:
        failpoints.disarm(failpoints.SESSION_ABSENT_BEFORE_OPEN)
        with RuntimeApplication.open(store_url, clock=lambda: 2000) as other:
            other.open_session("s1", other_cwd)

    failpoints.arm(failpoints.SESSION_ABSENT_BEFORE_OPEN, other_writer_first)
    return RuntimeApplication.open(store_url, clock=lambda: 1000)


def test_two_writers_opening_the_same_session_both_get_it(store_url: str) -> None:
    with _race(store_url, "/workspace") as app:
        session = app.open_session("s1", "/workspace")
        assert (session.session_id, session.cwd) == ("s1", "/workspace")
        assert session.opened_at == 2000  # the other writer's session, not a second one
        assert app.list_sessions() == ["s1"]  # one SessionOpened fact


def test_a_racing_writer_with_another_cwd_is_still_refused(store_url: str) -> None:
    with _race(store_url, "/elsewhere") as app:
        with pytest.raises(SessionAlreadyExistsError) as info:
            app.open_session("s1", "/workspace")
        assert info.value.detail["fields"] == ["cwd"]
        assert app.get_session("s1").cwd == "/elsewhere"


def test_every_run_is_listed_with_its_header(store_url: str) -> None:
    with RuntimeApplication.open(store_url) as app:
        assert app.ledger.list_all_runs() == []
        app.open_session("s1", "/a")
        app.open_session("s2", "/b")
        app.ledger.create_run(run_header(Spine("s1", "i1", "r1", "t1")))
        app.ledger.create_run(run_header(Spine("s2", "i2", "r2", "t2"), cwd="/b"))
        app.ledger.create_run(run_header(Spine("s1", "i3", "r3", "t3"), status="created"))
    with RuntimeApplication.open(store_url) as app:  # after a restart
        headers = app.ledger.list_all_runs()
        assert [(h.run_id, h.session_id, h.status) for h in headers] == [
            ("r1", "s1", "running"),
            ("r2", "s2", "running"),
            ("r3", "s1", "created"),
        ]
        assert headers == [app.get_run_header(run_id) for run_id in ("r1", "r2", "r3")]
