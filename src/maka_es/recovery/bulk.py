"""The cyclic garbage collector paused while a bulk read builds many objects (ADR 0045).

Why: reading a long run builds a few objects per event, all kept alive, none in a cycle.
CPython's collector runs a pass every 700 net allocations and a full pass whenever the
long-lived objects grew by a quarter, each scanning what is already held, so a 100k-event read
spent about 40% of its time in collections that free nothing, and grew faster than the run.
Reference counting still frees everything acyclic during the pause; a cycle made meanwhile is
collected by the first pass after it.

Process-wide, as the collector is: the first caller to pause remembers whether it was on, the
last one to leave restores that; nested and concurrent pauses (threads) are counted.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_collector"]

_lock = threading.Lock()
_state = {"depth": 0, "was_enabled": False}


@contextmanager
def paused_collector() -> Iterator[None]:
    """No cyclic collection inside the block (the collector as it was after the last one)."""
    with _lock:
        if _state["depth"] == 0:
            _state["was_enabled"] = gc.isenabled()
            gc.disable()
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["was_enabled"]:
                gc.enable()
