"""A probe on the run store: which runs the application loads, counted, never timed.

Why shared: the recovery-status tests pin that a catch-up recomputes only the runs that changed
and loads each of them once (ADR 0012); both count the same loads the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from maka_es.app import RuntimeApplication
from maka_es.ledger.model.run import Run

__all__ = ["count_loads"]


def count_loads(app: RuntimeApplication, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every run the application loads from now on (the projector's recompute)."""
    loaded: list[str] = []
    original: Callable[[str], Run] = app._store.load_run

    def load(run_id: str) -> Run:
        loaded.append(run_id)
        return original(run_id)

    monkeypatch.setattr(app._store, "load_run", load)
    return loaded
