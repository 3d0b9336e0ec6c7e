"""``create_run_with_events``: a run and its first events in ONE save (ADR 0036).

Why: a turn's header and its user message must never exist apart. The command must also hold
the write rules of both commands it joins: the events are checked as a generic append on the
new run (a reserved fact is refused), the header as ``create_run`` (a taken run id with another
header is refused), a refusal writes nothing, and an exact retry writes nothing either.
"""

from __future__ import annotations

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import ReservedFactError, RunAlreadyExistsError
from maka_es.testing.builders import LedgerBuilder, run_header
from tests.support.store_sql import all_rows


def test_run_and_events_land_together_and_an_exact_retry_writes_nothing(
    store_url: str, store_app: RuntimeApplication
) -> None:
    app = store_app
    app.open_session("s1", "/workspace")
    ledger = LedgerBuilder()
    header, user = run_header(), ledger.user(marker=True)
    result = app.run_starts.create_run_with_events(header, [user])
    assert (result.appended, result.retried, result.high_water) == (1, 0, 1)
    assert [e.id for e in app.read_run_events("r1")] == [user["id"]]
    assert app.get_session("s1").run_ids == ("r1",)
    rows = all_rows(store_url)
    again = app.run_starts.create_run_with_events(header, [user])
    assert (again.appended, again.retried) == (0, 1)
    assert all_rows(store_url) == rows


def test_a_refused_event_or_header_writes_nothing(
    store_url: str, store_app: RuntimeApplication
) -> None:
    app = store_app
    app.open_session("s1", "/workspace")
    ledger = LedgerBuilder()
    rows = all_rows(store_url)
    dispatch = ledger.dispatch("c1")  # a T1 fact: only the tool journal writes it
    with pytest.raises(ReservedFactError):
        app.run_starts.create_run_with_events(run_header(), [ledger.user(marker=True), dispatch])
    assert all_rows(store_url) == rows
    assert not app.run_exists("r1")
    app.run_starts.create_run_with_events(run_header(), [ledger.user(marker=True)])
    other = {**run_header(), "cwd": "/elsewhere"}  # the same run id, another header
    rows = all_rows(store_url)
    with pytest.raises(RunAlreadyExistsError):
        app.run_starts.create_run_with_events(other, [ledger.user(marker=True)])
    assert all_rows(store_url) == rows
