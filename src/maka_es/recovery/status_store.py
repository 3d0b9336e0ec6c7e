"""What every recovery-status store promises: the row it keeps per run and the store protocol.

Why a module of its own: the row type, its invariant and the position rule are shared by the
in-memory store (``maka_es.adapters.recovery_status_store``), the SQLite store
(``maka_es.adapters.recovery_status_sqlite``) and the projector that fills them
(``maka_es.recovery.status``); keeping them apart from either implementation means both stores
enforce exactly the same contract (docs/reference/continuation.md#recovery-status).

Why the row type lives in the recovery capability and not in the adapters: the stores must know
the shape they persist, and the capability order lets ``adapters`` import ``recovery`` but not
the reverse (ADR 0017). ``maka_es.recovery.status`` re-exports it as part of its API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, cast, get_args
from uuid import UUID

from maka_es.errors import RecoveryStatusConflictError as RecoveryStatusConflictError
from maka_es.wire.run_header import TERMINAL_RUN_STATUSES

__all__ = [
    "CLAIM_STATES",
    "INSIDE_COMMIT_FAILPOINT",
    "MISSING_HEADER_STATUS",
    "ClaimState",
    "RecoveryStatusConflictError",
    "RecoveryStatusStore",
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


class RecoveryStatusStore(Protocol):
    """Where the recovery-status rows, the projector's bookkeeping and its position live."""

    def position(self) -> int:
        """The last notification id whose effects are in the rows (0: nothing yet)."""
        ...

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        """Run ids of the given run streams (streams never seen are absent)."""
        ...

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        """For each run that is a continuation target: the earliest claim naming it."""
        ...

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
        ...

    def get(self, run_id: str) -> RunRecoveryStatus | None: ...

    def all(self) -> list[RunRecoveryStatus]:
        """Every row, in the order the runs first appeared in the notification log."""
        ...

    def needing_attention(self) -> list[RunRecoveryStatus]:
        """Rows with ``needs_attention``, in the same order as :meth:`all`."""
        ...

    def clear(self) -> None:
        """Forget everything (rows, links, position), atomically."""
        ...

    def close(self) -> None: ...


def check_position(current: int, position: int, expected_position: int | None) -> None:
    """The compare-and-set every store applies before a commit: the stored position must still
    be the expected one (when given), and the position may only move forward."""
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
