"""A host subclasses RuntimeApplication: injected clock and id factory, commit hook."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from maka_es.adapters.event_store import is_postgres_url, postgres_env_from_url
from maka_es.app import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.wire.events import RuntimeEvent


class HostApplication(RuntimeApplication):
    """What a host writes: its own clock and ids, and a hook to wake its UI."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.seen: list[tuple[str, list[str]]] = []
        ids = iter(f"host-{n}" for n in range(1_000))
        super().__init__(*args, clock=lambda: 42.0, id_factory=lambda: next(ids), **kwargs)

    def on_events_committed(self, run_id: str, events: Sequence[RuntimeEvent]) -> None:
        self.seen.append((run_id, [event.id for event in events]))


def test_host_subclass_hooks_clock_and_ids(store_url: str) -> None:
    pg = is_postgres_url(store_url)
    env = postgres_env_from_url(store_url) if pg else {"SQLITE_DBNAME": store_url}
    with HostApplication(env) as app:
        assert app.id_factory() == "host-0"
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header())
        ledger = LedgerBuilder()
        ledger.user()
        app.ledger.append_events("r1", ledger.events)
        app.ledger.append_events("r1", ledger.events)  # exact retry: no commit, no callback
        assert app.seen == [("r1", ["e1"])]
        assert app.get_session("s1").opened_at == 42.0
    if not pg:
        assert Path(store_url).exists()  # SQLite is the default persistence


class KeywordOnlyHost(RuntimeApplication):
    """A host whose constructor takes keywords only (a common pattern for service classes)."""

    def __init__(self, **kwargs: Any) -> None:
        self.constructed_with = sorted(kwargs)
        super().__init__(**kwargs)


def test_constructors_pass_env_by_keyword(store_url: str) -> None:
    with KeywordOnlyHost.open(store_url, clock=lambda: 7.0) as app:
        assert isinstance(app, KeywordOnlyHost)
        assert app.constructed_with == ["clock", "env"]
        assert app.open_session("s1", "/workspace").opened_at == 7.0
    with KeywordOnlyHost.open(store_url) as again:
        assert isinstance(again, KeywordOnlyHost)
        assert again.constructed_with == ["env"]
        assert again.list_sessions() == ["s1"]
    if not is_postgres_url(store_url):  # read_only= is SQLite's mode=ro
        with KeywordOnlyHost.open_sqlite(store_url, read_only=True) as reader:
            assert reader.list_sessions() == ["s1"]
    with KeywordOnlyHost.in_memory(env={"AGGREGATE_CACHE_MAXSIZE": "8"}) as memory:
        assert memory.env.get("PERSISTENCE_MODULE") == "eventsourcing.popo"
        assert memory.env.get("AGGREGATE_CACHE_MAXSIZE") == "8"
