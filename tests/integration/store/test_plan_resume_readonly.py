"""Planning never writes: proved on a real SQLite file opened read-only (any write fails inside
SQLite) and, on both stores, by comparing every row of every table, the max notification id
and (SQLite) the file bytes before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.adapters.event_store import is_postgres_url
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreUnavailableError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot
from tests.support.store_sql import all_rows


def _seed(db: Path | str) -> LedgerBuilder:
    ledger = LedgerBuilder()
    ledger.user()
    ledger.call()
    with RuntimeApplication.open(str(db)) as app:
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header())
        app.ledger.append_events("r1", ledger.events)
    return ledger


# SQLite only: the guard is SQLite's own read-only file mode (``mode=ro``).
def test_read_only_application_plans_and_cannot_write(db_path: Path) -> None:
    ledger = _seed(db_path)
    with RuntimeApplication.open_sqlite(str(db_path), read_only=True) as reader:
        before = store_snapshot(reader)
        plan = reader.plan_resume("r1")
        assert plan.disposition == "blocked"
        assert list(plan.rejection_reasons) == ["dangling_tool_state"]
        assert reader.plan_resume("r1", expected_high_water=2) == plan
        with pytest.raises(StoreUnavailableError, match="readonly") as info:
            reader.ledger.append_event("r1", ledger.text())
        assert info.value.code == "store_unavailable"
        assert store_snapshot(reader) == before


def test_read_only_open_on_each_store_plans_and_refuses_every_write(store_url: str) -> None:
    """``open(..., read_only=True)`` on both stores: SQLite's ``mode=ro``, PostgreSQL's
    ``default_transaction_read_only``. A write is a typed refusal inside the store itself and
    leaves every row as it was."""
    ledger = _seed(store_url)
    dump = all_rows(store_url)
    with RuntimeApplication.open(store_url, read_only=True) as reader:
        before = store_snapshot(reader)
        plan = reader.plan_resume("r1")
        assert list(plan.rejection_reasons) == ["dangling_tool_state"]
        with pytest.raises(StoreUnavailableError) as info:
            reader.ledger.append_event("r1", ledger.text())
        assert info.value.code == "store_unavailable"
        with pytest.raises(StoreUnavailableError):
            reader.open_session("s2", "/workspace")
        assert store_snapshot(reader) == before
    assert all_rows(store_url) == dump


def test_planning_leaves_rows_and_file_bytes_unchanged(store_url: str) -> None:
    _seed(store_url)
    with RuntimeApplication.open(store_url) as app:
        before = store_snapshot(app)
        dump = all_rows(store_url)
        # the event rows, and on SQLite the file (and WAL) bytes, are part of the evidence
        assert len(dump["maka_es_events" if is_postgres_url(store_url) else "stored_events"]) > 2
        assert bool(before.file_digests) is not is_postgres_url(store_url)
        for expected in (None, 2, 3):
            app.plan_resume("r1", expected_high_water=expected)
        assert store_snapshot(app) == before
        assert all_rows(store_url) == dump
        mismatch = app.plan_resume("r1", expected_high_water=3)
        assert list(mismatch.rejection_reasons) == [
            "runtime_offset_mismatch",
            "dangling_tool_state",
        ]
