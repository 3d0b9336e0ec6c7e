"""Which exceptions mean "the store could not be read right now", as opposed to a verdict.

Why one place: a locked database, a missing table or an I/O error says nothing about the
ledger, the lineage or a claim. Turning such a fault into ``runtime_lineage_missing`` or
``continuation_claim_repair_required`` would give the host a wrong story about its data, and
letting it escape raw breaks the planner's contract (it parks, it never raises). The planner
asks :data:`STORE_FAULTS` which failures are faults; it then parks with a reason that says "could
not read" and names the error class.

The store layer may surface a fault as maka_es's typed ``StoreUnavailableError`` or as the
library's raw ``eventsourcing.persistence.PersistenceError`` (``OperationalError`` ...); a pool
that cannot even open a connection lets ``sqlite3.Error`` or ``OSError`` through. All of them
are faults.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from eventsourcing.persistence import PersistenceError

from maka_es.errors import MakaError, StoreUnavailableError

#: Exceptions that mean the store could not be read (not a verdict about what it holds).
STORE_FAULTS: Final[tuple[type[Exception], ...]] = (
    StoreUnavailableError,
    PersistenceError,
    sqlite3.Error,
    OSError,
)


def is_store_fault(exc: BaseException) -> bool:
    return isinstance(exc, STORE_FAULTS)


def store_fault_class(exc: BaseException) -> str:
    """A stable name for the fault: maka_es's ``code``, else the exception class name."""
    return exc.code if isinstance(exc, MakaError) else type(exc).__name__
