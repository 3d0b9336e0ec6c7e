"""The SQLite recorder parses each stream id it reads back once (ADR 0045): on the real file,
every row read (a run's facts, the notification log) carries the UUID of its stream, equal to
parsing the text anew, and the memo stays bounded."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from maka_es.adapters import sqlite as sqlite_adapter
from maka_es.app import RuntimeApplication
from maka_es.ledger.model.facts import run_stream_id
from maka_es.testing.builders import Events, Spine, run_header
from tests.conftest import FixedClock


def _app(db: Path) -> RuntimeApplication:
    return RuntimeApplication.open_sqlite(str(db), clock=FixedClock())


def _write(db: Path, runs: int) -> None:
    app = _app(db)
    app.open_session("s1", "/workspace")
    for n in range(runs):
        spine = Spine(invocation_id=f"i{n}", run_id=f"r{n}")
        app.ledger.create_run(run_header(spine))
        app.ledger.append_events(f"r{n}", [Events.wire(spine).text("hi", event_id=f"m{n}")])
    app.close()


def test_rows_read_back_carry_their_streams_uuid(db_path: Path) -> None:
    _write(db_path, 3)
    app = _app(db_path)
    try:
        recorder = app._es.recorder
        assert isinstance(recorder, sqlite_adapter.FailpointSQLiteApplicationRecorder)
        notifications = recorder.select_notifications(1, 1000)
        assert notifications
        for item in notifications:
            assert type(item.originator_id) is UUID
        ids = {item.originator_id for item in notifications}
        for n in range(3):
            stream = run_stream_id(f"r{n}")
            assert stream in ids
            rows = recorder.select_events(stream)
            assert [row.originator_id for row in rows] == [stream] * len(rows)
            assert rows[0].originator_id is rows[-1].originator_id  # parsed once
        assert app.read_run_events("r1")[0].run_id == "r1"
    finally:
        app.close()


def test_the_memo_is_bounded(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(db_path, 3)
    app = _app(db_path)
    try:
        recorder = app._es.recorder
        assert isinstance(recorder, sqlite_adapter.FailpointSQLiteApplicationRecorder)
        sqlite_adapter.STREAM_IDS_KEPT = 2
        try:
            recorder._stream_ids.clear()
            seen = [recorder.convert_originator_id(str(run_stream_id(f"r{n}"))) for n in range(3)]
        finally:
            sqlite_adapter.STREAM_IDS_KEPT = 4096
        assert seen == [run_stream_id(f"r{n}") for n in range(3)]
        assert len(recorder._stream_ids) <= 2
    finally:
        app.close()
