"""Phase 0 stateful suite: generated ledgers through the real application on each real store
(a SQLite file, a PostgreSQL schema), with every invariant of ``maka_es.testing.machines``
checked after every step. The number of examples follows the active Hypothesis profile (ci /
thorough), capped on PostgreSQL (tests/stateful/conftest.py)."""

from __future__ import annotations

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from maka_es.testing.machines import ResumeLedgerMachine
from maka_es.testing.probes import FreshStore


def test_resume_ledger_machine(fresh_store: FreshStore, machine_settings: settings) -> None:
    run_state_machine_as_test(
        ResumeLedgerMachine.on_store(fresh_store),
        settings=settings(machine_settings, stateful_step_count=25),
    )
