"""The public commands and reads of :class:`maka_es.RuntimeApplication`.

Why a separate surface: the application is a composition root (ADR 0017); each public method
here is a one-line delegation to the service that owns the rule, with the contract in the
service's docstring. Keeping them apart from the wiring keeps both short, and a host reading
this page sees the whole API at once. Saving raw facts is not part of it: only commands are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maka_es.continuation.claims import Claims, ContinuationClaim
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.plan import ContinuationPlan
from maka_es.continuation.planner import PlannerSettings
from maka_es.continuation.provider import Provider
from maka_es.continuation.service import Continuations
from maka_es.continuation.turns import TurnResult, Turns
from maka_es.ledger.facts import StartKind, StoredFact
from maka_es.ledger.host_config import HostConfig
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.host_sessions import HostSessions
from maka_es.ledger.ownership import HostLease
from maka_es.ledger.run_start import RunStarts
from maka_es.ledger.service import AppendResult, Ledger, SessionInfo
from maka_es.ledger.tool_commands import ToolCommands, ToolCommit
from maka_es.recovery.operator_actions import (
    AttestationReport,
    ForkReport,
    OperatorActions,
    RunForks,
)
from maka_es.recovery.session_resume import ResumeResult, SessionResume
from maka_es.resume.models import ResumePlan
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.resolution import Resolution
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

EventInput = RuntimeEvent | Mapping[str, Any]


class RuntimeApi:
    """Delegations to the services the application builds (see module docstring)."""

    ledger: Ledger
    tool_commands: ToolCommands
    claims: Claims
    continuations: Continuations
    operator_actions: OperatorActions
    run_forks: RunForks
    ownership: HostLeases
    host_sessions: HostSessions
    run_starts: RunStarts
    turns: Turns
    session_resume: SessionResume

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
    ) -> TurnResult:
        """A whole turn on the agent loop every turn runs on: the run from the host config
        with the user message in ONE save, then model -> T1 -> tool -> T2 -> model to the
        answer, then its terminal. Refused (``turn_session_unfinished``, nothing written)
        while the session's newest run is live, waiting or failed: ``resume`` first."""
        return self.turns.run_turn(
            session_id,
            prompt,
            provider,
            run_id=run_id,
            invocation_id=invocation_id,
            turn_id=turn_id,
            system_prompt=system_prompt,
            step_limit=step_limit,
        )

    def resume(
        self,
        session_id: str,
        provider: Provider,
        *,
        system_prompt: str | None = None,
        step_limit: int | None = None,
    ) -> ResumeResult:
        """Continue the session's interrupted turn (a plan that continues is executed, a
        pending operator fork is run), or return the park with its reasons and the operator
        commands that get it out; ``nothing_to_resume`` when its newest run completed. Call
        it at every start after ``recover()``, before new prompts."""
        return self.session_resume.resume(
            session_id, provider, system_prompt=system_prompt, step_limit=step_limit
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
        return self.host_sessions.open_session(session_id, cwd, workspace_identity)

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
        return self.host_sessions.start_run(
            session_id, run_id=run_id, invocation_id=invocation_id, turn_id=turn_id, config=config
        )

    def get_session(self, session_id: str) -> SessionInfo:
        return self.ledger.get_session(session_id)

    def list_sessions(self) -> list[str]:
        return self.ledger.list_sessions()

    def create_run(self, header: RunHeader | Mapping[str, Any]) -> RunHeader:
        return self.ledger.create_run(header)

    def create_run_with_events(
        self, header: RunHeader | Mapping[str, Any], events: Sequence[EventInput]
    ) -> AppendResult:
        """Create a run with its first events (a turn's user message) in ONE save, under the
        write rules of ``create_run`` and ``append_events`` (ADR 0036)."""
        return self.run_starts.create_run_with_events(header, events)

    def import_run(
        self, header: RunHeader | Mapping[str, Any], events: Sequence[EventInput]
    ) -> AppendResult:
        return self.ledger.import_run(header, events)

    def get_run_header(self, run_id: str) -> RunHeader:
        return self.ledger.get_run_header(run_id)

    def list_runs(self, session_id: str) -> list[RunHeader]:
        return self.ledger.list_runs(session_id)

    def all_run_ids(self) -> list[str]:
        return self.ledger.all_run_ids()

    def list_all_runs(self) -> list[RunHeader]:
        return self.ledger.list_all_runs()

    def run_exists(self, run_id: str) -> bool:
        return self.ledger.run_exists(run_id)

    def append_events(
        self, run_id: str, events: Iterable[EventInput], *, expected_high_water: int | None = None
    ) -> AppendResult:
        return self.ledger.append_events(run_id, events, expected_high_water=expected_high_water)

    def append_event(
        self, run_id: str, event: EventInput, *, expected_high_water: int | None = None
    ) -> AppendResult:
        return self.ledger.append_events(run_id, [event], expected_high_water=expected_high_water)

    def update_run_header(self, run_id: str, patch: Mapping[str, Any]) -> RunHeader:
        return self.ledger.update_run_header(run_id, patch)

    def end_run(self, run_id: str, terminal: EventInput) -> RunHeader:
        return self.ledger.end_run(run_id, terminal)

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        return self.ledger.read_run_events(run_id)

    def run_high_water(self, run_id: str) -> int:
        return self.ledger.run_high_water(run_id)

    def read_run_payloads(self, run_id: str) -> list[str]:
        return self.ledger.read_run_payloads(run_id)

    # -- run ownership (HostLeases, ADR 0021) ---------------------------------------------------

    def heartbeat(self) -> HostLease:
        """Renew this host's lease (one save): call it more often than the lease duration,
        from the host's loop or a timer thread, while this host has live runs."""
        return self.ownership.heartbeat()

    def host_lease(self, host_id: str | None = None) -> HostLease | None:
        """The newest lease of ``host_id`` (default: this host), ``None`` if it has none."""
        return self.ownership.lease(host_id)

    # -- tool journal (ToolCommands) ------------------------------------------------------------

    def commit_tool_prepared(
        self,
        run_id: str,
        call: EventInput,
        *,
        recovery_mode: str = "never_auto_retry",
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        return self.tool_commands.commit_tool_prepared(
            run_id, call, recovery_mode=recovery_mode, metadata=metadata
        )

    def commit_tool_outcome(self, run_id: str, response: EventInput) -> ToolCommit:
        return self.tool_commands.commit_tool_outcome(run_id, response)

    def commit_tool_recovery_bundle(
        self,
        run_id: str,
        operation_id: str,
        *,
        reconcile: EventInput,
        decision: EventInput,
        outcome: EventInput | None = None,
    ) -> ToolCommit:
        return self.tool_commands.commit_tool_recovery_bundle(
            run_id, operation_id, reconcile=reconcile, decision=decision, outcome=outcome
        )

    def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        return self.tool_commands.tool_operations(run_id)

    def resolve_run(self, run_id: str) -> Resolution:
        return self.tool_commands.resolve_run(run_id)

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
    ) -> AttestationReport:
        """An operator's recorded decision about an indeterminate operation: it took effect
        (``result`` is what the model sees) or it did not. Never made automatically."""
        return self.operator_actions.attest_operation(
            run_id, operation_id, applied=applied, result=result, actor=actor, note=note
        )

    def fork_run(
        self, run_id: str, *, before_operation: str, actor: str, note: str = ""
    ) -> ForkReport:
        """A new run continuing ``run_id``'s prefix before the call of ``before_operation``;
        the source is untouched and the fork claims it like a continuation (ADR 0022)."""
        return self.run_forks.fork_run(
            run_id, before_operation=before_operation, actor=actor, note=note
        )

    def execute_fork(
        self, fork_run_id: str, provider: Provider, *, system_prompt: str | None = None
    ) -> ContinuationOutcome:
        """Run a fork (only its start committed) with the prefix it kept as its replay, through
        the continuation's agent loop and tools; ``fork_not_pending`` otherwise (ADR 0022)."""
        return self.run_forks.execute_fork(fork_run_id, provider, system_prompt=system_prompt)

    # -- Phase 0 --------------------------------------------------------------------------------

    def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        """The Phase 0 ResumePlan of the run's committed prefix, with the run's operator
        attestations as diagnostics (ADR 0022). Reads only; never writes."""
        return self.operator_actions.plan_resume(run_id, expected_high_water)

    # -- Phase 1 (Continuations, Claims) --------------------------------------------------------

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
        return self.continuations.plan(
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
    ) -> ContinuationOutcome:
        """Revalidate, claim the source boundary (one save), then run the agent loop: the
        provider, the tools it calls (through ``tool_runtime``, T1/T2), the provider again,
        at most ``step_limit`` provider calls (default ``DEFAULT_STEP_LIMIT``). A stale plan
        or a lost claim raises ``ContinuationRevalidationError`` before any write."""
        return self.continuations.execute(
            plan,
            provider,
            current_cwd=current_cwd,
            settings=settings,
            system_prompt=system_prompt,
            step_limit=step_limit,
        )

    def get_claim(self, claim_id: str) -> ContinuationClaim | None:
        return self.claims.get_claim(claim_id)

    def claim_exists(self, claim_id: str) -> bool:
        return self.claims.claim_exists(claim_id)

    def all_claims(self) -> list[ContinuationClaim]:
        return self.claims.all_claims()

    def continuation_start_record(
        self, claim_id: str, start: RuntimeEvent, *, start_kind: StartKind
    ) -> StoredFact:
        return self.claims.continuation_start_record(claim_id, start, start_kind=start_kind)

    def create_claimed_run(
        self, header: RunHeader, start: RuntimeEvent, *, start_kind: StartKind | None = None
    ) -> None:
        self.claims.create_claimed_run(header, start, start_kind=start_kind)

    def start_claimed_run(self, run_id: str, start: RuntimeEvent) -> None:
        self.claims.start_claimed_run(run_id, start)
