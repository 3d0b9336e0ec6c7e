"""The verbs of :class:`maka_es.RuntimeApplication`: what a host calls.

Why a separate surface: the application is a composition root (ADR 0017); each public method
here is a one-line delegation to the service that owns the rule. Keeping them apart from the
wiring keeps both short, and a host reading this page sees its whole API at once (ADR 0039):
turns, sessions and runs, reading a run, ending it, planning and continuing, the operator's
actions, the lease. The plumbing (raw appends, creating and importing runs, header patches,
raw payloads, the tool journal, claims) is not here: it is on the application's documented
service attributes (``ledger``, ``run_starts``, ``tool_journal``, ``claims``, ``ownership``).
Saving raw facts is part of neither: only commands are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.service import Continuations, PlannerSettings
from maka_es.continuation.turns import TurnResult, Turns
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.model.host_config import HostConfig
from maka_es.ledger.model.ownership import HostLease
from maka_es.ledger.service import HostSessions, Ledger, SessionInfo
from maka_es.providers.protocol import Provider
from maka_es.recovery.operator_actions import (
    AttestationOutcome,
    ForkOutcome,
    OperatorActions,
    RunForks,
)
from maka_es.recovery.session_resume import ResumeResult, SessionResume
from maka_es.resume.models import ResumePlan
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

EventInput = RuntimeEvent | Mapping[str, Any]


class RuntimeApi:
    """Delegations to the services the application builds (see module docstring)."""

    ledger: Ledger
    ownership: HostLeases
    run_forks: RunForks
    _continuations: Continuations
    _operator_actions: OperatorActions
    _host_sessions: HostSessions
    _turns: Turns
    _session_resume: SessionResume

    # -- turns (ADR 0036) -----------------------------------------------------------------------

    def run_turn(
        self,
        session_id: str,
        prompt: str,
        provider: Provider,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        system_prompt: str | None = None,
        step_limit: int | None = None,
        history_turns: int | None = None,
    ) -> TurnResult:
        """A whole turn on the agent loop every turn runs on: the run from the host config
        with the user message in ONE save, then model -> T1 -> tool -> T2 -> model to the
        answer, then its terminal. Refused (``turn_session_unfinished``, nothing written)
        while the session's newest run is live, waiting or failed: ``resume`` first. Every
        request starts with the session's earlier completed turns (ADR 0038): at most
        ``history_turns`` of them (``None``: all, ``0``: none)."""
        return self._turns.run_turn(
            session_id,
            prompt,
            provider,
            run_id=run_id,
            invocation_id=invocation_id,
            turn_id=turn_id,
            system_prompt=system_prompt,
            step_limit=step_limit,
            history_turns=history_turns,
        )

    def resume(
        self,
        session_id: str,
        provider: Provider,
        *,
        system_prompt: str | None = None,
        step_limit: int | None = None,
        history_turns: int | None = None,
    ) -> ResumeResult:
        """Continue the session's interrupted turn (a plan that continues is executed, a
        pending operator fork is run), or return the park with its reasons and the operator
        commands that get it out; ``nothing_to_resume`` when its newest run completed. Call
        it at every start after ``recover()``, before new prompts. ``history_turns`` as for
        ``run_turn`` (pass the same value: the resumed turn is then shown the same prefix)."""
        return self._session_resume.resume(
            session_id,
            provider,
            system_prompt=system_prompt,
            step_limit=step_limit,
            history_turns=history_turns,
        )

    # -- sessions and runs (Ledger) -------------------------------------------------------------

    def open_session(
        self, session_id: str, cwd: str | None = None, workspace_identity: str | None = None
    ) -> SessionInfo:
        """Open a session; repeating the call with the same cwd and workspace identity returns
        the existing one (safe at every start), another cwd or identity is refused
        (``session_already_exists``, ``detail.fields``). ``cwd`` defaults to the host config's;
        with a workspace resolver (default with a host config) an omitted identity is the
        cwd's marker identity."""
        return self._host_sessions.open_session(session_id, cwd, workspace_identity)

    def start_run(
        self,
        session_id: str,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        config: HostConfig | None = None,
    ) -> RunHeader:
        """Create a run from the host config (``host_config=``, or ``config``): ids default to
        the id factory's, timestamps to the clock; the session's workspace identity is copied."""
        return self._host_sessions.start_run(
            session_id, run_id=run_id, invocation_id=invocation_id, turn_id=turn_id, config=config
        )

    def get_session(self, session_id: str) -> SessionInfo:
        """The session's cwd, workspace identity and runs; ``session_not_found`` if none."""
        return self.ledger.get_session(session_id)

    def list_sessions(self) -> list[str]:
        """Every session id of the store, in the order they were opened."""
        return self.ledger.list_sessions()

    def get_run_header(self, run_id: str) -> RunHeader:
        """The run's current header (status, ids, timestamps); ``run_not_found`` if none."""
        return self.ledger.get_run_header(run_id)

    def list_runs(self, session_id: str) -> list[RunHeader]:
        """The headers of the session's runs, in creation order."""
        return self.ledger.list_runs(session_id)

    def run_exists(self, run_id: str) -> bool:
        """Whether the store holds a run with this id (reads only)."""
        return self.ledger.run_exists(run_id)

    def end_run(self, run_id: str, terminal: EventInput) -> RunHeader:
        """Commit the run's terminal event and its header status in one transaction; an exact
        retry is a no-op, anything else after the terminal is refused (ADR 0021 rules who may
        end it)."""
        return self.ledger.end_run(run_id, terminal)

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        """The run's committed RuntimeEvents in order: what a host replays or shows."""
        return self.ledger.read_run_events(run_id)

    # -- run ownership (HostLeases, ADR 0021) ---------------------------------------------------

    def heartbeat(self) -> HostLease:
        """Renew this host's lease (one save): call it more often than the lease duration,
        from the host's loop or a timer thread, while this host has live runs."""
        return self.ownership.heartbeat()

    # -- operator actions (ADR 0022) -----------------------------------------------------------

    def attest_operation(
        self,
        run_id: str,
        operation_id: str,
        *,
        applied: bool,
        result: Any = None,
        actor: str,
        note: str = "",
    ) -> AttestationOutcome:
        """An operator's recorded decision about an indeterminate operation: it took effect
        (``result`` is what the model sees) or it did not. Never made automatically."""
        return self._operator_actions.attest_operation(
            run_id, operation_id, applied=applied, result=result, actor=actor, note=note
        )

    def fork_run(
        self, run_id: str, *, before_operation: str, actor: str, note: str = ""
    ) -> ForkOutcome:
        """A new run continuing ``run_id``'s prefix before the call of ``before_operation``;
        the source is untouched and the fork claims it like a continuation (ADR 0022)."""
        return self.run_forks.fork_run(
            run_id, before_operation=before_operation, actor=actor, note=note
        )

    def execute_fork(
        self,
        fork_run_id: str,
        provider: Provider,
        *,
        system_prompt: str | None = None,
        history_turns: int | None = None,
    ) -> ContinuationOutcome:
        """Run a fork (only its start committed) with the prefix it kept as its replay, through
        the continuation's agent loop and tools; ``fork_not_pending`` otherwise (ADR 0022).
        ``history_turns`` as for ``run_turn`` (ADR 0038)."""
        return self.run_forks.execute_fork(
            fork_run_id, provider, system_prompt=system_prompt, history_turns=history_turns
        )

    # -- Phase 0 --------------------------------------------------------------------------------

    def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        """The Phase 0 ResumePlan of the run's committed prefix, with the run's operator
        attestations as diagnostics (ADR 0022). Reads only; never writes."""
        return self._operator_actions.plan_resume(run_id, expected_high_water)

    # -- Phase 1 (Continuations) ----------------------------------------------------------------

    def plan_continuation(
        self,
        session_id: str,
        source_run_id: str | None = None,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        expected_high_water: int | None = None,
    ) -> ContinuationPlan:
        """May this session continue, and from exactly which boundary?

        ``source_run_id`` defaults to the newest failed/cancelled session-inline run;
        ``current_cwd`` to the session's cwd; ``expected_high_water`` is the caller's view of
        the source's committed high-water (another one parks ``runtime_offset_mismatch``).
        Reads only; a store that cannot be read parks (docs/reference/continuation.md#plan).
        """
        return self._continuations.plan(
            session_id,
            source_run_id,
            current_cwd=current_cwd,
            settings=settings,
            expected_high_water=expected_high_water,
        )

    def execute_continuation(
        self,
        plan: ContinuationPlan,
        provider: Provider,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        system_prompt: str | None = None,
        step_limit: int | None = None,
        history_turns: int | None = None,
    ) -> ContinuationOutcome:
        """Revalidate, claim the source boundary (one save), then run the agent loop: the
        provider, the tools it calls (through ``tool_runtime``, T1/T2), the provider again,
        at most ``step_limit`` provider calls (default ``DEFAULT_STEP_LIMIT``). A stale plan
        or a lost claim raises ``ContinuationRevalidationError`` before any write. Each
        request starts with the session history of the source's turn (``history_turns`` as
        for ``run_turn``, ADR 0038)."""
        return self._continuations.execute(
            plan,
            provider,
            current_cwd=current_cwd,
            settings=settings,
            system_prompt=system_prompt,
            step_limit=step_limit,
            history_turns=history_turns,
        )
