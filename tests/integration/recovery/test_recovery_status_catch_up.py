"""A recovery-status catch-up is linear in what was written since the last one (ADR 0012).

What is pinned here, on real SQLite files: one catch-up loads each run it touches ONCE, however
many pages of the notification log that run's new facts fill (the regression test for the
quadratic catch-up that rebuilt a long run once per page; counted with a probe, never timed);
its rows equal a from-scratch build into another file; and facts written while a batch is read
wait for the next batch instead of stretching the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from eventsourcing.persistence import Notification

from maka_es.adapters.recovery_status import SqliteRecoveryStatusBackend
from maka_es.app import RuntimeApplication
from maka_es.recovery.model.status_store import RecoveryStatusStore
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from tests.support.run_loads import count_loads


def spine(run_id: str) -> Spine:
    return Spine(session_id="s1", invocation_id=f"i-{run_id}", run_id=run_id, turn_id=f"t-{run_id}")


def start_run(app: RuntimeApplication, run_id: str) -> LedgerBuilder:
    app.ledger.create_run(run_header(spine(run_id)))
    ledger = LedgerBuilder(spine(run_id), prefix=f"{run_id}-e")
    app.ledger.append_events(run_id, [ledger.user(marker=True)])
    return ledger


def last_id(app: RuntimeApplication) -> int:
    """The last notification id committed so far."""
    return app._store.max_notification_id()


def from_scratch(app: RuntimeApplication, path: Path) -> RecoveryStatusStore:
    """The read model built from the first notification into another SQLite file."""
    other = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(path)))
    app.recovery_status_projector(other).rebuild()
    return other


@pytest.fixture
def app(sqlite_app: RuntimeApplication) -> RuntimeApplication:
    sqlite_app.open_session("s1", "/workspace")
    return sqlite_app


@pytest.mark.parametrize("page_size", [1, 4, 500])
def test_a_catch_up_loads_each_touched_run_once(
    app: RuntimeApplication,
    db_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    page_size: int,
) -> None:
    ledgers = {run_id: start_run(app, run_id) for run_id in ("r0", "r1", "r2")}
    store = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(db_path)))
    projector = app.recovery_status_projector(store, page_size=page_size)
    projector.catch_up()
    # Many pages of new facts for two runs, interleaved, then a new run and a header.
    for n in range(10):
        app.ledger.append_events("r1", [ledgers["r1"].text(f"a{n}")])
        app.ledger.append_events("r2", [ledgers["r2"].text(f"b{n}")])
    app.ledger.append_events("r2", [ledgers["r2"].terminal("completed")])
    app.ledger.update_run_header("r2", {"status": "completed"})
    start_run(app, "r3")
    new = last_id(app) - store.position()
    assert new > 20

    loaded = count_loads(app, monkeypatch)
    assert projector.catch_up() == new
    assert sorted(loaded) == ["r1", "r2", "r3"]  # once each, r0 untouched

    other = from_scratch(app, tmp_path / "other.sqlite")
    assert store.all() == other.all()
    assert store.position() == other.position() == last_id(app)
    assert [row.run_id for row in store.needing_attention()] == ["r0", "r1", "r3"]
    other.close()
    store.close()


def test_a_rebuild_loads_each_run_once(
    app: RuntimeApplication, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The never-current case: a long run written over many appends is loaded once."""
    ledger = start_run(app, "long")
    for n in range(30):
        app.ledger.append_events("long", [ledger.text(f"step {n}")])
    start_run(app, "short")
    store = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(db_path)))
    projector = app.recovery_status_projector(store, page_size=2)
    loaded = count_loads(app, monkeypatch)
    assert projector.rebuild() == last_id(app)
    assert loaded == ["long", "short"]
    assert [(row.run_id, row.high_water) for row in store.all()] == [("long", 31), ("short", 1)]
    store.close()


def test_facts_written_during_a_batch_wait_for_the_next_batch(
    app: RuntimeApplication, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledgers = {run_id: start_run(app, run_id) for run_id in ("r0", "r1")}
    store = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(db_path)))
    projector = app.recovery_status_projector(store, page_size=2)
    end = last_id(app)
    commits: list[int] = []
    original_commit = store.commit
    original_select = app._store.select_notifications
    written: list[int] = []

    def select(start: int, limit: int) -> Sequence[Notification]:
        if not written:  # another writer commits while the first page is read
            app.ledger.append_events("r1", [ledgers["r1"].terminal("completed")])
            written.append(last_id(app))
        return original_select(start, limit)

    def commit(*args: object, **kwargs: object) -> None:
        commits.append(int(args[2]))  # type: ignore[call-overload]
        original_commit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(app._store, "select_notifications", select)
    monkeypatch.setattr(store, "commit", commit)
    assert projector.catch_up() == written[0]
    assert commits == [end, written[0]]  # the first batch ended where the log ended
    other = from_scratch(app, tmp_path / "other.sqlite")
    assert store.all() == other.all()
    r1 = store.get("r1")
    assert r1 is not None
    assert r1.terminal_event
    other.close()
    store.close()
