"""A run restored from its snapshot answers a first append without parsing its older ids or
building their map, and a duplicate of an older id is still refused as a full replay refuses
it (ADR 0032)."""

from __future__ import annotations

import pytest

from maka_es import RuntimeApplication
from maka_es.adapters.run_loader import FAST_PATHS_ENV
from maka_es.ledger.model.facts import run_stream_id
from maka_es.ledger.model.run import Run
from maka_es.testing.builders import Events
from maka_es.tooljournal.model.scanner import SnapshotPositions
from tests.conftest import FixedClock
from tests.integration.ledger.test_run_snapshots import EVERY, _write_run


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


def _positions(app: RuntimeApplication) -> SnapshotPositions:
    positions = app.ledger.load_run("r1").resolver._positions
    assert isinstance(positions, SnapshotPositions)  # restored from the snapshot
    return positions


def _append(store: str, event_id: str, text: str, *, snapshots: bool) -> object:
    plain = None if snapshots else {FAST_PATHS_ENV: "n"}  # the plain loader: no snapshot
    app = RuntimeApplication.open(store, clock=FixedClock(), env=plain)
    try:
        app.ledger.append_events("r1", [Events.wire().text(text, event_id=event_id)])
        return app.ledger.read_run_payloads("r1")[-1]
    except Exception as exc:  # the refusal itself is compared
        return type(exc), getattr(exc, "code", None)
    finally:
        app.close()


def test_a_first_append_builds_no_id_map(store_url: str) -> None:
    _write_run(store_url)
    _append(store_url, "m-tip", "a snapshot at the tip", snapshots=True)  # no snapshot to write
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:
        positions = _positions(app)
        kit = Events.wire()
        app.ledger.append_events("r1", [kit.text("one more", event_id="m-new")])
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call("cn", "Echo", {"n": 99}, event_id="call-new")
        )
        assert not positions.built
        assert not positions._ids.parsed
        assert app.ledger.load_run("r1").high_water == 1 + 15 * 4 + 6
    finally:
        app.close()


def test_a_duplicate_of_an_older_id_is_judged_as_a_full_replay_judges_it(store_url: str) -> None:
    _write_run(store_url)
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:
        positions = _positions(app)
        assert "m0" in positions  # an id the snapshot covers: found in its one segment
        assert not positions.built  # not the whole map (issue 23, target 2)
    finally:
        app.close()
    restored = _append(store_url, "m0", "another text", snapshots=True)
    replayed = _append(store_url, "m0", "another text", snapshots=False)
    assert restored == replayed
    assert isinstance(restored, tuple)  # refused, not appended


def test_a_restored_run_finds_each_older_id_where_the_full_map_has_it(store_url: str) -> None:
    """Each id's position, looked up in the one segment holding its CRC, is the plain
    loader's; an id no segment holds is not there; none of it builds the map."""
    _write_run(store_url)
    _append(store_url, "m-tip", "a snapshot at the tip", snapshots=True)
    plain = RuntimeApplication.open(store_url, clock=FixedClock(), env={FAST_PATHS_ENV: "n"})
    try:
        expected = dict(plain.ledger.load_run("r1").resolver._positions)
    finally:
        plain.close()
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:
        positions = _positions(app)
        assert len(positions._ids) > 20  # most ids are the snapshot's
        assert positions._segments is not None
        assert len(positions._segments.segments) > 1  # a chain of several segments
        assert {key: positions.get(key) for key in expected} == expected
        assert positions.get("no-such-id") is None
        assert "no-such-id" not in positions
        assert not positions.built
        assert dict(positions) == expected  # and the built map agrees
    finally:
        app.close()


def test_an_exact_retry_of_an_older_event_reads_one_segment_of_ids(store_url: str) -> None:
    """An exact retry of an event the chain covers finds its position and checks its id in
    the one segment holding it: it parses no other segment's ids and builds no map (issue 23,
    target 2: it parsed and mapped every id of the run)."""
    _write_run(store_url)
    _append(store_url, "m-tip", "a snapshot at the tip", snapshots=True)
    first = Events.wire().user("fix the port", event_id="u1", marker=True)
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    try:
        result = app.ledger.append_events("r1", [first])
        cache = app._es._repository.cache
        assert cache is not None
        run = cache.get(run_stream_id("r1"))  # the Run the command decided on
        assert isinstance(run, Run)
        positions = run.resolver._positions
        assert isinstance(positions, SnapshotPositions)  # restored from the snapshot
        assert result.retried == 1
        assert not positions._ids.parsed
        assert not positions.built
        assert positions._segments is not None
        assert len(positions._segments.segments) > 1
        assert list(positions._ids._parts) == [0]  # the first segment's ids only
    finally:
        app.close()
    plain = RuntimeApplication.open(store_url, clock=FixedClock(), env={FAST_PATHS_ENV: "n"})
    try:
        again = plain.ledger.append_events("r1", [first])
        assert (again.retried, again.high_water) == (result.retried, result.high_water)
    finally:
        plain.close()
