"""The tool journal's commands on the store: T1, T2 and recovery bundles (ADR 0007).

Why here and not in ``tooljournal``: the Run aggregate is the consistency boundary of every
tool fact (docs/reference/tool-journal.md#t1-t2), so the command loads the Run, lets it decide
and commits the decision in ONE transaction. ``tooljournal`` holds the pure rules the Run
applies and the ``ToolRuntime`` that drives a tool between T1 and T2 through
:class:`maka_es.tooljournal.ports.ToolJournalStore`, which this service satisfies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.ports import RunStore
from maka_es.ledger.run import Run, ToolCommandDecision
from maka_es.ledger.service import concurrent_write
from maka_es.tooljournal.attestation import OperatorAttestation, validate_attestation_input
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.resolution import Resolution
from maka_es.wire.events import RuntimeEvent, as_runtime_event


@dataclass(frozen=True, slots=True)
class ToolCommit:
    """Result of T1 / T2 / a recovery bundle: ``created=False`` means an exact retry."""

    operation_id: str
    created: bool


class ToolCommands:
    """T1 / T2 / recovery-bundle commands and the journal's reads (see module docstring)."""

    def __init__(self, store: RunStore, ownership: HostLeases | None = None) -> None:
        self._store = store
        self._ownership = ownership

    def _commit(self, run_id: str, decide: Callable[[Run], ToolCommandDecision]) -> ToolCommit:
        with self._store.command():
            run = self._store.load_run(run_id)
            if self._ownership is not None:
                self._ownership.check_writer(run)  # ADR 0021: a fenced host writes nothing
            decision = decide(run)
            if decision.facts:
                self._store.commit(decision.facts, conflict=lambda: concurrent_write(run_id))
        return ToolCommit(decision.operation_id, decision.created)

    def commit_tool_prepared(
        self,
        run_id: str,
        call: RuntimeEvent | Mapping[str, Any],
        *,
        recovery_mode: str = "never_auto_retry",
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        """T1, one transaction: the function_call (unless the identical call is committed),
        the dispatch fact and the tool's recovery metadata. ``created=False`` means the same T1
        already committed: the caller must NOT run the tool."""
        event = as_runtime_event(call)
        return self._commit(
            run_id,
            lambda run: run.decide_tool_prepared(
                event,
                recovery_mode=recovery_mode,
                committed_at=self._store.now_ms(),
                metadata=metadata,
            ),
        )

    def commit_tool_outcome(
        self, run_id: str, response: RuntimeEvent | Mapping[str, Any]
    ) -> ToolCommit:
        """T2, one transaction: the response bound to its prepared operation."""
        event = as_runtime_event(response)
        return self._commit(
            run_id, lambda run: run.decide_tool_outcome(event, committed_at=self._store.now_ms())
        )

    def commit_tool_recovery_bundle(
        self,
        run_id: str,
        operation_id: str,
        *,
        reconcile: RuntimeEvent | Mapping[str, Any],
        decision: RuntimeEvent | Mapping[str, Any],
        outcome: RuntimeEvent | Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        """Recovery bundle, one transaction: reconcile fact, optional outcome, decision."""
        reconcile_event = as_runtime_event(reconcile)
        decision_event = as_runtime_event(decision)
        outcome_event = None if outcome is None else as_runtime_event(outcome)
        return self._commit(
            run_id,
            lambda run: run.decide_recovery_bundle(
                operation_id,
                reconcile_event,
                decision_event,
                outcome_event,
                committed_at=self._store.now_ms(),
            ),
        )

    def attest_operation(
        self,
        run_id: str,
        operation_id: str,
        *,
        applied: bool,
        result: Any = None,
        actor: str,
        note: str = "",
    ) -> tuple[ToolCommit, OperatorAttestation]:
        """An operator's attestation of an indeterminate operation, one transaction (ADR 0022):
        the T2 response carrying the attested outcome and its provenance, stamped with the
        application clock. Returns the commit and the attestation that stands (on
        ``created=False``, the one committed first, with its original time)."""
        validate_attestation_input(actor, note, applied, result)
        attestation = OperatorAttestation(
            operation_id=operation_id,
            applied=applied,
            result=result,
            actor=actor,
            note=note,
            attested_at=self._store.now_ms(),
            response_event_id=f"{operation_id}_response",
        )
        commit = self._commit(
            run_id,
            lambda run: run.decide_attestation(attestation, committed_at=attestation.attested_at),
        )
        standing = self._store.read_run(run_id, lambda run: run.attestation(operation_id))
        return commit, standing if standing is not None else attestation

    def attestations(self, run_id: str) -> tuple[OperatorAttestation, ...]:
        """The operator attestations recorded in the run (ADR 0022)."""
        return self._store.read_run(run_id, lambda run: run.attestations)

    def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        """Journal state of every operation of the run that crossed T1."""
        return self._store.read_run(run_id, lambda run: run.tool_operations)

    def resolve_run(self, run_id: str) -> Resolution:
        """The RecoveryResolver's verdict over the run's committed ledger."""
        return self._store.read_run(run_id, lambda run: run.resolution())
