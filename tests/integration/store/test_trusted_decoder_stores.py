"""The trusted decoders on the real stores (ADR 0045), SQLite file and PostgreSQL: a cold
reader with its fast paths on reads the events, tool operations and plans the plain loader
(every row validated strictly) reads, for a short run folded from its first fact and for an
imported long run restored from its snapshot; a tampered row (its digest kept) is read as the
plain loader reads it, or refused with the same typed error and nothing written."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
import pytest

from maka_es.adapters.event_store import is_postgres_url
from maka_es.app import RuntimeApplication
from maka_es.errors import InvalidRuntimeEventError
from maka_es.ledger.model.facts import RuntimeEventRecorded
from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from tests.support.load_paths import open_app
from tests.support.store_sql import pg_server_and_schema

TOPIC = RuntimeEventRecorded.TOPIC
LONG = 1_200  # more than SNAPSHOT_EVERY: the import writes a snapshot, a cold load restores it


def _write(store: str) -> None:
    app = open_app(store, fast=True)
    try:
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header(Spine()))
        kit = Events.wire()
        app.ledger.append_events("r1", [kit.user("fix the port", event_id="u1", marker=True)])
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call("c1", "Echo", {"text": "a", "n": [1, 2.5]}, event_id="call1")
        )
        app.tool_journal.commit_tool_outcome("r1", kit.bound_response("c1", "Echo", {"ok": 1}))
        app.ledger.append_events("r1", [kit.text("hello there", event_id="m1")])
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call("c2", "Echo", {"x": None}, event_id="call2")
        )
        long = Spine(invocation_id="i2", run_id="r2")
        builder = LedgerBuilder(spine=long)
        builder.user("go", marker=True)
        for n in range(LONG // 3):
            builder.text(f"step {n}")
            builder.call(f"c{n}", "Echo", {"text": f"step {n}"})
            builder.response(f"c{n}", "Echo", {"kind": "text", "text": f"step {n}"})
        app.ledger.import_run(run_header(long), builder.events)
    finally:
        app.close()


def _answers(app: RuntimeApplication, run_id: str) -> dict[str, Any]:
    return {
        "events": [e.to_wire() for e in app.read_run_events(run_id)],
        "operations": app.ledger.load_run(run_id).tool_operations,
        "plan": app.plan_resume(run_id),
    }


def _both(store: str, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    fast, plain = open_app(store, fast=True), open_app(store, fast=False)
    try:
        return _answers(fast, run_id), _answers(plain, run_id)
    finally:
        fast.close()
        plain.close()


@pytest.mark.parametrize("run_id", ["r1", "r2"])
def test_a_cold_reader_answers_as_the_plain_loader(store_url: str, run_id: str) -> None:
    _write(store_url)
    fast, plain = _both(store_url, run_id)
    assert fast == plain
    assert fast["plan"].disposition == ("blocked" if run_id == "r1" else "safe_replay")


def _rewrite(store: str, old: str, new: str) -> None:
    """Another process changes one stored payload in place (its digest kept)."""
    old, new = old.replace('"', '\\"'), new.replace('"', '\\"')
    if is_postgres_url(store):
        server, schema = pg_server_and_schema(store)
        with psycopg.connect(server, autocommit=True) as conn:
            changed = conn.execute(
                f'UPDATE "{schema}".maka_es_events SET state = convert_to('
                "replace(convert_from(state, 'UTF8'), %s, %s), 'UTF8') "
                "WHERE topic = %s AND position(%s in convert_from(state, 'UTF8')) > 0",
                (old, new, TOPIC, old),
            ).rowcount
    else:
        connection = sqlite3.connect(store)
        with connection:
            changed = connection.execute(
                "UPDATE stored_events SET state = CAST(replace(state, ?, ?) AS BLOB) "
                "WHERE topic = ? AND instr(state, ?)",
                (old, new, TOPIC, old),
            ).rowcount
        connection.close()
    assert changed == 1


@pytest.mark.parametrize(
    ("run_id", "old", "new"),
    [
        ("r1", '"hello there"', '"hello where"'),
        ("r2", '"kind":"text","text":"step 7"},"id"', '"kind":"text","text":"step 7b"},"id"'),
    ],
)
def test_a_tampered_row_is_read_as_the_plain_loader_reads_it(
    store_url: str, run_id: str, old: str, new: str
) -> None:
    _write(store_url)
    _rewrite(store_url, old, new)
    fast, plain = _both(store_url, run_id)
    assert fast == plain
    texts = [e.get("content", {}).get("text") for e in fast["events"]]
    assert ("hello where" if run_id == "r1" else "step 7b") in texts


@pytest.mark.parametrize(
    ("run_id", "old", "new"),
    [
        ("r1", '"text":"hello there"', '"text":7'),
        ("r2", '"kind":"text","text":"step 7"},"id"', '"kind":"text","text":null},"id"'),
    ],
)
def test_a_row_tampered_into_an_invalid_event_is_refused_and_nothing_written(
    store_url: str, run_id: str, old: str, new: str
) -> None:
    _write(store_url)
    _rewrite(store_url, old, new)
    for fast in (True, False):
        app = open_app(store_url, fast=fast)
        try:
            before = store_snapshot(app)
            with pytest.raises(InvalidRuntimeEventError):
                app.plan_resume(run_id)
            assert store_snapshot(app) == before
        finally:
            app.close()
