"""The stateful machines on each real store (ADR 0028): one ``store_url`` per test, and an
empty store for every Hypothesis example."""

from __future__ import annotations

import pytest
from hypothesis import settings

from maka_es.testing.probes import FreshStore
from tests.support.store_sql import fresh_store_for, hypothesis_settings_for


@pytest.fixture
def fresh_store(store_url: str) -> FreshStore:
    """Per example: a new SQLite file in the example's workdir, or the test's PostgreSQL
    schema emptied."""
    return fresh_store_for(store_url)


@pytest.fixture
def machine_settings(store_url: str) -> settings:
    """The active profile, with fewer examples on PostgreSQL (see ``PG_MAX_EXAMPLES``)."""
    return hypothesis_settings_for(store_url)
