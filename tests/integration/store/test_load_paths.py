"""The fast loader and the plain loader give the same answers and the same next decisions
(ADR 0037, issue 22, part 4), on generated ledgers, on the SQLite file and PostgreSQL.

Each example builds the same ledger twice, step by step: once by an application with its fast
paths on (a writer folding its own commits from memory, snapshots every few facts, the trusted
reload after a restart), once by one with ``MAKA_ES_FAST_PATHS=n`` (every fact folded, every
row read strictly, eventsourcing's save path). Every step's outcome (accepted, or refused with
the same code and detail) must match; so must the stored rows, and the answers of the warm
writers, of cold reopens, and of the plain loader reading the fast side's own bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from maka_es.adapters.event_store import EventSourcedRunStore
from maka_es.adapters.fact_rows import RecorderFactWriter, SqliteFactWriter
from maka_es.adapters.run_loader import PlainFactMapper
from tests.support.load_paths import (
    Pair,
    Step,
    answers,
    apply,
    fresh_store,
    open_app,
    steps,
    stored_rows,
)

EVERY = 4  # facts between snapshots here, so generated runs are restored from one

pytestmark = pytest.mark.parametrize("kind", ["sqlite", "postgres"])

_examples = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


def _replay(pair: Pair, drawn: list[Step]) -> None:
    """Both sides take every step; each next decision must be the same."""
    for step in drawn:
        if step[0] == "reopen":
            pair.reopen()
            assert answers(pair.fast) == answers(pair.plain)
            continue
        assert apply(pair.fast, step) == apply(pair.plain, step), step


@_examples
@given(drawn=steps)
def test_fast_and_plain_loaders_agree_step_by_step(
    kind: str, request: pytest.FixtureRequest, drawn: list[Step]
) -> None:
    with fresh_store(kind, request) as fast_store, fresh_store(kind, request) as plain_store:
        pair = Pair(fast_store, plain_store)
        try:
            _replay(pair, drawn)
            warm = answers(pair.fast)
            assert warm == answers(pair.plain)
            assert stored_rows(pair.fast) == stored_rows(pair.plain)
        finally:
            pair.close()
        for store in (fast_store, plain_store):
            for fast in (True, False):
                cold = open_app(store, fast=fast)
                try:
                    assert answers(cold) == warm, (store == fast_store, fast)
                finally:
                    cold.close()


@_examples
@given(drawn=steps, last=steps)
def test_the_next_decision_after_a_cold_load_is_the_same(
    kind: str, request: pytest.FixtureRequest, drawn: list[Step], last: list[Step]
) -> None:
    """A cold fast load (snapshot plus tail, trusted reload) and a cold plain load of twin
    stores accept or refuse the same next commands, and end with the same rows."""
    with fresh_store(kind, request) as fast_store, fresh_store(kind, request) as plain_store:
        pair = Pair(fast_store, plain_store)
        try:
            _replay(pair, drawn)
            pair.reopen()
            _replay(pair, [s for s in last if s[0] != "reopen"])
            assert answers(pair.fast) == answers(pair.plain)
            assert stored_rows(pair.fast) == stored_rows(pair.plain)
        finally:
            pair.close()


def test_the_switch_turns_every_fast_path_off(kind: str, request: pytest.FixtureRequest) -> None:
    """``MAKA_ES_FAST_PATHS=n``: no snapshots, no own facts kept, the plain mapper, the
    recorder's own save path; without it every fast path is on where the store has it."""
    with fresh_store(kind, request) as fast_store, fresh_store(kind, request) as plain_store:
        pair = Pair(fast_store, plain_store)
        try:
            plain, fast = pair.plain._store, pair.fast._store
            assert isinstance(plain, EventSourcedRunStore)
            assert isinstance(fast, EventSourcedRunStore)
            assert (plain.loader.fast_paths, fast.loader.fast_paths) == (False, True)
            assert plain.snapshots is None
            assert fast.snapshots is not None
            assert isinstance(pair.plain._es.mapper, PlainFactMapper)
            assert not isinstance(pair.fast._es.mapper, PlainFactMapper)
            assert type(getattr(plain._write, "__self__", None)) is RecorderFactWriter
            writer = SqliteFactWriter if kind == "sqlite" else RecorderFactWriter
            assert type(getattr(fast._write, "__self__", None)) is writer
            assert plain.loader._own_facts == {}
            assert bool(fast.loader._own_facts) is (kind == "sqlite")
        finally:
            pair.close()
