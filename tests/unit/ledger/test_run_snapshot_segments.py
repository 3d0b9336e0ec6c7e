"""A snapshot written as a chain of segments, each the change since the one before (ADR 0044),
restores the Run a full fold builds: property over random ledgers (tool facts, duplicates,
bundles, orphans, corruptions, a seal), snapshots written at random facts, prospective checks
(rolled back) between them, and chains continued from a Run restored from an earlier chain."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maka_es.ledger.model.facts import RuntimeEventRecorded, StoredFact, read_recorded_event
from maka_es.ledger.model.run import Run, project_run
from maka_es.ledger.model.run_snapshot import (
    KINDS,
    RunSnapshot,
    dump_run,
    release_events,
    restore_run,
)
from maka_es.wire.events import RuntimeEvent
from tests.unit.ledger.support import new_run
from tests.unit.ledger.test_run_snapshot import (
    POOL,
    _facts,
    _observed,
    events_strategy,
    parts_reader,
)


class Store:
    """The parts stored so far, by digest (what the adapter's table holds)."""

    def __init__(self, log: list[StoredFact]) -> None:
        self.log = log
        self.parts: dict[str, bytes] = {}
        self.latest: RunSnapshot | None = None

    def write(self, run: Run, *, release: bool = True) -> RunSnapshot:
        """Store a snapshot of ``run`` and (``release``) let it keep only its events' ids,
        as the adapter does after a write (ADR 0044)."""
        snapshot = dump_run(run)
        assert set(snapshot.names) <= set(self.parts) | set(snapshot.parts)
        self.parts.update(snapshot.parts)
        snapshot.stored()
        self.latest = snapshot
        if release:
            rows = self._rows(run.version)
            release_events(snapshot, lambda count: rows[:count], lambda at: rows[at])
        return snapshot

    def _rows(self, version: int) -> list[tuple[RuntimeEvent, str]]:
        return [
            (read_recorded_event(f)[0], f.payload)
            for f in self.log[:version]
            if isinstance(f, RuntimeEventRecorded)
        ]

    def restore(self) -> Run:
        assert self.latest is not None
        run = restore_run(self.latest.body, self.latest.run.id, parts_reader(self.parts))
        rows = self._rows(run.version)
        run.attach_history(lambda count: rows[:count], lambda position: rows[position])
        return run


def _full_parts(run: Run) -> dict[str, bytes]:
    """Every part of one full segment of ``run``, by kind: the state, byte for byte."""
    snapshot = dump_run(run, full=True)
    return {kind: snapshot.parts_of(kind) for kind in KINDS}


def _check(
    events: list[RuntimeEvent],
    seal: int,
    writes: set[int],
    restores: set[int],
    probes: list[RuntimeEvent],
) -> None:
    base, created = new_run()
    log = [*created, *_facts(base, events, seal or None)]
    store = Store(log)
    live = project_run(None, log[:1])
    assert live is not None
    for at, fact in enumerate(log[1:], start=1):
        live.resolver.issues_if_fed(probes)  # a prospective check, rolled back
        folded = project_run(live, [fact])
        assert folded is live
        if at in writes or at in restores:
            store.write(live)
        if at in restores:
            live = store.restore()  # the chain continues from a restored Run
    full = project_run(None, log)
    assert full is not None
    assert _observed(live) == _observed(full)  # a Run that released its events answers alike
    assert live.events == full.events
    store.write(live)
    restored = store.restore()
    assert _observed(restored) == _observed(full)
    assert restored.resolver.issues_if_fed(probes) == full.resolver.issues_if_fed(probes)
    assert [restored.committed_payload(e.id) for e in probes] == [
        full.committed_payload(e.id) for e in probes
    ]
    assert _full_parts(restored) == _full_parts(full)
    assert restored.events == full.events


def test_the_pool_with_a_snapshot_after_every_fact() -> None:
    every = set(range(len(POOL) + 2))
    for probes in ([POOL[6]], [POOL[8]], [POOL[2], POOL[3]], [POOL[10]]):
        _check(POOL, 0, every, set(), probes)
        _check(POOL, 4, every, {3, 7}, probes)
        _check(POOL[:6], 3, {2, 5}, {4}, [POOL[6], POOL[7], POOL[8]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=events_strategy,
    seal=st.integers(0, 30),
    writes=st.sets(st.integers(1, 30)),
    restores=st.sets(st.integers(1, 30), max_size=3),
    probes=st.lists(st.sampled_from(POOL), max_size=3),
)
def test_a_chain_of_segments_restores_the_full_fold(
    events: list[RuntimeEvent],
    seal: int,
    writes: set[int],
    restores: set[int],
    probes: list[RuntimeEvent],
) -> None:
    _check(events, seal, writes, restores, probes)


def test_a_segment_holds_only_the_change() -> None:
    """After a snapshot, one more tool step's segment names its own events and operation only
    (O(the change), not O(the run))."""
    base, created = new_run()
    c3 = next(i for i, e in enumerate(POOL) if e.id == "c3")
    log = [*created, *_facts(base, POOL[: c3 + 2], None)]
    store = Store(log)
    run = project_run(None, log[:-2])
    assert run is not None
    first = store.write(run, release=False)
    project_run(run, log[-2:])
    second = store.write(run, release=False)
    assert second.log.segments[:-1] == first.log.segments
    summary = second.parts_of("summary").split(b"\n")
    assert summary[1] == b'["c3","d3"]'  # the two new events' ids
    operations = second.parts_of("operations")
    assert b'"call-3"' in operations
    assert b'"call-1"' not in operations
