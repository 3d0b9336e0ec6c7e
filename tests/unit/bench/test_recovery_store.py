"""The recovery workload's store (bench/recovery_store.py) is a real store written by the
library from several processes, and holds what its shape says: the runs, their events, 1%
interrupted (a T1 with no T2). Read back through the public API. No timing is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.recovery_store import RUNS_PER_SESSION, STORE, Shape, build, retrying
from bench.stores import open_app
from maka_es.errors import ConcurrentWriteError


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recovery")
    build(root / "cache", Shape(runs=201, events_per_run=8), scratch=root / "tmp", workers=2)
    assert not (root / "tmp").exists()  # the scratch copy is moved, not left behind
    return root / "cache" / STORE


def test_the_store_holds_every_run_with_its_events(store: Path) -> None:
    app = open_app(store)
    try:
        headers = app.ledger.list_all_runs()
        assert sorted(h.run_id for h in headers) == sorted(f"r{n}" for n in range(201))
        for run_id in ("r0", "r98", "r99", "r150", "r200"):
            assert len(app.read_run_events(run_id)) == 8
        sessions = {h.session_id for h in headers}
        assert sessions == {f"s{k}" for k in range(3)}  # 100, 100 and 1 runs
        assert all(h.session_id == f"s{int(h.run_id[1:]) // RUNS_PER_SESSION}" for h in headers)
    finally:
        app.close()


def test_one_percent_end_on_a_t1_with_no_t2(store: Path) -> None:
    app = open_app(store)
    try:
        unsettled = {
            h.run_id
            for h in app.ledger.list_all_runs()
            if any(op.is_unsettled for op in app.tool_journal.tool_operations(h.run_id))
        }
        statuses = {h.run_id: h.status for h in app.ledger.list_all_runs()}
    finally:
        app.close()
    assert (
        unsettled
        == {"r99", "r199"}
        == {f"r{n}" for n in range(201) if Shape(201, 8).interrupted(n)}
    )
    assert {statuses[r] for r in unsettled} == {"running"}
    assert {s for r, s in statuses.items() if r not in unsettled} == {"completed"}


def test_the_layout_depends_on_the_shape_alone() -> None:
    shape = Shape(runs=10_000, events_per_run=100)
    groups = list(shape.groups())
    assert len(groups) == 100
    assert all(len(g) == RUNS_PER_SESSION for g in groups)
    assert shape.interrupted_count() == 100  # 1% of 10k
    assert Shape(runs=20, events_per_run=10).interrupted_count() == 1  # a small store has one
    assert shape.params() == {"runs": 10_000, "events_per_run": 100, "runs_per_session": 100}


def test_a_write_that_lost_a_race_is_retried_then_the_error_stands() -> None:
    tries: list[int] = []

    def loses_twice() -> None:
        tries.append(1)
        if len(tries) < 3:
            raise ConcurrentWriteError("session s1 changed concurrently; retry")

    retrying(loses_twice)
    assert len(tries) == 3

    def always_loses() -> None:
        tries.append(1)
        raise ConcurrentWriteError("session s1 changed concurrently; retry")

    tries.clear()
    with pytest.raises(ConcurrentWriteError):
        retrying(always_loses, attempts=4)
    assert len(tries) == 4
