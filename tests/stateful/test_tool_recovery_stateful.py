"""ToolRuntime stateful suite: calls, simulated crashes (drop the application mid-call and
reopen the store) and recoveries interleaved, on each real store (a SQLite file, a PostgreSQL
schema); see ``maka_es.testing.machines``."""

from __future__ import annotations

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from maka_es.testing.machines import ToolRecoveryMachine
from maka_es.testing.probes import FreshStore


def test_tool_recovery_machine(fresh_store: FreshStore, machine_settings: settings) -> None:
    run_state_machine_as_test(
        ToolRecoveryMachine.on_store(fresh_store),
        settings=settings(machine_settings, stateful_step_count=20),
    )
