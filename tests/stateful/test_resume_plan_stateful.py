"""Phase 0 stateful suite: generated ledgers through the real application on a real SQLite
file, with every invariant of ``maka_es.testing.stateful`` checked after every step. The number
of examples follows the active Hypothesis profile (ci / thorough)."""

from __future__ import annotations

from hypothesis import settings

from maka_es.testing.stateful import ResumeLedgerMachine

ResumeLedgerMachine.TestCase.settings = settings(stateful_step_count=25)
TestResumeLedgerOnSqlite = ResumeLedgerMachine.TestCase
