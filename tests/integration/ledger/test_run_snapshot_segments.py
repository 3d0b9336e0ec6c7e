"""Snapshots as a chain of segments on the real stores (ADR 0044): a snapshot write stores the
change since the last one, never the whole run; an exact retry of an event older than the
snapshot reads only that event's fact; a chain that does not join up, or whose older segments
another writer dropped, is never trusted (a full replay, or a fresh full chain)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from maka_es.adapters import run_snapshots
from maka_es.adapters.run_snapshots import RunSnapshots, SnapshotTable
from maka_es.app import RuntimeApplication
from maka_es.errors import EventIdConflictError, StoreCorruptionError
from maka_es.ledger.model.facts import run_stream_id
from maka_es.ledger.model.run import Run
from maka_es.ledger.model.run_snapshot import dump_run
from maka_es.testing.builders import Events, Spine, run_header
from tests.conftest import FixedClock
from tests.integration.ledger.test_run_snapshots import (
    EVERY,
    _full_replay,
    _reopened,
    _row,
    _snapshots,
    _sql,
    _write_run,
)


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


def _written_size(snapshot: Any) -> int:
    """The bytes a snapshot write hands the store (a whole body, or a body and new parts)."""
    if isinstance(snapshot, str):
        return len(snapshot.encode())
    return len(snapshot.body) + sum(len(part) for part in snapshot.parts.values())


def test_each_snapshot_writes_only_the_change(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live run snapshotted every EVERY facts: the tenth write costs what the second did,
    though the run is five times longer (it rewrote the whole state before ADR 0044)."""
    sizes: list[int] = []
    real = dump_run

    def spy(run: Any, **kwargs: Any) -> Any:
        snapshot = real(run, **kwargs)
        sizes.append(_written_size(snapshot))
        return snapshot

    monkeypatch.setattr(run_snapshots, "dump_run", spy)
    _write_run(store_url, steps=60)
    assert len(sizes) >= 10
    assert max(sizes[-3:]) <= 2 * sizes[1], sizes
    monkeypatch.undo()
    answers, folded, total = _reopened(store_url)
    assert folded == total - _row(store_url)[0]  # the chain restores: only the tail folded
    assert answers == _full_replay(store_url)


def _appended(store: str, event: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    app = RuntimeApplication.open(store, clock=FixedClock(), env=env or {})
    try:
        return app.ledger.append_events("r1", [event])
    finally:
        app.close()


def test_an_exact_retry_of_an_older_event_reads_only_its_fact(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_run(store_url)
    first = Events.wire().user("fix the port", event_id="u1", marker=True)
    histories: list[object] = []
    real = RunSnapshots._history

    def counted(self: RunSnapshots, *args: Any) -> Any:
        histories.append(args)
        return real(self, *args)

    monkeypatch.setattr(RunSnapshots, "_history", counted)
    rows_before = _sql(store_url, "SELECT COUNT(*) FROM {e}")
    result = _appended(store_url, first)
    assert result.retried == 1
    assert histories == []  # the whole history was never read
    assert _sql(store_url, "SELECT COUNT(*) FROM {e}") == rows_before
    plain = _appended(store_url, first, {"MAKA_ES_FAST_PATHS": "n"})
    assert (plain.retried, plain.high_water) == (result.retried, result.high_water)
    changed = Events.wire().user("fix the port!", event_id="u1", marker=True)
    with pytest.raises(EventIdConflictError):
        _appended(store_url, changed)
    with pytest.raises(EventIdConflictError):
        _appended(store_url, changed, {"MAKA_ES_FAST_PATHS": "n"})


def test_an_older_event_whose_id_changed_in_the_ledger_is_a_typed_error(store_url: str) -> None:
    _write_run(store_url)
    rows = _sql(store_url, "SELECT originator_id, state FROM {e} WHERE originator_version = 2")
    ((stream, state),) = [row for row in rows if b'"event_id":"u1"' in bytes(row[1])]
    changed = bytes(state).replace(b'"event_id":"u1"', b'"event_id":"u9"')
    changed = changed.replace(b'\\"id\\":\\"u1\\"', b'\\"id\\":\\"u9\\"')
    _sql(
        store_url,
        "UPDATE {e} SET state = {p} WHERE originator_version = 2 AND originator_id = {p}",
        (changed, stream),
    )
    with pytest.raises(StoreCorruptionError):
        _appended(store_url, Events.wire().user("fix the port", event_id="u1", marker=True))


def test_a_chain_whose_segments_do_not_join_is_ignored(store_url: str) -> None:
    _write_run(store_url, steps=30)
    _, _, _, body = _row(store_url)
    values, chain = bytes(body).split(b"\n")
    segments = json.loads(chain)
    assert len(segments) >= 3
    forged = values + b"\n" + json.dumps([segments[0], *segments[2:]]).encode()
    digest = hashlib.sha256(forged).hexdigest()
    _sql(store_url, "UPDATE {t} SET body = {p}, digest = {p}", (forged, digest))
    answers, folded, total = _reopened(store_url)
    assert folded == total  # a full replay
    assert answers == _full_replay(store_url)
    assert _row(store_url)[2] != digest  # and a fresh snapshot replaced it


def test_a_write_after_its_older_segments_were_dropped_writes_anew(store_url: str) -> None:
    """Another writer's snapshot may drop the segments a live Run's chain still names; that
    Run's next snapshot then writes one full segment, and the chain it names is all stored."""
    _write_run(store_url)
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:
        kit = Events.wire()
        app.ledger.append_events("r1", [kit.text("warm", event_id="w0")])
        version = _row(store_url)[0]
        _sql(store_url, "DELETE FROM {t}_parts")
        for i in range(EVERY + 1):
            app.ledger.append_events("r1", [kit.text(f"more {i}", event_id=f"w{i + 1}")])
        assert _row(store_url)[0] > version  # a snapshot was written after the drop
        # the full segment needs every operation: the ones never read are recomputed
        assert _snapshots(app).table.parts_replayed <= 2
    finally:
        app.close()
    segments = json.loads(bytes(_row(store_url)[3]).split(b"\n")[1])
    stored = {digest for (digest,) in _sql(store_url, "SELECT digest FROM {t}_parts")}
    assert len(segments) == 1
    assert {digest for segment in segments for digest in segment} <= stored
    answers, folded, total = _reopened(store_url)
    assert folded == total - _row(store_url)[0]
    assert answers == _full_replay(store_url)


def test_the_first_tool_step_after_a_reopen_reads_only_the_segments_it_needs(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reopened run whose snapshot lags and covers a T1 without its T2: the T2 looks its
    operation up in the one segment that last wrote it, never building every operation of the
    run (ADR 0044); the answers are a full replay's."""
    _write_run(store_url, steps=30)
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:  # a snapshot that covers the T1 of "cz", and a tail after it
        for i in range(EVERY + 3):
            app.ledger.append_events("r1", [Events.wire().text(f"t{i}", event_id=f"t{i}")])
    finally:
        app.close()
    whole: list[str] = []
    single: list[str] = []
    real_reader, real_one = SnapshotTable._reader, SnapshotTable._one

    def reader(table: SnapshotTable, *args: Any) -> Any:
        read = real_reader(table, *args)

        def counted(kind: str, digests: Any) -> Any:
            whole.append(kind)
            return read(kind, digests)

        return counted

    def one(table: SnapshotTable, stream_id: Any, digest: str) -> bytes | None:
        single.append(digest)
        return real_one(table, stream_id, digest)

    monkeypatch.setattr(SnapshotTable, "_reader", reader)
    monkeypatch.setattr(SnapshotTable, "_one", one)
    segments = len(json.loads(bytes(_row(store_url)[3]).split(b"\n")[1]))
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:
        kit = Events.wire()
        app.tool_journal.commit_tool_outcome("r1", kit.bound_response("cz", "Echo", {"n": -1}))
        assert _snapshots(app).facts_folded_cold > 0  # the snapshot lagged: a tail was folded
    finally:
        app.close()
    assert whole == ["summary"]  # the summaries with the body; no operations or journal in full
    assert 0 < len(single) <= 4 < 2 * segments  # a segment or two of each kind, not all
    monkeypatch.undo()
    answers, _, _ = _reopened(store_url)
    assert answers == _full_replay(store_url)


def test_a_live_run_keeps_only_the_ids_of_the_events_its_snapshot_covers(
    store_url: str,
) -> None:
    """After its snapshot is stored, the commands' cached Run holds the covered events' ids
    only (the cyclic GC's full collections over every event stalled long live runs); the
    next commands answer as the plain path does (ADR 0044)."""
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:  # the run is created and written in this process: its Run was never restored
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header(Spine()))
        kit = Events.wire()
        app.ledger.append_events("r1", [kit.user("fix the port", event_id="u1", marker=True)])
        for i in range(EVERY + 2):
            app.ledger.append_events("r1", [kit.text(f"live {i}", event_id=f"l{i}")])
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call("cz", "Echo", {"n": -1}, event_id="callz")
        )
        for i in range(EVERY + 2):
            app.ledger.append_events("r1", [kit.text(f"more {i}", event_id=f"n{i}")])
        cache = app._es._repository.cache
        assert cache is not None
        cached = cache.get(run_stream_id("r1"))
        assert isinstance(cached, Run)
        assert not cached.events_in_memory
        assert len(cached._events) <= EVERY + 3  # the events since the snapshot only
        retried = app.ledger.append_events("r1", [kit.text("live 0", event_id="l0")])
        assert retried.retried == 1
        app.tool_journal.commit_tool_outcome("r1", kit.bound_response("cz", "Echo", {"n": -1}))
    finally:
        app.close()
    assert _reopened(store_url)[0] == _full_replay(store_url)
