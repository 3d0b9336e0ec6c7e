"""A store recovered under the rule before ADR 0019's amendment of 2026-12-01: startup recovery
then sealed a run whose ``never_auto_retry`` (...) call was interrupted.

Why a helper: today's recovery leaves such a run awaiting the operator, but stores written by
older versions hold runs it sealed; the fork (ADR 0022) is their way on, and the tests of it
need exactly that sealed run. It writes what the old recovery wrote, through the same code:
the deterministic recovered terminal (``<runId>-recovered-terminal``, ``app_restarted``), then
the header.
"""

from __future__ import annotations

from maka_es.app import RuntimeApplication
from maka_es.recovery.startup import StartupRecovery

__all__ = ["seal_like_old_recovery"]


def seal_like_old_recovery(app: RuntimeApplication, run_id: str) -> None:
    """End ``run_id`` with the recovered terminal, leaving its operations as they are."""
    run = app.ledger.load_run(run_id)
    assert run.terminal_event is None, "the old recovery sealed only unended runs"
    StartupRecovery(app.claims)._recover_terminal(run.header, run.events_newest_first())
