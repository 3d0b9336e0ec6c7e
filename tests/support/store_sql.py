"""Raw SQL on either store behind a store setting (a SQLite path or a PostgreSQL URL).

Why: some tests act as another process would on the store itself (drop the event table, read
the stored bytes of a row, dump every row) rather than through the application. On SQLite that
is the file's ``stored_events`` table; on PostgreSQL it is ``maka_es_events`` in the test's
own schema (ADR 0028)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import psycopg
from hypothesis import settings

from maka_es.adapters.event_store import is_postgres_url
from maka_es.testing.probes import FreshStore, sqlite_store_in

__all__ = [
    "PG_MAX_EXAMPLES",
    "fresh_store_for",
    "hypothesis_settings_for",
    "all_rows",
    "drop_events_table",
    "event_rows",
    "event_states_with_topic",
    "pg_server_and_schema",
]

_PG_TABLE = "maka_es_events"


def pg_server_and_schema(store: str) -> tuple[str, str]:
    """The server URL psycopg accepts, and the schema the store URL names."""
    parts = urlsplit(store)
    schema = dict(parse_qsl(parts.query)).get("schema", "public")
    return urlunsplit(parts._replace(query="")), schema


def _pg_rows(store: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    server, schema = pg_server_and_schema(store)
    with psycopg.connect(server, autocommit=True) as conn:
        cursor = conn.execute(sql.replace("{table}", f'"{schema}".{_PG_TABLE}'), params)
        return list(cursor) if cursor.description is not None else []


def _sqlite_rows(store: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(store)
    try:
        return list(connection.execute(sql.replace("{table}", "stored_events"), params))
    finally:
        connection.close()


def drop_events_table(store: str) -> None:
    """Another process drops the event table (a damaged or half-migrated store)."""
    if is_postgres_url(store):
        _pg_rows(store, "DROP TABLE {table}")
        return
    connection = sqlite3.connect(store)
    connection.execute("DROP TABLE stored_events")
    connection.commit()
    connection.close()


def event_rows(store: str) -> list[tuple[Any, ...]]:
    """Every stored event row (stream, version, topic, state bytes), in a stable order."""
    sql = (
        "SELECT originator_id, originator_version, topic, state FROM {table} "
        "ORDER BY originator_id, originator_version"
    )
    read = _pg_rows if is_postgres_url(store) else _sqlite_rows
    return [(str(a), int(v), str(t), bytes(s)) for a, v, t, s in read(store, sql)]


def event_states_with_topic(store: str, topic: str) -> list[bytes]:
    """The stored state bytes of every row with ``topic``, read from the table itself."""
    if is_postgres_url(store):
        rows = _pg_rows(store, "SELECT state FROM {table} WHERE topic = %s", (topic,))
    else:
        rows = _sqlite_rows(store, "SELECT state FROM {table} WHERE topic = ?", (topic,))
    return [bytes(state) for (state,) in rows]


def all_rows(store: str) -> dict[str, list[str]]:
    """Every row of every table of the store (the test's schema on PostgreSQL), as sorted
    ``repr`` strings per table: the evidence that nothing at all was written."""
    if is_postgres_url(store):
        server, schema = pg_server_and_schema(store)
        with psycopg.connect(server, autocommit=True) as conn:
            tables = [
                str(name)
                for (name,) in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (schema,),
                )
            ]
            return {
                t: sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{schema}"."{t}"'))
                for t in tables
            }
    connection = sqlite3.connect(store)
    try:
        names = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = [str(name) for (name,) in names.fetchall()]
        return {
            t: sorted(repr(r) for r in connection.execute(f'SELECT * FROM "{t}"')) for t in tables
        }
    finally:
        connection.close()


#: Examples per PostgreSQL test, at most: each example clears the schema and opens a pool, so
#: the second store keeps the suite's added time small; SQLite keeps the profile's count.
PG_MAX_EXAMPLES = 8


def _emptied_schema(store_url: str) -> FreshStore:
    """Clears every table of the test's schema (kept, not recreated: cheaper per example)."""
    server, schema = pg_server_and_schema(store_url)

    def fresh(workdir: Path) -> str:
        with psycopg.connect(server, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
            ).fetchall()
            if tables:
                names = ", ".join(f'"{schema}"."{name}"' for (name,) in tables)
                conn.execute(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
        return store_url

    return fresh


def fresh_store_for(store_url: str) -> FreshStore:
    """Per Hypothesis example: a new SQLite file in the example's workdir, or the test's
    PostgreSQL schema emptied."""
    return _emptied_schema(store_url) if is_postgres_url(store_url) else sqlite_store_in


def hypothesis_settings_for(store_url: str) -> settings:
    """The active profile, with fewer examples on PostgreSQL (see ``PG_MAX_EXAMPLES``)."""
    current = settings()
    if not is_postgres_url(store_url):
        return current
    return settings(current, max_examples=min(current.max_examples, PG_MAX_EXAMPLES))
