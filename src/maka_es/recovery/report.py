"""What startup recovery did: one ``Repair`` per run or claim it touched, and the outcome
(:class:`StartupRecoveryOutcome`).

Why a module of its own: hosts, the CLI and tests read the outcome without importing the repair
machinery, and the ids recovery writes are derived here once, deterministically, so a repair
that a crash interrupted converges to the same facts (docs/reference/continuation.md#claim-repair).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

RepairKind = Literal[
    "header_repaired",
    "terminal_recovered",
    "claim_repaired",
    "start_only_ended",
    "left_live_start",
    "left_ambiguous",
    "left_claim_conflict",
    "tools_recovered",
    "left_unreconciled",
    "left_awaiting_operator",
    "left_live_owner",
    "left_own_live_run",
    "owner_taken_over",
]

#: Repair kinds that report a run left as it was (nothing written for it).
LEFT_KINDS = frozenset(
    {"left_live_start", "left_ambiguous", "left_claim_conflict", "left_unreconciled"}
    | {"left_live_owner", "left_awaiting_operator", "left_own_live_run"}
)


@dataclass(frozen=True)
class Repair:
    run_id: str
    kind: RepairKind
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StartupRecoveryOutcome:
    """What ``recover()`` did, one :class:`Repair` per change or deliberate non-change, in the
    order it made them: the host logs it and needs nothing else to decide."""

    repairs: tuple[Repair, ...]

    @property
    def changed_anything(self) -> bool:
        return any(r.kind not in LEFT_KINDS for r in self.repairs)


def repair_id(kind: str, claim_id: str) -> str:
    """Deterministic repair ids ``continuation-repair-<kind>-<32 hex>``
    (docs/reference/continuation.md#claim-repair)."""
    digest = hashlib.sha256(f"maka.continuation-repair.{kind}.v1\0{claim_id}".encode()).hexdigest()
    return f"continuation-repair-{kind}-{digest[:32]}"


def recovered_terminal_id(run_id: str) -> str:
    """The deterministic id of the terminal recovery writes for a run (one per run, ever)."""
    return f"{run_id}-recovered-terminal"
