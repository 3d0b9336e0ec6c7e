"""Operator actions on a parked run: attest an indeterminate operation's outcome (ADR 0022).

Why a service apart from startup recovery: recovery never settles an unknown outcome by itself
(docs/reference/tool-journal.md#recovery-modes); only a person who looked at the world can. This
service is the one door for that decision: it validates it, commits it through the tool
journal's command (one save, one winner) and reports it to telemetry with identities and codes
only. The decision itself lives in :mod:`maka_es.ledger.run_attest`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from maka_es.continuation.telemetry import OperatorAttestedEvent, Telemetry
from maka_es.ledger.service import Ledger
from maka_es.ledger.tool_commands import ToolCommands
from maka_es.recovery.report import Repair, StartupRecoveryReport
from maka_es.resume.models import ResumePlan
from maka_es.resume.plan import plan_over_resolution
from maka_es.tooljournal.attestation import OperatorAttestation, validate_attestation_input

__all__ = ["AttestationReport", "OperatorActions"]


@dataclass(frozen=True, slots=True)
class AttestationReport:
    """What ``attest_operation`` did: ``created=False`` when the same decision was already
    committed (``attestation`` is then the first one, with its original time)."""

    run_id: str
    operation_id: str
    created: bool
    attestation: OperatorAttestation
    #: What finishing the run's recovery did once nothing awaited an operator any more
    #: (``terminal_recovered``, or why the run was left); empty when nothing was due.
    recovery: tuple[Repair, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "created": self.created,
            **self.attestation.to_detail(),
            "recovery": [{"kind": r.kind, "detail": r.detail} for r in self.recovery],
        }


class OperatorActions:
    """Typed, recorded operator actions over the tool journal (see module docstring)."""

    def __init__(
        self,
        ledger: Ledger,
        tool_commands: ToolCommands,
        telemetry: Telemetry,
        recover_run: Callable[[str], StartupRecoveryReport] | None = None,
    ) -> None:
        self._ledger = ledger
        self._tools = tool_commands
        self._telemetry = telemetry
        self._recover_run = recover_run

    def attest_operation(
        self,
        run_id: str,
        operation_id: str,
        *,
        applied: bool,
        result: Any = None,
        actor: str,
        note: str = "",
    ) -> AttestationReport:
        """Record that the indeterminate operation took effect (``applied=True``, with the
        ``result`` the model should see) or did not (``applied=False``); see
        :meth:`maka_es.ledger.tool_commands.ToolCommands.attest_operation`. A refusal raises a
        typed error and writes nothing. When nothing else of the run awaits a decision, the
        run's recovery is finished (see :meth:`_finish_recovery`)."""
        self._take_over_if_owner_gone(run_id, operation_id, (actor, note, applied, result))
        commit, attestation = self._tools.attest_operation(
            run_id, operation_id, applied=applied, result=result, actor=actor, note=note
        )
        if commit.created:
            self._emit(run_id, attestation)
        recovery = self._finish_recovery(run_id)
        return AttestationReport(run_id, commit.operation_id, commit.created, attestation, recovery)

    def _take_over_if_owner_gone(
        self, run_id: str, operation_id: str, decision: tuple[str, str, bool, Any]
    ) -> None:
        """A dead host's run awaiting the operator still names that host as its owner
        (recovery writes nothing to it, so it takes it over from nobody, ADR 0021), and a write
        of another host id is fenced: an attestation that will be accepted (valid input, the
        operation unsettled in an unended run) takes the run over first when its owner's lease
        has expired. A live owner's run is not taken: the attestation is then refused
        ``run_owner_fenced`` with nothing written, as before."""
        ownership = self._ledger.ownership
        if ownership is None or not self._ledger.run_exists(run_id):
            return
        validate_attestation_input(*decision)
        run = self._ledger.load_run(run_id)
        unsettled = {op.operation_id for op in run.tool_operations if op.is_unsettled}
        if (
            operation_id in unsettled
            and run.terminal_event is None
            and run.sealed_by is None
            and ownership.verdict(run) == "expired"
        ):
            ownership.take_over(run_id)

    def _finish_recovery(self, run_id: str) -> tuple[Repair, ...]:
        """Startup recovery left the run unsealed only because an operator had to decide
        (``left_awaiting_operator``, ADR 0019 amendment). Once no operation of it is unsettled,
        recover that one run now (same rules: ownership, tools first, the deterministic
        recovered terminal), so the next continuation sees the attested result. Also run on an
        exact retry: it finishes a recovery a crash interrupted after the attestation."""
        if self._recover_run is None:
            return ()
        run = self._ledger.load_run(run_id)
        if run.terminal_event is not None or run.sealed_by is not None:
            return ()
        if any(op.is_unsettled for op in run.tool_operations):
            return ()  # another call still awaits its own attestation
        return self._recover_run(run_id).repairs

    def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        """The Phase 0 plan of the run with its attestations as ``operator_attested``
        diagnostics. Why here: the events and the attestations are read from ONE load of the
        run, so a plan never names an attestation whose response it does not hold."""
        run = self._ledger.load_run(run_id)
        return plan_over_resolution(
            run.events, run.resolution(), expected_high_water, run.attestations
        )

    def _emit(self, run_id: str, attestation: OperatorAttestation) -> None:
        """Telemetry is best-effort: an actor that is not a telemetry identity drops the event."""
        try:
            event = OperatorAttestedEvent(
                session_id=self._ledger.get_run_header(run_id).session_id,
                run_id=run_id,
                operation_id=attestation.operation_id,
                actor=attestation.actor,
                outcome="applied" if attestation.applied else "not_applied",
            )
        except ValidationError:
            return
        self._telemetry.emit(event)
