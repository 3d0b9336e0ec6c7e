"""A host subclasses RuntimeApplication: injected clock and id factory, commit hook."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from maka_es.application.runtime import RuntimeApplication
from maka_es.domain.events import RuntimeEvent
from maka_es.testing.builders import LedgerBuilder, run_header


class HostApplication(RuntimeApplication):
    """What a host writes: its own clock and ids, and a hook to wake its UI."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.seen: list[tuple[str, list[str]]] = []
        ids = iter(f"host-{n}" for n in range(1_000))
        super().__init__(*args, clock=lambda: 42.0, id_factory=lambda: next(ids), **kwargs)

    def on_events_committed(self, run_id: str, events: Sequence[RuntimeEvent]) -> None:
        self.seen.append((run_id, [event.id for event in events]))


def test_host_subclass_hooks_clock_and_ids(tmp_path: Path) -> None:
    env = {"SQLITE_DBNAME": str(tmp_path / "host.sqlite")}
    with HostApplication(env) as app:
        assert app.id_factory() == "host-0"
        app.open_session("s1", "/workspace")
        app.create_run(run_header())
        ledger = LedgerBuilder()
        ledger.user()
        app.append_events("r1", ledger.events)
        app.append_events("r1", ledger.events)  # exact retry: no commit, no callback
        assert app.seen == [("r1", ["e1"])]
        assert app.get_session("s1").opened_at == 42.0
    assert (tmp_path / "host.sqlite").exists()  # SQLite is the default persistence
