"""The stateful machines on each real store (ADR 0028): one ``store_url`` per test, and an
empty store for every Hypothesis example."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from hypothesis import settings

from maka_es.adapters.store_url import is_postgres_url, postgres_env_from_url
from maka_es.testing.store_probe import FreshStore, sqlite_store_in

#: Examples per PostgreSQL test, at most: each example clears the schema and opens a pool, so
#: the second store keeps the suite's added time small; SQLite keeps the profile's count.
PG_MAX_EXAMPLES = 8


def _emptied_schema(store_url: str) -> FreshStore:
    """Clears every table of the test's schema (kept, not recreated: cheaper per example)."""
    schema = postgres_env_from_url(store_url)["POSTGRES_SCHEMA"]
    server = store_url.partition("?")[0]

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


@pytest.fixture
def fresh_store(store_url: str) -> FreshStore:
    """Per example: a new SQLite file in the example's workdir, or the test's PostgreSQL
    schema emptied."""
    return _emptied_schema(store_url) if is_postgres_url(store_url) else sqlite_store_in


@pytest.fixture
def machine_settings(store_url: str) -> settings:
    """The active profile, with fewer examples on PostgreSQL (see ``PG_MAX_EXAMPLES``)."""
    current = settings()
    if not is_postgres_url(store_url):
        return current
    return settings(current, max_examples=min(current.max_examples, PG_MAX_EXAMPLES))
