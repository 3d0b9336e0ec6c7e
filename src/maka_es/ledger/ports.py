"""The ledger's port to the event store: what a command may ask of persistence, and no more.

Why a port: every capability above the aggregates (the ledger commands, the continuation
executor, startup recovery) used to reach into the eventsourcing application object, its
private loaders and a public ``commit_facts`` that let any caller save facts no command had
validated. Services now depend on this typed Protocol; ``maka_es.adapters.event_store``
implements it over eventsourcing and ``maka_es.app`` wires the two (ADR 0017).

The contract a writer relies on (docs/reference/ledger.md#write-rules):

* ``command()`` serialises one read-decide-save sequence of this process; the aggregate cache
  is the commands' state: only a load inside a command advances it, a load outside one gets
  the calling thread's own aggregate, and ``read_run`` reads without ever making a command
  wait (ADR 0021 and ADR 0026, amendments of issue 20);
* ``commit(facts, conflict=...)`` saves every fact in ONE transaction; a lost race evicts the
  involved streams from the cache and raises ``conflict()``; any other store fault raises a
  typed ``StoreUnavailableError``; in both cases nothing of the transaction was written.

Which exceptions mean "the store could not be read right now", as opposed to a verdict, is said
here once (:data:`STORE_FAULTS`). A locked database, a missing table or an I/O error says nothing
about the ledger, the lineage or a claim: turning such a fault into ``runtime_lineage_missing``
or ``continuation_claim_repair_required`` would give the host a wrong story about its data, and
letting it escape raw breaks the planner's contract (it parks, it never raises). The store layer
may surface a fault as the typed ``StoreUnavailableError`` or as eventsourcing's raw
``PersistenceError`` (``OperationalError`` ...); a pool that cannot even open a connection lets
``sqlite3.Error`` or ``OSError`` through. All of them are faults.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol, TypeVar
from uuid import UUID

from eventsourcing.persistence import PersistenceError

from maka_es.errors import MakaError, StoreUnavailableError
from maka_es.ledger.model.facts import StoredFact
from maka_es.ledger.model.run import Run
from maka_es.ledger.model.session import Session

A = TypeVar("A")
T = TypeVar("T")

#: An eventsourcing projector: (current aggregate or None, facts) -> aggregate or None.
Projector = Callable[[A | None, Iterable[Any]], A | None]


class RunStore(Protocol):
    """Load aggregates and save facts (see module docstring)."""

    def now_ms(self) -> int:
        """Now, as the integer milliseconds every library-written timestamp carries."""
        ...

    def command(self) -> AbstractContextManager[object]:
        """Serialise one read-decide-save sequence of this process."""
        ...

    @property
    def fast_paths(self) -> bool:
        """The fast paths are on (``MAKA_ES_FAST_PATHS=n`` turns them off, ADR 0037)."""
        ...

    def load_run(self, run_id: str) -> Run:
        """The Run aggregate; ``RunNotFoundError`` if it does not exist."""
        ...

    def read_run(self, run_id: str, view: Callable[[Run], T]) -> T:
        """A read of the run: ``view`` of a state no command changes while it runs."""
        ...

    def load_session(self, session_id: str) -> Session:
        """The Session aggregate; ``SessionNotFoundError`` if it does not exist."""
        ...

    def load(self, stream_id: UUID, projector: Projector[A]) -> A | None:
        """Any aggregate by stream id (claims), ``None`` if the stream does not exist."""
        ...

    def stream_exists(self, stream_id: UUID) -> bool: ...

    def first_fact(self, stream_id: UUID) -> StoredFact | None:
        """Version 1 of a stream, read from the store (``None``: no such stream)."""
        ...

    def commit(self, facts: Sequence[StoredFact], *, conflict: Callable[[], Exception]) -> None:
        """Save ``facts`` in ONE transaction (see module docstring)."""
        ...

    def facts_with_topic(self, topic: str) -> Iterator[StoredFact]:
        """Every stored fact of one topic, in notification order."""
        ...


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
