"""Store contract: runs on eventsourcing's in-memory store and on a real SQLite file."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import (
    ConcurrentWriteError,
    EventIdConflictError,
    MakaError,
    RunSealedError,
    RuntimeOffsetMismatchError,
    TerminalConflictError,
)
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot


def _open_run(app: RuntimeApplication, **header: Any) -> None:
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(**header))


def test_append_and_read_in_order(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    ledger.call()
    ledger.response()
    result = any_app.ledger.append_events("r1", ledger.events)
    assert (result.appended, result.retried, result.high_water) == (3, 0, 3)
    ledger.terminal()
    any_app.ledger.append_event("r1", ledger.events[-1], expected_high_water=3)
    assert [e.to_wire() for e in any_app.read_run_events("r1")] == ledger.events
    assert any_app.ledger.run_high_water("r1") == 4


def test_exact_retry_is_a_noop(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    any_app.ledger.append_events("r1", ledger.events)
    before = store_snapshot(any_app)
    result = any_app.ledger.append_events("r1", ledger.events)
    assert (result.appended, result.retried, result.high_water) == (0, 1, 1)
    assert store_snapshot(any_app) == before


def test_retry_with_different_content_is_refused(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    event = ledger.user("first")
    any_app.ledger.append_event("r1", event)
    before = store_snapshot(any_app)
    with pytest.raises(EventIdConflictError) as info:
        any_app.ledger.append_event("r1", {**event, "content": {"kind": "text", "text": "second"}})
    assert info.value.code == "event_id_conflict"
    assert store_snapshot(any_app) == before


def test_a_batch_is_all_or_nothing(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    good = ledger.text()
    bad = {**ledger.text(), "runId": "other"}
    before = store_snapshot(any_app)
    with pytest.raises(MakaError):
        any_app.ledger.append_events("r1", [ledger.events[0], good, bad])
    assert store_snapshot(any_app) == before
    assert any_app.read_run_events("r1") == []


def test_terminal_event_seals_the_run(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    terminal = ledger.terminal("completed")
    any_app.ledger.append_events("r1", ledger.events)
    assert (
        any_app.ledger.append_event("r1", terminal).retried == 1
    )  # exact terminal retry is allowed
    before = store_snapshot(any_app)
    with pytest.raises(RunSealedError) as sealed:
        any_app.ledger.append_event("r1", ledger.text("late"))
    assert sealed.value.code == "run_sealed"
    with pytest.raises(TerminalConflictError) as second:
        any_app.ledger.append_event("r1", ledger.terminal("failed"))
    assert second.value.code == "terminal_conflict"
    assert store_snapshot(any_app) == before


def test_expected_high_water_mismatch(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    any_app.ledger.append_events("r1", ledger.events)
    before = store_snapshot(any_app)
    with pytest.raises(RuntimeOffsetMismatchError) as info:
        any_app.ledger.append_event("r1", ledger.text(), expected_high_water=0)
    assert info.value.code == "runtime_offset_mismatch"
    assert info.value.detail == {
        "expectedRuntimeEventHighWater": 0,
        "actualRuntimeEventHighWater": 1,
    }
    assert store_snapshot(any_app) == before


def test_header_becomes_terminal_only_after_its_terminal_event(any_app: RuntimeApplication) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    any_app.ledger.append_events("r1", ledger.events)
    with pytest.raises(TerminalConflictError):
        any_app.ledger.update_run_header("r1", {"status": "completed", "updatedAt": 2})
    any_app.ledger.append_event("r1", ledger.terminal("failed"))
    with pytest.raises(TerminalConflictError):  # failed fact, completed header
        any_app.ledger.update_run_header("r1", {"status": "completed", "updatedAt": 2})
    with pytest.raises(TerminalConflictError):  # failure class must match the fact
        any_app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "other"})
    header = any_app.ledger.update_run_header(
        "r1", {"status": "failed", "failureClass": "provider_error", "completedAt": 3}
    )
    assert header.status == "failed"
    assert any_app.get_run_header("r1").is_terminal


def test_sessions_and_runs_are_listed(any_app: RuntimeApplication) -> None:
    any_app.open_session("s1", "/a")
    any_app.open_session("s2", "/b", "workspace:v1:00000000-0000-4000-8000-000000000000")
    any_app.ledger.create_run(run_header())
    any_app.ledger.create_run(run_header(runId="r2", invocationId="i2", turnId="t2"))
    assert any_app.list_sessions() == ["s1", "s2"]
    assert [h.run_id for h in any_app.list_runs("s1")] == ["r1", "r2"]
    assert any_app.get_session("s2").workspace_identity is not None
    assert any_app.list_runs("s2") == []


def test_reopen_returns_the_same_events(db_path: Path) -> None:
    ledger = LedgerBuilder()
    ledger.user()
    ledger.call()
    ledger.response()
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        _open_run(app)
        app.ledger.append_events("r1", ledger.events)
        payloads = app.ledger.read_run_payloads("r1")
    with RuntimeApplication.open_sqlite(str(db_path)) as reopened:
        assert [e.to_wire() for e in reopened.read_run_events("r1")] == ledger.events
        assert reopened.ledger.read_run_payloads("r1") == payloads
        assert reopened.list_sessions() == ["s1"]


def test_sqlite_connections_are_wal_and_synchronous_full(sqlite_app: RuntimeApplication) -> None:
    _open_run(sqlite_app)
    datastore = sqlite_app._es.factory.datastore  # type: ignore[attr-defined]
    for is_writer in (False, True):
        connection = datastore.pool.get_connection(is_writer=is_writer)
        try:
            raw = connection._sqlite_conn
            assert raw.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
            assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            datastore.pool.put_connection(connection)


def test_stale_writer_loses_and_is_reloaded_not_reused(db_path: Path) -> None:
    """Two applications on one file: the writer whose view is stale loses on the store's
    uniqueness, and its next command reloads the run (no version gap)."""
    ledger = LedgerBuilder()
    ledger.user()
    with (
        RuntimeApplication.open_sqlite(str(db_path)) as first,
        RuntimeApplication.open_sqlite(str(db_path)) as second,
    ):
        _open_run(first)
        first.ledger.append_events("r1", ledger.events)
        stale = first._store.load_run("r1")
        decision = stale.decide_append([ledger.decoded()[0].model_copy()], committed_at=1.0)
        assert decision.facts == ()  # exact retry: nothing to write
        other = LedgerBuilder(prefix="x")
        other.user("from the stale writer")
        fresh = stale.decide_append(other.decoded(), committed_at=1.0)
        second.ledger.append_event("r1", ledger.text())
        with pytest.raises(ConcurrentWriteError) as info:
            first._store.commit(
                fresh.facts,
                conflict=lambda: ConcurrentWriteError("stale", detail={"runId": "r1"}),
            )
        assert info.value.code == "concurrent_write"
        first.ledger.append_event("r1", ledger.text("after reload"))
        assert [e.id for e in first.read_run_events("r1")] == ["e1", "e2", "e3"]
        assert [e.id for e in second.read_run_events("r1")] == ["e1", "e2", "e3"]


def test_concurrent_writers_at_one_version_exactly_one_wins(db_path: Path) -> None:
    with RuntimeApplication.open_sqlite(str(db_path)) as setup:
        _open_run(setup)
    apps = [RuntimeApplication.open_sqlite(str(db_path)) for _ in range(4)]
    barrier = threading.Barrier(len(apps))
    outcomes: list[str] = []
    lock = threading.Lock()

    def write(index: int) -> None:
        event = LedgerBuilder(prefix=f"w{index}-").user(f"writer {index}")
        barrier.wait()
        try:
            apps[index].ledger.append_event("r1", event, expected_high_water=0)
            result = "won"
        except (ConcurrentWriteError, RuntimeOffsetMismatchError) as exc:
            result = exc.code
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(apps))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for app in apps:
        app.close()
    assert outcomes.count("won") == 1
    assert set(outcomes) <= {"won", "concurrent_write", "runtime_offset_mismatch"}
    with RuntimeApplication.open_sqlite(str(db_path)) as check:
        assert check.ledger.run_high_water("r1") == 1


def test_end_run_commits_the_terminal_fact_before_the_derived_header(
    any_app: RuntimeApplication,
) -> None:
    _open_run(any_app)
    ledger = LedgerBuilder()
    ledger.user()
    any_app.ledger.append_events("r1", ledger.events)
    before = store_snapshot(any_app)
    with pytest.raises(TerminalConflictError) as info:
        any_app.end_run("r1", ledger.text("not an ending"))
    assert info.value.code == "terminal_conflict"
    assert store_snapshot(any_app) == before
    terminal = ledger.terminal("aborted")
    terminal["actions"]["stateDelta"] = {"abortSource": "user"}
    header = any_app.end_run("r1", terminal)
    assert (header.status, header.abort_source, header.completed_at) == (
        "cancelled",
        "user",
        terminal["ts"],
    )
    assert any_app.read_run_events("r1")[-1].id == terminal["id"]
