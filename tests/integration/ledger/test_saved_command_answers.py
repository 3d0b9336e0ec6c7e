"""A command whose COMMIT returned is saved: its answer never depends on reading the store
again. Before, ``end_run`` (via ``update_run_header``) and ``open_session`` re-read what they had
just written, so a store fault between the COMMIT and that read (PostgreSQL stopped at that
instant, found by the immediate-shutdown crash test) reported ``store_unavailable`` - "nothing
written" - for a command that was durable. And a host retrying such an ``end_run`` was refused
with ``header_update_refused``; an exact retry now answers the saved header and writes nothing.

The fault is injected at the exact point on the real stores: after the store's real ``commit``
returns, every later load raises the typed fault a lost connection raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from maka_es.adapters.event_store import EventSourcedRunStore
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreUnavailableError, TerminalConflictError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot


@pytest.fixture
def reads_fail_after_commit(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Arm with ``armed.append("x")``: from the next real COMMIT on, every load fails, until
    ``armed.clear()``."""
    armed: list[str] = []
    real_commit = EventSourcedRunStore.commit
    real_load = EventSourcedRunStore.load

    def commit(self: EventSourcedRunStore, facts: Any, **kwargs: Any) -> None:
        real_commit(self, facts, **kwargs)
        if armed:
            armed.append("committed")

    def load(self: EventSourcedRunStore, *args: Any, **kwargs: Any) -> Any:
        if "committed" in armed:
            raise StoreUnavailableError(
                "connection lost after COMMIT", detail={"reason": "connection_lost"}
            )
        return real_load(self, *args, **kwargs)

    monkeypatch.setattr(EventSourcedRunStore, "commit", commit)
    monkeypatch.setattr(EventSourcedRunStore, "load", load)
    yield armed
    monkeypatch.undo()


def _ended_run(app: RuntimeApplication) -> tuple[LedgerBuilder, dict[str, Any]]:
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    app.ledger.append_events("r1", [ledger.user()])
    return ledger, ledger.terminal("completed")


def test_end_run_answers_the_saved_header_when_a_read_after_commit_fails(
    store_url: str, reads_fail_after_commit: list[str]
) -> None:
    with RuntimeApplication.open(store_url) as app:
        _, terminal = _ended_run(app)
        # armed after the terminal event's own commit: the header COMMIT is the one followed
        # by failing reads
        app.ledger.append_events("r1", [terminal])
        reads_fail_after_commit.append("armed")
        header = app.end_run("r1", terminal)
    assert header.status == "completed"
    assert header.completed_at == terminal["ts"]
    reads_fail_after_commit.clear()
    with RuntimeApplication.open(store_url) as check:
        assert check.get_run_header("r1") == header


def test_open_session_answers_the_saved_session_when_a_read_after_commit_fails(
    store_url: str, reads_fail_after_commit: list[str]
) -> None:
    with RuntimeApplication.open(store_url) as app:
        reads_fail_after_commit.append("armed")
        opened = app.open_session("s1", "/workspace", workspace_identity="w1")
    assert (opened.session_id, opened.cwd, opened.workspace_identity, opened.run_ids) == (
        "s1",
        "/workspace",
        "w1",
        (),
    )
    reads_fail_after_commit.clear()
    with RuntimeApplication.open(store_url) as check:
        assert check.get_session("s1") == opened


def test_an_exact_retry_of_a_saved_end_run_answers_its_header_and_writes_nothing(
    store_url: str,
) -> None:
    with RuntimeApplication.open(store_url) as app:
        ledger, terminal = _ended_run(app)
        ended = app.end_run("r1", terminal)
        before = store_snapshot(app)
        assert app.end_run("r1", terminal) == ended
        assert store_snapshot(app) == before
        other = ledger.terminal("failed")
        with pytest.raises(TerminalConflictError) as info:  # a different ending: refused
            app.end_run("r1", other)
        assert info.value.code == "terminal_conflict"
        assert store_snapshot(app) == before
