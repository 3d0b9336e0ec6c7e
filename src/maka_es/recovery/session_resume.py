"""``resume``: a session's interrupted turn continued, or its park explained (ADR 0036).

Why one call: after a restart a host must learn whether its session's newest turn can go on,
and, when it cannot, what gets it out. This module reads the session's newest run and:

* nothing to resume when the session has no run, or its newest run completed or was
  cancelled;
* an operator fork that holds only its start (``maka-es fork``) is executed
  (``RunForks.execute_fork``);
* otherwise the session is planned from that run (``Continuations.plan``) and, when the plan
  continues, executed (``execute_continuation``: the same agent loop as every turn);
* a park returns its reasons with the operator commands that settle it: for each operation the
  resolver left indeterminate, ``maka-es attest`` (applied or not) while the run is not ended
  (recovery leaves such a run unsealed, ``left_awaiting_operator``, and the attestation then
  finishes its recovery; a run sealed by an older version refuses one, ADR 0022) and
  ``maka-es fork`` before its call in any case (docs/cli.md#repair); ``maka-es recover`` for a
  run that is not ended and awaits no decision.

Recovery itself (``recover()``) stays the host's first call at every start: it settles the
tools and ends the interrupted runs this reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.lineage import checked_history_turns
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.service import Continuations
from maka_es.continuation.turns import FINISHED, answer_of
from maka_es.ledger.service import Ledger
from maka_es.providers.protocol import Provider
from maka_es.recovery.operator_actions import RunForks, operator_commands
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.run_header import ContinuationSourceV2, RunHeader

__all__ = ["ResumeResult", "SessionResume"]

ResumeStatus = Literal["nothing_to_resume", "continued", "parked"]

#: Resolver decisions only an operator can settle (docs/reference/tool-journal.md#recovery-modes).
UNDECIDED = frozenset({"indeterminate", "parked"})


@dataclass(frozen=True)
class ResumeResult:
    """What ``resume`` did. ``run_id`` is the run it looked at (the session's newest), ``plan``
    the continuation plan when one was made, ``outcome`` the continued (or forked) run's end
    and ``answer`` its final text; a park carries its ``reasons`` and ``operator_commands``."""

    status: ResumeStatus
    run_id: str | None = None
    plan: ContinuationPlan | None = None
    outcome: ContinuationOutcome | None = None
    answer: str | None = None
    reasons: tuple[str, ...] = ()
    operator_commands: tuple[str, ...] = ()

    @property
    def disposition(self) -> str | None:
        """The plan's disposition (``continue`` / ``park``), ``None`` without a plan."""
        return None if self.plan is None else self.plan.disposition


class SessionResume:
    """``resume`` over the ledger, the continuation service and operator forks."""

    def __init__(self, ledger: Ledger, continuations: Continuations, run_forks: RunForks) -> None:
        self._ledger = ledger
        self._continuations = continuations
        self._forks = run_forks

    def resume(
        self,
        session_id: str,
        provider: Provider,
        *,
        system_prompt: str | None = None,
        step_limit: int | None = None,
        history_turns: int | None = None,
    ) -> ResumeResult:
        """See the module docstring; a refusal of the execution itself (a stale plan, a lost
        claim) propagates typed, as from ``execute_continuation``."""
        checked_history_turns(history_turns)
        runs = self._ledger.list_runs(session_id)
        if not runs or runs[-1].status in FINISHED:
            return ResumeResult("nothing_to_resume", runs[-1].run_id if runs else None)
        newest = runs[-1]
        if self._is_pending_fork(newest):
            outcome = self._forks.execute_fork(
                newest.run_id, provider, system_prompt=system_prompt, history_turns=history_turns
            )
            return self._continued(newest.run_id, None, outcome)
        plan = self._continuations.plan(session_id, newest.run_id)
        if plan.continuation is None:
            return self._parked(newest, plan)
        outcome = self._continuations.execute(
            plan,
            provider,
            system_prompt=system_prompt,
            step_limit=step_limit,
            history_turns=history_turns,
        )
        return self._continued(newest.run_id, plan, outcome)

    def _continued(
        self, run_id: str, plan: ContinuationPlan | None, outcome: ContinuationOutcome
    ) -> ResumeResult:
        answer = answer_of(self._ledger.read_run_events(outcome.target_run_id))
        return ResumeResult("continued", run_id, plan, outcome, answer)

    def _parked(self, newest: RunHeader, plan: ContinuationPlan) -> ResumeResult:
        """The park with the commands that get the session out of it."""
        decisions = resolve_tool_operations(self._ledger.read_run_events(newest.run_id)).decisions
        undecided = tuple(
            d.operation_id for d in decisions if d.status in UNDECIDED and d.operation_id
        )
        commands = operator_commands(newest.run_id, undecided, attestable=not newest.is_terminal)
        if not undecided and "provider_replay_non_suffix_gap" in plan.rejection_reasons:
            commands = self._gap_fork(newest.run_id)
        elif not newest.is_terminal and not undecided:  # an attestation finishes the recovery
            commands = (*commands, "maka-es recover")
        return ResumeResult(
            "parked",
            newest.run_id,
            plan,
            reasons=tuple(plan.rejection_reasons),
            operator_commands=commands,
        )

    def _gap_fork(self, run_id: str) -> tuple[str, ...]:
        """A response interrupted between its calls (one answered, the next never crossed T1)
        parks ``provider_replay_non_suffix_gap``: nothing is undecided, so the way out is a
        fork before that response's first operation, from which the model decides again."""
        events = self._ledger.read_run_events(run_id)
        answered = {e.function_response.id for e in events if e.function_response is not None}
        calls = [e.function_call.id if e.function_call else None for e in events]
        gap = next((n for n, call in enumerate(calls) if call and call not in answered), None)
        if gap is None:
            return ()
        start = gap
        while start > 0 and events[start - 1].role == "model":
            start -= 1
        decisions = resolve_tool_operations(events).decisions
        operation = {d.call_runtime_event_id: d.operation_id for d in decisions if d.operation_id}
        first = next((operation[e.id] for e in events[start:] if e.id in operation), None)
        return () if first is None else operator_commands(run_id, (first,), attestable=False)

    def _is_pending_fork(self, header: RunHeader) -> bool:
        """An operator fork that holds only its start (``execute_fork`` runs it)."""
        edge = header.continuation_source
        return (
            header.status == "running"
            and isinstance(edge, ContinuationSourceV2)
            and self._forks.provenance(edge.claim_id) is not None
            and self._ledger.run_high_water(header.run_id) == 1
        )
