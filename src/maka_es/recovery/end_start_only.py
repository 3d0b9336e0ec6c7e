"""An operator ends one start-only continuation or fork whose process is gone (ADR 0035;
``maka-es end-run RUN``).

Why a command of its own: startup recovery ends such a run at a restart, but an operator who
knows the process is gone (an abandoned fork execution, a host that will not come back) should
not have to restart a host or sweep the whole store. The command asks the same rule recovery
asks, for this one run, and runs recovery's own repair on it, so the terminal written is
recovery's (``<runId>-recovered-terminal``, ``run_interrupted``) and a later restart finds
nothing left to do. It is stricter than a restart on one point: a run whose owner still holds
a live lease is refused even when that owner is this host id, because the command runs beside
the host, not instead of it. Every refusal is typed and writes nothing; of two processes
ending the same run, the store lets one write and the other answers ``run_already_ended``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maka_es.continuation.claims import Claims
from maka_es.errors import MakaError, RunEndRefusedError
from maka_es.ledger.ports import STORE_FAULTS
from maka_es.ledger.run import Run
from maka_es.recovery.report import Repair
from maka_es.recovery.start_only import is_bare_continuation_start, start_fact
from maka_es.recovery.startup import StartupRecovery

__all__ = ["EndRunOutcome", "end_start_only_run"]


@dataclass(frozen=True, slots=True)
class EndRunOutcome:
    """What ``end_start_only_run`` wrote: recovery's terminal of ``run_id``."""

    run_id: str
    claim_id: str | None
    recovery_reason: str
    taken_over_from: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "claimId": self.claim_id,
            "recoveryReason": self.recovery_reason,
            "takenOverFrom": self.taken_over_from,
            "ended": True,
        }


def _check_endable(claims: Claims, run: Run) -> None:
    """Refuse (typed, before any write) a run this command may not end."""
    run_id = run.run_id
    if run.terminal_event is not None:
        raise RunEndRefusedError(
            f"run {run_id} already ended",
            code="run_already_ended",
            detail={"runId": run_id},
        )
    if run.sealed_by is not None or not (
        run.high_water == 1 and is_bare_continuation_start(run.header, run.events)
    ):
        raise RunEndRefusedError(
            f"run {run_id} is no continuation or fork holding only its start",
            code="run_not_start_only",
            detail={"runId": run_id, "committedEvents": run.high_water},
        )
    owner, ownership = run.owner, claims.ledger.ownership
    if owner is None or ownership is None:
        raise RunEndRefusedError(
            f"run {run_id} records no owner",
            code="run_owner_unknown",
            detail={"runId": run_id},
        )
    lease = ownership.lease(owner.host_id)
    if lease is not None and lease.is_live(claims.ledger.now_ms()):
        raise RunEndRefusedError(
            f"run {run_id} is owned by host {owner.host_id}, whose lease is live",
            code="run_owner_live",
            detail={
                "runId": run_id,
                "ownerHostId": owner.host_id,
                "leaseExpiresAt": int(lease.expires_at),
            },
        )


def end_start_only_run(claims: Claims, run_id: str) -> EndRunOutcome:
    """End ``run_id`` with recovery's terminal (see module docstring)."""
    ledger = claims.ledger
    _check_endable(claims, ledger.load_run(run_id))
    try:
        repairs = StartupRecovery(claims).run([run_id], []).repairs
    except STORE_FAULTS:
        raise
    except MakaError:
        if ledger.load_run(run_id).terminal_event is None:
            raise
        repairs = ()  # another process wrote the terminal between our check and our write
    ended = next((r for r in repairs if r.kind == "start_only_ended"), None)
    if ended is None:
        raise RunEndRefusedError(
            f"run {run_id} was ended, or taken, by another process first",
            code="run_already_ended",
            detail={"runId": run_id, "reason": "ending_elsewhere"},
        )
    return _outcome(ledger.load_run(run_id), ended, repairs)


def _outcome(run: Run, ended: Repair, repairs: tuple[Repair, ...]) -> EndRunOutcome:
    taken = next((r for r in repairs if r.kind == "owner_taken_over"), None)
    start = start_fact(run)
    return EndRunOutcome(
        run.run_id,
        None if start is None else start.claim_id,
        str(ended.detail.get("recoveryReason", "")),
        None if taken is None else str(taken.detail.get("previousHostId")),
    )
