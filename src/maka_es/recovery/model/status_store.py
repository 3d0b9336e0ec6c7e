"""The recovery-status read model's contract: the row kept per run, the one store, its backends.

Why one module: the row type, its invariant, the compare-and-set on the position and the store
the projector (``maka_es.recovery.status``) writes through are one concept. The store is ONE
class, :class:`RecoveryStatusStore`: its ``commit`` is the only compare-and-set there is,
written once over a small :class:`RecoveryStatusBackend` that only keeps the data (a dict
here, SQL in ``maka_es.adapters.recovery_status``), so every backend enforces exactly the same
contract (docs/reference/continuation.md#recovery-status).

Why it lives in the recovery capability and not in the adapters: the backends must know the
shape they persist, and the capability order lets ``adapters`` import ``recovery`` but not the
reverse (ADR 0017). It is pure: no I/O, clock or environment (import-linter keeps it so).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, cast, get_args
from uuid import UUID

from maka_es import failpoints
from maka_es.errors import RecoveryStatusConflictError as RecoveryStatusConflictError
from maka_es.wire.run_header import TERMINAL_RUN_STATUSES

__all__ = [
    "CLAIM_STATES",
    "INSIDE_COMMIT_FAILPOINT",
    "MISSING_HEADER_STATUS",
    "ClaimState",
    "InMemoryRecoveryStatusBackend",
    "RecoveryStatusBackend",
    "RecoveryStatusConflictError",
    "RecoveryStatusStore",
    "RecoveryStatusWrite",
    "RunRecoveryStatus",
    "check_position",
    "needs_attention_for",
]

ClaimState = Literal["none", "unstarted", "started", "ended"]
CLAIM_STATES: frozenset[str] = frozenset(get_args(ClaimState))

#: ``header_status`` of a claimed continuation target whose run does not exist yet.
MISSING_HEADER_STATUS = "missing"

#: Inside the read model's commit, after rows, stream links, claims and position were written,
#: before the transaction commits (crash tests arm it to prove the commit is atomic).
INSIDE_COMMIT_FAILPOINT = "recovery_status.commit.inside_transaction"


def needs_attention_for(
    header_status: str,
    terminal_event: bool,
    header_matches_terminal: bool,
    claim_state: str,
) -> bool:
    """Whether startup recovery has something to look at
    (docs/reference/continuation.md#startup-recovery): the header is not
    terminal (running, lagging, or missing), a terminal header has no terminal event behind
    it, a terminal event does not match its header, or a claimed continuation target never
    started."""
    header_terminal = header_status in TERMINAL_RUN_STATUSES
    return (
        not header_terminal
        or not terminal_event
        or not header_matches_terminal
        or claim_state == "unstarted"
    )


@dataclass(frozen=True, slots=True)
class RunRecoveryStatus:
    """What startup recovery needs to know about one run, without reading its ledger.

    * ``header_status``: the header's status, or ``"missing"`` for a claimed target whose run
      does not exist yet.
    * ``terminal_event`` / ``header_matches_terminal``: whether a terminal RuntimeEvent is
      durable, and whether the header agrees with it (docs/reference/ledger.md#terminal-rules).
    * ``resume_disposition`` / ``resume_reasons``: the Phase 0 ResumePlan of the committed
      prefix (``None`` / ``()`` for a missing run).
    * ``unsettled_operations``: tool operations still in journal state ``prepared``.
    * ``claim_state``: ``none`` (not a continuation target), ``unstarted`` (claimed, no run or
      no event yet), ``started`` (events, no terminal), ``ended`` (terminal event).
    * ``claim_id``: the claim whose target this run is (the earliest one, if several).
    * ``sealed_by``: the claim that sealed this run as a continuation source.
    * ``high_water``: committed RuntimeEvents (0 for a missing run).
    * ``needs_attention``: see :func:`needs_attention_for`; checked on construction, so a row
      can never claim a verdict its own fields contradict.
    """

    run_id: str
    session_id: str
    header_status: str
    terminal_event: bool
    header_matches_terminal: bool
    resume_disposition: str | None
    resume_reasons: tuple[str, ...]
    unsettled_operations: int
    claim_state: ClaimState
    claim_id: str | None
    sealed_by: str | None
    high_water: int
    needs_attention: bool

    def __post_init__(self) -> None:
        if self.claim_state not in CLAIM_STATES:
            raise ValueError(f"unknown claim_state {self.claim_state!r}")
        expected = needs_attention_for(
            self.header_status,
            self.terminal_event,
            self.header_matches_terminal,
            self.claim_state,
        )
        if self.needs_attention != expected:
            raise ValueError(
                f"run {self.run_id}: needs_attention={self.needs_attention} contradicts its "
                f"fields (expected {expected})"
            )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (snake_case keys, reasons as a list)."""
        data = asdict(self)
        data["resume_reasons"] = list(self.resume_reasons)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecoveryStatus:
        """Inverse of :meth:`to_json`."""
        return cls(
            run_id=str(data["run_id"]),
            session_id=str(data["session_id"]),
            header_status=str(data["header_status"]),
            terminal_event=bool(data["terminal_event"]),
            header_matches_terminal=bool(data["header_matches_terminal"]),
            resume_disposition=_opt_str(data.get("resume_disposition")),
            resume_reasons=tuple(str(reason) for reason in data.get("resume_reasons", ())),
            unsettled_operations=int(data["unsettled_operations"]),
            claim_state=cast(ClaimState, str(data["claim_state"])),
            claim_id=_opt_str(data.get("claim_id")),
            sealed_by=_opt_str(data.get("sealed_by")),
            high_water=int(data["high_water"]),
            needs_attention=bool(data["needs_attention"]),
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def check_position(current: int, position: int, expected_position: int | None) -> None:
    """The compare-and-set :meth:`RecoveryStatusStore.commit` applies to the locked position:
    it must still be the expected one (when given), and the position may only move forward."""
    if expected_position is not None and current != expected_position:
        raise RecoveryStatusConflictError(
            f"recovery status position is {current}, expected {expected_position}",
            detail={"position": current, "expectedPosition": expected_position},
        )
    if position < current:
        raise RecoveryStatusConflictError(
            f"recovery status position may only move forward ({current} -> {position})",
            detail={"position": current, "requestedPosition": position},
        )


class RecoveryStatusWrite(Protocol):
    """One open transaction of a backend: it stores what a commit decided, and decides nothing."""

    def locked_position(self) -> int:
        """The stored position, held against every other writer until the transaction ends
        (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's ``FOR UPDATE``, a lock in memory)."""
        ...

    def write(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_links: Mapping[UUID, str],
        claim_targets: Mapping[str, str],
        position: int,
    ) -> None:
        """Upsert ``rows``, add the stream→run and claim→target links not stored yet (a
        stored link wins), and set the position."""
        ...


class RecoveryStatusBackend(Protocol):
    """Where the rows, the links and the position are kept: a dialect, no rules.

    Reads see only committed state. Rows come back in the order their runs were first
    written (an upsert keeps a row's place)."""

    def transaction(self) -> AbstractContextManager[RecoveryStatusWrite]:
        """One transaction: kept when the block ends, nothing kept when it raises."""
        ...

    def position(self) -> int: ...

    def stream_run_ids(self, stream_ids: Sequence[UUID]) -> dict[UUID, str]: ...

    def claim_links(self, run_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(target run id, claim id)`` of the claims naming ``run_ids``, oldest first."""
        ...

    def rows(
        self, run_id: str | None = None, *, needing_attention: bool = False
    ) -> list[RunRecoveryStatus]:
        """Every row, or the one of ``run_id``, or those that need attention."""
        ...

    def clear(self) -> None:
        """Forget rows, links and position (position 0), in one transaction."""
        ...

    def close(self) -> None: ...


class RecoveryStatusStore:
    """Where the recovery-status rows, the projector's bookkeeping and its position live.

    The one store of the read model, over any :class:`RecoveryStatusBackend`; its
    :meth:`commit` is the read model's only compare-and-set."""

    def __init__(self, backend: RecoveryStatusBackend) -> None:
        self.backend = backend

    def position(self) -> int:
        """The last notification id whose effects are in the rows (0: nothing yet)."""
        return self.backend.position()

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        """Run ids of the given run streams (streams never seen are absent)."""
        return self.backend.stream_run_ids(list(dict.fromkeys(stream_ids)))

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        """For each run that is a continuation target: the earliest claim naming it."""
        found: dict[str, str] = {}
        for target, claim_id in self.backend.claim_links(list(dict.fromkeys(run_ids))):
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
        """Atomically: upsert ``rows``, record new stream→run links and claim→target links,
        and move the position forward to ``position``. With ``expected_position``, refuse
        (:class:`RecoveryStatusConflictError`) unless the stored position still equals it."""
        with self.backend.transaction() as write:
            check_position(write.locked_position(), position, expected_position)
            write.write(rows, stream_map_additions, claim_targets or {}, position)
            failpoints.hit(INSIDE_COMMIT_FAILPOINT)

    def get(self, run_id: str) -> RunRecoveryStatus | None:
        """The row of ``run_id``, if it has one."""
        found = self.backend.rows(run_id)
        return found[0] if found else None

    def all(self) -> list[RunRecoveryStatus]:
        """Every row, in the order the runs first appeared in the notification log."""
        return self.backend.rows()

    def needing_attention(self) -> list[RunRecoveryStatus]:
        """Rows with ``needs_attention``, in the same order as :meth:`all`."""
        return self.backend.rows(needing_attention=True)

    def clear(self) -> None:
        """Forget everything (rows, links, position), atomically."""
        self.backend.clear()

    def close(self) -> None:
        """Release the backend (its connection, if any)."""
        self.backend.close()


@dataclass
class _MemoryState:
    position: int = 0
    rows: dict[str, RunRecoveryStatus] = field(default_factory=dict)
    streams: dict[UUID, str] = field(default_factory=dict)
    claims: dict[str, str] = field(default_factory=dict)  # claim id -> target, oldest first


class _MemoryWrite:
    """A transaction in memory: it writes into copies, swapped in only when it ends well."""

    def __init__(self, state: _MemoryState) -> None:
        self.state = _MemoryState(
            state.position, dict(state.rows), dict(state.streams), dict(state.claims)
        )

    def locked_position(self) -> int:
        return self.state.position

    def write(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_links: Mapping[UUID, str],
        claim_targets: Mapping[str, str],
        position: int,
    ) -> None:
        for row in rows:
            self.state.rows[row.run_id] = row
        for stream_id, run_id in stream_links.items():
            self.state.streams.setdefault(stream_id, run_id)
        for claim_id, target in claim_targets.items():
            self.state.claims.setdefault(claim_id, target)
        self.state.position = position


class InMemoryRecoveryStatusBackend:
    """The backend of the in-memory application (``eventsourcing.popo``): it lives exactly as
    long as the event store it mirrors, and the first catch-up of each process rebuilds it. A
    transaction writes new state and swaps it in, so a failure inside a commit leaves the old
    state untouched (the same contract as the SQL backends)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._state = _MemoryState()

    @contextmanager
    def transaction(self) -> Iterator[RecoveryStatusWrite]:
        with self._lock:
            write = _MemoryWrite(self._state)
            yield write
            self._state = write.state

    def position(self) -> int:
        with self._lock:
            return self._state.position

    def stream_run_ids(self, stream_ids: Sequence[UUID]) -> dict[UUID, str]:
        with self._lock:
            streams = self._state.streams
            return {sid: streams[sid] for sid in stream_ids if sid in streams}

    def claim_links(self, run_ids: Sequence[str]) -> list[tuple[str, str]]:
        wanted = set(run_ids)
        with self._lock:
            claims = self._state.claims.items()
            return [(target, claim_id) for claim_id, target in claims if target in wanted]

    def rows(
        self, run_id: str | None = None, *, needing_attention: bool = False
    ) -> list[RunRecoveryStatus]:
        with self._lock:
            stored = self._state.rows
            if run_id is None:
                found = list(stored.values())
            else:
                found = [stored[run_id]] if run_id in stored else []
        return [row for row in found if row.needs_attention or not needing_attention]

    def clear(self) -> None:
        with self._lock:
            self._state = _MemoryState()

    def close(self) -> None:
        """Nothing to release."""
