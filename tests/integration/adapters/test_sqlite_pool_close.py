"""Closing a SQLite store never closes a connection under a thread that is still using it.

Why: eventsourcing's pool ``close()`` closed the connections in use as well, and ``sqlite3``
connections are shared across threads, so a statement running in another thread stepped on a
freed database handle and the test process died with "Fatal Python error: Segmentation fault"
(``tests/store/test_recorder_contract.py``: the library's reader threads outlive the test and
the tear-down closed the store under them). These tests stop the other thread *between* two
statements, so the old behaviour fails deterministically (the second statement raises
"Cannot operate on a closed database" instead of crashing at random).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.utils import Environment

from maka_es import failpoints
from maka_es.adapters.sqlite import DurableSQLiteDatastore, Factory
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreUnavailableError
from maka_es.testing.builders import LedgerBuilder, run_header

WAIT = 10.0


@pytest.fixture
def factory(tmp_path: Path) -> Iterator[Factory]:
    made = Factory(Environment("maka_es", {"SQLITE_DBNAME": str(tmp_path / "pool.sqlite")}))
    made.application_recorder()  # creates the tables
    yield made
    made.close()


class _Inside:
    """A thread holding a read transaction open until released, then reading once more."""

    def __init__(self, datastore: DurableSQLiteDatastore) -> None:
        self.datastore = datastore
        self.entered = threading.Event()
        self.release = threading.Event()
        self.result: list[Any] = []
        self.errors: list[BaseException] = []
        self.raw: sqlite3.Connection | None = None
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            with self.datastore.transaction(commit=False) as cursor:
                cursor.execute("SELECT 1")
                self.raw = cursor.sqlite_cursor.connection
                self.entered.set()
                assert self.release.wait(WAIT)
                cursor.execute("SELECT count(*) FROM stored_events")
                self.result.append(cursor.fetchone()[0])
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)
        finally:
            self.entered.set()


def test_close_leaves_a_connection_in_use_to_its_thread_then_closes_it(
    factory: Factory,
) -> None:
    datastore = factory.datastore
    assert isinstance(datastore, DurableSQLiteDatastore)
    inside = _Inside(datastore)
    inside.thread.start()
    assert inside.entered.wait(WAIT)

    datastore.close()  # returns at once, with the other thread still inside its transaction
    with pytest.raises(StoreUnavailableError) as refused, datastore.transaction(commit=False):
        pass
    assert refused.value.detail["reason"] == "closed"

    inside.release.set()
    inside.thread.join(WAIT)
    assert not inside.thread.is_alive()
    assert inside.errors == []
    assert inside.result == [0]
    assert inside.raw is not None
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        inside.raw.execute("SELECT 1")  # closed once its thread returned it
    assert datastore.pool.closed


def test_closing_the_application_during_a_write_keeps_the_acknowledged_write(
    db_path: Path,
) -> None:
    """A save stopped inside its transaction (before COMMIT) while another thread closes the
    application: the save commits, and what it acknowledged is in the file."""
    ledger = LedgerBuilder()
    ledger.user()
    app = RuntimeApplication.open_sqlite(str(db_path))
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header())
    inside = threading.Event()
    release = threading.Event()
    outcome: list[object] = []

    def pause(_: str) -> None:
        inside.set()
        assert release.wait(WAIT)

    def write() -> None:
        try:
            outcome.append(app.ledger.append_events("r1", ledger.events).appended)
        except BaseException as exc:  # reported by the test
            outcome.append(exc)

    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, pause)
    try:
        writer = threading.Thread(target=write)
        writer.start()
        assert inside.wait(WAIT)
        app.close()
        release.set()
        writer.join(WAIT)
    finally:
        failpoints.disarm(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
        release.set()
    assert not writer.is_alive()
    assert outcome == [1]
    with RuntimeApplication.open_sqlite(str(db_path)) as reopened:
        assert [event.to_wire() for event in reopened.read_run_events("r1")] == ledger.events
