"""Persistence of the recovery-status read model: the stores, one row per run plus a position.

Why a read model at all: startup recovery and run listings need to know which runs are
non-terminal, which terminal events are ahead of their headers and which claimed continuations
never started. Answering that from the ledgers means replaying every run on every start; a
store keeps one small row per run instead, maintained by the application's projector from the
event store's notification log.

This module holds the in-memory store. The row type, the store protocol and the position rule
are in ``maka_es.recovery.status_store``; the SQLite store, with the reasons its
rows and position are committed in one transaction, is in
``maka_es.adapters.recovery_status_sqlite``. Every name keeps importing from here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from uuid import UUID

from maka_es import failpoints
from maka_es.adapters.recovery_status_sqlite import SCHEMA_VERSION, SqliteRecoveryStatusStore
from maka_es.recovery.status_store import (
    CLAIM_STATES,
    INSIDE_COMMIT_FAILPOINT,
    MISSING_HEADER_STATUS,
    ClaimState,
    RecoveryStatusConflictError,
    RecoveryStatusStore,
    RunRecoveryStatus,
    check_position,
    needs_attention_for,
)

__all__ = [
    "CLAIM_STATES",
    "INSIDE_COMMIT_FAILPOINT",
    "MISSING_HEADER_STATUS",
    "SCHEMA_VERSION",
    "ClaimState",
    "InMemoryRecoveryStatusStore",
    "RecoveryStatusConflictError",
    "RecoveryStatusStore",
    "RunRecoveryStatus",
    "SqliteRecoveryStatusStore",
    "needs_attention_for",
]


class InMemoryRecoveryStatusStore:
    """The read model for the in-memory application (``eventsourcing.popo``): it lives exactly
    as long as the event store it mirrors. Commits build new state and swap it in, so a
    failure inside a commit leaves the old state untouched (the same contract as SQLite)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._position = 0
        self._rows: dict[str, RunRecoveryStatus] = {}
        self._streams: dict[UUID, str] = {}
        self._claims: dict[str, str] = {}

    def position(self) -> int:
        with self._lock:
            return self._position

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        with self._lock:
            return {sid: self._streams[sid] for sid in stream_ids if sid in self._streams}

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        wanted = set(run_ids)
        found: dict[str, str] = {}
        with self._lock:
            for claim_id, target in self._claims.items():
                if target in wanted:
                    found.setdefault(target, claim_id)
        return found

    def commit(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_map_additions: Mapping[UUID, str],
        position: int,
        *,
        claim_targets: Mapping[str, str] | None = None,
        expected_position: int | None = None,
    ) -> None:
        with self._lock:
            check_position(self._position, position, expected_position)
            new_rows = dict(self._rows)
            for row in rows:
                new_rows[row.run_id] = row
            new_streams = dict(self._streams)
            for stream_id, run_id in stream_map_additions.items():
                new_streams.setdefault(stream_id, run_id)
            new_claims = dict(self._claims)
            for claim_id, target in (claim_targets or {}).items():
                new_claims.setdefault(claim_id, target)
            failpoints.hit(INSIDE_COMMIT_FAILPOINT)
            self._rows, self._streams, self._claims = new_rows, new_streams, new_claims
            self._position = position

    def get(self, run_id: str) -> RunRecoveryStatus | None:
        with self._lock:
            return self._rows.get(run_id)

    def all(self) -> list[RunRecoveryStatus]:
        with self._lock:
            return list(self._rows.values())

    def needing_attention(self) -> list[RunRecoveryStatus]:
        with self._lock:
            return [row for row in self._rows.values() if row.needs_attention]

    def clear(self) -> None:
        with self._lock:
            self._rows, self._streams, self._claims = {}, {}, {}
            self._position = 0

    def close(self) -> None:
        """Nothing to release."""
