"""ToolRuntime stateful suite: calls, simulated crashes (drop the application mid-call and
reopen the SQLite file) and recoveries interleaved; see ``maka_es.testing.tool_machine``."""

from __future__ import annotations

from hypothesis import settings

from maka_es.testing.tool_machine import ToolRecoveryMachine

ToolRecoveryMachine.TestCase.settings = settings(stateful_step_count=20)
TestToolRecoveryOnSqlite = ToolRecoveryMachine.TestCase
