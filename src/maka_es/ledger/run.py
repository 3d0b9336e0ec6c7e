"""Run aggregate: an AgentRun header plus its committed RuntimeEvent ledger, with its commands.

Why the Run is the consistency boundary: every fact of one tool operation lives in one run, so
validating a new fact needs only this run's state, and "one save of the Run" is one store
transaction (ledger.md#streams). Commands are *pure*: they validate against the current state
and return the facts to save, without mutating the aggregate. State changes only by folding
facts that were committed (``apply``), so a failed save can never leave a half-applied
aggregate behind.

Layout: the state and its fold are :mod:`maka_es.ledger.run_state`; the commands are deciders
in :mod:`~maka_es.ledger.run_append` (write rules, generic append, claim-repair start),
:mod:`~maka_es.ledger.run_lifecycle` (creation, header, seal, continuation target) and
:mod:`~maka_es.ledger.run_tools` (T1, T2, recovery bundle) and
:mod:`~maka_es.ledger.run_attest` (an operator's attestation, ADR 0022). :class:`Run` is the
state with those commands as methods, the shape the store and the services use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maka_es.errors import StoreCorruptionError
from maka_es.ledger import run_append, run_attest, run_lifecycle, run_tools
from maka_es.ledger.facts import RunCreated, RunHeaderUpdated, RunSealed, StoredFact
from maka_es.ledger.ownership import RunOwner
from maka_es.ledger.run_append import AppendDecision
from maka_es.ledger.run_lifecycle import bind_invocation, is_exact_create_retry
from maka_es.ledger.run_state import RunState
from maka_es.ledger.run_tools import ToolCommandDecision
from maka_es.tooljournal.attestation import OperatorAttestation
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = [
    "AppendDecision",
    "Run",
    "ToolCommandDecision",
    "bind_invocation",
    "is_exact_create_retry",
    "project_run",
]


class Run(RunState):
    """Event-sourced Run. Build with :meth:`create` (new) or :func:`project_run` (replay)."""

    __slots__ = ()

    # -- creation ---------------------------------------------------------------------------------

    @staticmethod
    def create(header: RunHeader, created_at: float, owner: RunOwner | None = None) -> RunCreated:
        """The fact that creates a run (non-terminal header, with its invocation id), owned by
        ``owner`` (ADR 0021)."""
        return run_lifecycle.create_run(header, created_at, owner)

    @staticmethod
    def create_continuation(
        header: RunHeader,
        start: RuntimeEvent,
        *,
        created_at: float,
        admitted: bool = False,
        owner: RunOwner | None = None,
    ) -> tuple[StoredFact, ...]:
        """The target run of a continuation with its start fact as event 1 (and, when
        ``admitted``, its header ``running``); see :func:`run_lifecycle.create_continuation`."""
        return run_lifecycle.create_continuation(
            header, start, created_at=created_at, admitted=admitted, owner=owner
        )

    # -- ledger and header ------------------------------------------------------------------------

    def decide_append(
        self,
        events: Sequence[RuntimeEvent],
        *,
        committed_at: float,
        expected_high_water: int | None = None,
    ) -> AppendDecision:
        """A generic batch, all or nothing (ledger.md#write-rules); reserved facts refused."""
        return run_append.decide_append(
            self, events, committed_at=committed_at, expected_high_water=expected_high_water
        )

    def decide_header_update(
        self, patch: Mapping[str, Any], *, updated_at: float
    ) -> RunHeaderUpdated:
        """A header patch under the header rules (ledger.md#header-rules)."""
        return run_lifecycle.decide_header_update(self, patch, updated_at=updated_at)

    # -- continuation -----------------------------------------------------------------------------

    def decide_seal(self, claim_id: str, *, sealed_at: float) -> RunSealed:
        """Seal this run as the source of a continuation claim, at its current version."""
        return run_lifecycle.decide_seal(self, claim_id, sealed_at=sealed_at)

    def decide_claim_repair_start(
        self, start: RuntimeEvent, *, committed_at: float
    ) -> AppendDecision:
        """The claim-repair start of a claimed, never-started target (event 1)."""
        return run_append.decide_claim_repair_start(self, start, committed_at=committed_at)

    # -- tool journal (T1, T2, recovery bundle) ---------------------------------------------------

    def decide_tool_prepared(
        self,
        call: RuntimeEvent,
        *,
        recovery_mode: str,
        committed_at: float,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommandDecision:
        """T1: call, dispatch fact and metadata in one save (tool-journal.md#t1)."""
        return run_tools.decide_tool_prepared(
            self, call, recovery_mode=recovery_mode, committed_at=committed_at, metadata=metadata
        )

    def decide_tool_outcome(
        self, response: RuntimeEvent, *, committed_at: float
    ) -> ToolCommandDecision:
        """T2: the response bound to its operation (tool-journal.md#t2)."""
        return run_tools.decide_tool_outcome(self, response, committed_at=committed_at)

    def decide_recovery_bundle(
        self,
        operation_id: str,
        reconcile: RuntimeEvent,
        decision_event: RuntimeEvent,
        outcome: RuntimeEvent | None,
        *,
        committed_at: float,
    ) -> ToolCommandDecision:
        """Reconcile fact, optional outcome and decision in one save (tool-journal.md#bundles)."""
        return run_tools.decide_recovery_bundle(
            self, operation_id, reconcile, decision_event, outcome, committed_at=committed_at
        )

    def decide_attestation(
        self, attestation: OperatorAttestation, *, committed_at: float
    ) -> ToolCommandDecision:
        """An operator's attestation: the T2 response and its provenance in one save (ADR 0022)."""
        return run_attest.decide_attestation(self, attestation, committed_at=committed_at)


def project_run(run: Run | None, facts: Iterable[Any]) -> Run | None:
    """eventsourcing projector: fold facts into a Run (``None`` until ``RunCreated``)."""
    for fact in facts:
        if run is None:
            if not isinstance(fact, RunCreated):
                raise StoreCorruptionError(f"run stream starts with {type(fact).__name__}")
            header = RunHeader.model_validate(fact.header)
            run = Run(fact.originator_id, header, 1, RunOwner.from_json(fact.owner))
        else:
            run.apply(fact)
    return run
