"""Startup recovery's first step: let the tool catalogue settle what it can, before any seal.

Why a step of its own, run before anything is sealed (ADR 0019): a recovered terminal seals its
run, and a sealed run accepts no recovery bundle and no T2 any more. A ``Write`` that landed
before the crash can then never be settled from what the file shows, and every continuation of
the run parks for good. So, for every run recovery is about to end:

1. when the run has operations with T1 and no T2, the application's
   :class:`~maka_es.tooljournal.runtime.ToolRuntime` recovers them (reconcile, or re-execute an
   idempotent / replay-safe tool with the same operation id;
   docs/reference/continuation.md#tool-settlement);
2. what is still unsettled is then sorted: an operation whose recorded recovery mode is one that
   recovery settles by itself (``reconcile``, ``idempotent``, ``replay_safe``) but which this
   recovery could not settle (its tool is not in the catalogue, the catalogue's tool has another
   recovery mode than the one recorded at T1, or the tool runtime failed on the run) *holds* the
   run: it is not sealed, and the report says which operation, which tool and why. A later
   recovery with the right catalogue settles it. Every other unsettled operation
   (``never_auto_retry``, ``outcome_unknown``, ``reattach``) stays indeterminate and holds the
   run *awaiting the operator*: only an operator can decide those, and a sealed run could no
   longer take the attested outcome (ADR 0019 and ADR 0022, amendments of 2026-12-01). Once
   attested, the attestation finishes the run's recovery.

A store fault while settling is raised: no run has been sealed at that point, so nothing is
lost, and the next start repeats the whole recovery.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from maka_es.errors import MakaError
from maka_es.ledger.faults import is_store_fault
from maka_es.ledger.run import Run
from maka_es.ledger.service import Ledger
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.runtime import RecoveryAction, ToolRuntime
from maka_es.wire.events import RuntimeEvent

#: Recovery modes recovery settles by itself when it has the tool (docs/reference/tool-journal.md).
SELF_SETTLING_MODES: Final = frozenset({"reconcile", "idempotent", "replay_safe"})

#: Why an unsettled operation holds its run unsealed (``left_unreconciled`` detail ``reason``).
TOOL_NOT_IN_CATALOGUE: Final = "tool_not_in_catalogue"
RECOVERY_MODE_CHANGED: Final = "recovery_mode_changed"
TOOL_RECOVERY_FAILED: Final = "tool_recovery_failed"


@dataclass(frozen=True)
class ToolSettlement:
    """What settling one run's tool operations did, and what holds the run unsealed."""

    run_id: str
    #: What the tool runtime wrote (completed, parked or re-executed operations).
    settled: tuple[RecoveryAction, ...]
    #: ``{operationId, toolName, recoveryMode, reason}`` of each operation that holds the run.
    held: tuple[dict[str, Any], ...]
    #: The stable name of the tool runtime's failure on this run, if it failed.
    error_class: str | None = None
    #: ``{operationId, toolName, recoveryMode}`` of each operation only an operator can settle.
    awaiting_operator: tuple[dict[str, Any], ...] = ()

    @property
    def holds_run(self) -> bool:
        return bool(self.held or self.awaiting_operator)


def awaits_only_the_operator(run: Run) -> bool:
    """Whether recovery would leave ``run`` to the operator and write nothing to it: some
    operation is unsettled, and every unsettled one is of a mode no tool settles
    (``never_auto_retry``, ...; ``left_awaiting_operator``)."""
    modes = [op.recovery_mode for op in run.tool_operations if op.is_unsettled]
    return bool(modes) and all(mode not in SELF_SETTLING_MODES for mode in modes)


def unsettled_operations(ledger: Ledger, run_id: str) -> list[ToolOperationState]:
    """Operations of ``run_id`` with T1 and neither T2 nor a recovery decision."""
    return [op for op in ledger.load_run(run_id).tool_operations if op.is_unsettled]


def settle_run_tools(
    ledger: Ledger, tool_runtime: ToolRuntime | None, run_id: str
) -> ToolSettlement | None:
    """Settle ``run_id``'s unsettled operations with ``tool_runtime`` (``None``: an empty
    catalogue), then say which of the rest hold the run. ``None``: nothing was unsettled."""
    if not unsettled_operations(ledger, run_id):
        return None
    settled: tuple[RecoveryAction, ...] = ()
    error_class: str | None = None
    if tool_runtime is not None:
        try:
            report = tool_runtime.recover(run_id, call_events=_call_events(ledger, run_id))
        except Exception as exc:
            if is_store_fault(exc):
                raise  # nothing is sealed yet: the next start repeats the whole recovery
            error_class = exc.code if isinstance(exc, MakaError) else type(exc).__name__
        else:
            settled = tuple(a for a in report.actions if a.action != "left_indeterminate")
    catalogue = tool_runtime.tools if tool_runtime is not None else {}
    held, awaiting = [], []
    for operation in unsettled_operations(ledger, run_id):
        named = {
            "operationId": operation.operation_id,
            "toolName": operation.tool_name,
            "recoveryMode": operation.recovery_mode,
        }
        if operation.recovery_mode not in SELF_SETTLING_MODES:
            awaiting.append(named)
            continue
        reason = _hold_reason(operation, catalogue, error_class)
        if reason is not None:
            held.append({**named, "reason": reason})
    return ToolSettlement(run_id, settled, tuple(held), error_class, tuple(awaiting))


def _call_events(ledger: Ledger, run_id: str) -> dict[str, RuntimeEvent]:
    """The call events of ``run_id``'s unsettled operations, read from the run's last event
    back and only as far as the oldest of them: an interrupted call is near the end, and a run
    restored from a snapshot is not read whole (ADR 0012, ADR 0032). The last event with an id
    wins, as in a map of every event."""
    wanted = {op.call_event_id for op in unsettled_operations(ledger, run_id)}
    wanted.discard(None)
    found: dict[str, RuntimeEvent] = {}
    if not wanted:
        return found
    for event in ledger.load_run(run_id).events_newest_first():
        if event.id in wanted:
            found[event.id] = event
            wanted.discard(event.id)
            if not wanted:
                break
    return found


def _hold_reason(
    operation: ToolOperationState, catalogue: dict[str, Any], error_class: str | None
) -> str | None:
    """Why ``operation`` (of a self-settling mode) keeps its run unsealed; ``None`` when the
    tool runtime settled all it could and sealing loses nothing."""
    tool = catalogue.get(operation.tool_name)
    if tool is None:
        return TOOL_NOT_IN_CATALOGUE
    if tool.recovery_mode != operation.recovery_mode:
        return RECOVERY_MODE_CHANGED
    if error_class is not None:
        return TOOL_RECOVERY_FAILED
    return None
