"""Named failpoints inside the write path, inert unless a test harness arms them.

Why: a crash test must be able to stop a process *inside* a store transaction (rows inserted,
not yet committed) and kill it there. Production code calls :func:`hit` at those places; with
nothing armed this is one dictionary lookup. Only a harness (tests, the crash child in
``maka_es.testing``) arms a failpoint, in its own process.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import Lock

#: Inside the SQLite transaction, after this save's rows were inserted, before COMMIT.
INSIDE_SAVE_BEFORE_COMMIT = "store.save.inside_transaction"

#: A run's terminal event is durable, its header not yet terminal.
AFTER_TERMINAL_EVENT = "run.after_terminal_event_committed"
#: The run's terminal header is durable too.
AFTER_TERMINAL_HEADER = "run.after_terminal_header_committed"
#: Startup recovery committed a claim-repair start; its repair terminal is not written yet.
AFTER_CLAIM_REPAIR_START = "recovery.after_claim_repair_start_committed"
#: ``open_session`` found no session and has not written one yet (another writer may, here).
SESSION_ABSENT_BEFORE_OPEN = "ledger.open_session.absent_before_write"

_armed: dict[str, Callable[[str], None]] = {}
_lock = Lock()


def arm(name: str, action: Callable[[str], None]) -> None:
    """Run ``action(name)`` whenever the failpoint ``name`` is hit in this process."""
    with _lock:
        _armed[name] = action


def disarm(name: str | None = None) -> None:
    """Disarm one failpoint, or all of them."""
    with _lock:
        if name is None:
            _armed.clear()
        else:
            _armed.pop(name, None)


def hit(name: str) -> None:
    """Called by production code at a named point; does nothing unless armed."""
    action = _armed.get(name)
    if action is not None:
        action(name)
