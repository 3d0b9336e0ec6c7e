"""Session aggregate: where a conversation lives (cwd, workspace identity) and its runs.

Why a stream of its own: session-level facts (the cwd and workspace identity observed when the
session was opened, which runs belong to it, in which order) are what continuation planning
compares the current host against. They must not be inferred from run headers alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from maka_es.errors import StoreCorruptionError
from maka_es.ledger.model.facts import RunRegistered, SessionOpened, StoredFact, session_stream_id


@dataclass(frozen=True, slots=True)
class SessionRunEntry:
    run_id: str
    created_at: float


class Session:
    __slots__ = ("_runs", "cwd", "id", "opened_at", "session_id", "version", "workspace_identity")

    def __init__(self, opened: SessionOpened) -> None:
        self.id: UUID = opened.originator_id
        self.version = opened.originator_version
        self.session_id = opened.session_id
        self.cwd = opened.cwd
        self.workspace_identity = opened.workspace_identity
        self.opened_at = opened.opened_at
        self._runs: list[SessionRunEntry] = []

    @property
    def runs(self) -> tuple[SessionRunEntry, ...]:
        """Runs in registration order."""
        return tuple(self._runs)

    @staticmethod
    def open(
        session_id: str, cwd: str, workspace_identity: str | None, opened_at: float
    ) -> SessionOpened:
        return SessionOpened(
            originator_id=session_stream_id(session_id),
            originator_version=1,
            session_id=session_id,
            cwd=cwd,
            workspace_identity=workspace_identity,
            opened_at=opened_at,
        )

    def register_run(self, run_id: str, created_at: float) -> RunRegistered:
        return RunRegistered(
            originator_id=self.id,
            originator_version=self.version + 1,
            run_id=run_id,
            created_at=created_at,
        )

    def apply(self, fact: StoredFact) -> None:
        if fact.originator_version != self.version + 1:
            raise StoreCorruptionError(f"session stream {self.id} has a version gap")
        if isinstance(fact, RunRegistered):
            self._runs.append(SessionRunEntry(fact.run_id, fact.created_at))
        else:
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in session stream")
        self.version = fact.originator_version


def project_session(session: Session | None, facts: Iterable[Any]) -> Session | None:
    for fact in facts:
        if session is None:
            if not isinstance(fact, SessionOpened):
                raise StoreCorruptionError(f"session stream starts with {type(fact).__name__}")
            session = Session(fact)
        else:
            session.apply(fact)
    return session
