"""Phase 1a stateful suite: continuation eligibility is deterministic and read-only over
generated prefixes and host facts (see ``maka_es.testing.continuation_machine``)."""

from __future__ import annotations

from hypothesis import settings

from maka_es.testing.continuation_machine import ContinuationEligibilityMachine

ContinuationEligibilityMachine.TestCase.settings = settings(stateful_step_count=20)
TestContinuationEligibilityOnSqlite = ContinuationEligibilityMachine.TestCase
