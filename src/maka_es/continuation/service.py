"""Phase 1 entry points: plan a continuation of a session, execute an approved plan.

Why a service: planning reads the session, its runs, the lineage and the claims, asks the host
for its safety facts and reports lifecycle telemetry; execution revalidates, claims and calls
the provider's agent loop. Both depend on typed collaborators only (the ledger and claims
services, the host inspector, the application's tool runtime, the provider, telemetry), never
on the application object (ADR 0017). The
rules themselves are in ``planner``, ``gates`` and ``executor`` (with its revalidation)
(docs/reference/continuation.md).

The authoritative continuation planner over the store.

docs/reference/continuation.md#pre-planner and docs/reference/continuation.md#planner-steps.

Why separate from the pure gates: deciding *which* run to continue, reading its lineage through
earlier continuations (the shared ``continuation.lineage`` library), and asking the host for its
facts are reads against the store and the host. This module does those reads, turns every
failure into a single stable park reason, and then hands the committed evidence to the pure
``build_continuation_plan``. It never writes: planning is not a lease, and two planners may
plan the same boundary (execution arbitrates).

Order (docs/reference/continuation.md#planner-steps): source header; lineage and identity; a
blocked composite replay; a durable
claim on the boundary, checked against the recomputed plan and classified
(``continuation_claims``); an unclaimed run that already continues it; fresh ids; the gates. A
store that cannot be read parks (``source_run_unreadable``, or
``continuation_authority_unavailable`` for the claim lookup); it is never mistaken for a verdict
about the data, and nothing escapes raw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from maka_es.continuation.agent_loop import DEFAULT_STEP_LIMIT
from maka_es.continuation.claims import (
    Claims,
    RunReader,
    durable_claim,
    park,
    unclaimed_continuation,
)
from maka_es.continuation.executor import (
    ContinuationExecutor,
    ContinuationOutcome,
    ContinuationRevalidationError,
)
from maka_es.continuation.host import HostInspector, HostObservation
from maka_es.continuation.lineage import (
    LineagePark,
    check_v2_replay,
    checked_history_turns,
    read_lineage,
)
from maka_es.continuation.model.plan import (
    ContinuationIdentity,
    ContinuationInputs,
    ContinuationPlan,
    CwdPolicy,
    TerminalPolicy,
    build_continuation_plan,
    replay_blocked_plan,
)
from maka_es.continuation.model.replay import CompositeReplay, build_composite_replay
from maka_es.errors import InvalidPlanRequestError, MakaError
from maka_es.ledger.ports import STORE_FAULTS, store_fault_class
from maka_es.providers.protocol import Provider
from maka_es.telemetry import Telemetry
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.codec import CodecInputError, js_sort_key
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

#: ``LineagePark`` is re-exported for code that imported it from here before the lineage
#: library moved to ``continuation.lineage``.

FEATURE_FLAG = "MAKA_RUNTIME_SAFE_BOUNDARY_RESUME"
RESUMABLE_STATUSES = frozenset({"failed", "cancelled"})


@dataclass(frozen=True)
class PlannerSettings:
    """How the planner judges a source where the two revisions of the contract differ: the cwd
    rule (``strict`` refuses a changed cwd, ``relocatable`` continues) and the terminal rule
    (docs/reference/continuation.md#cwd, #terminal-boundary)."""

    cwd_policy: CwdPolicy = "strict"
    terminal_policy: TerminalPolicy = "strict"


class ContinuationPlanner:
    """Plans a continuation of a session from the store and the host (reads only)."""

    def __init__(
        self,
        reader: RunReader,
        inspector: HostInspector | None,
        new_id: Callable[[], str],
        *,
        feature_enabled: bool,
        settings: PlannerSettings | None = None,
    ) -> None:
        self.reader = reader
        self.inspector = inspector
        self.new_id = new_id
        self.feature_enabled = feature_enabled
        self.settings = settings or PlannerSettings()

    def candidate(self, session_id: str) -> RunHeader | None:
        """Newest (createdAt desc, runId desc) failed/cancelled session-inline run."""
        candidates = [
            header
            for header in self.reader.runs_of_session(session_id)
            if header.status in RESUMABLE_STATUSES and header.is_session_inline
        ]
        if not candidates:
            return None
        return max(candidates, key=lambda h: (h.created_at, js_sort_key(h.run_id)))

    def candidate_or_none(self, session_id: str) -> RunHeader | None:
        """The candidate, or ``None`` when there is none or the session cannot be read."""
        try:
            return self._candidate(session_id)
        except STORE_FAULTS:
            return None

    def _candidate(self, session_id: str) -> RunHeader | None:
        """The candidate; store faults propagate (the caller parks them)."""
        try:
            return self.candidate(session_id)
        except STORE_FAULTS:
            raise
        except MakaError:
            return None

    def plan(
        self,
        session_id: str,
        session_cwd: str,
        source_run_id: str | None = None,
        *,
        expected_high_water: int | None = None,
    ) -> ContinuationPlan:
        """Pre-planner parks (continuation.md#pre-planner): feature flag, candidate, host
        observation; then the planner (continuation.md#planner-steps).

        Never raises for what the store holds or fails to deliver: a store that cannot be read
        parks ``source_run_unreadable`` (claims: ``continuation_authority_unavailable``).
        ``expected_high_water`` is the caller's view of the source run's committed
        high-water; a different one parks ``runtime_offset_mismatch``.
        """
        if not self.feature_enabled:
            return park("resume_feature_disabled", f"{FEATURE_FLAG} is not exactly '1'")
        try:
            return self._plan(session_id, session_cwd, source_run_id, expected_high_water)
        except STORE_FAULTS as exc:
            return park(
                "source_run_unreadable",
                f"the store could not be read: {type(exc).__name__}",
                {"sourceRunId": source_run_id or "", "errorClass": store_fault_class(exc)},
            )

    def _plan(
        self,
        session_id: str,
        session_cwd: str,
        source_run_id: str | None,
        expected_high_water: int | None,
    ) -> ContinuationPlan:
        read: list[RuntimeEvent] | None = None
        if source_run_id is None:
            chosen = self._choose(session_id)
            if isinstance(chosen, ContinuationPlan):
                return chosen
            source_run_id, read = chosen
        if self.inspector is None:
            return park("safety_observation_unavailable", "no host inspector is configured")
        try:
            header = self.reader.header(source_run_id)
        except STORE_FAULTS:
            raise
        except MakaError as exc:
            return park(
                "source_run_unreadable",
                f"run {source_run_id} cannot be read: {exc.code}",
                {"sourceRunId": source_run_id},
            )
        if header.workspace_identity is None:
            return park(
                "workspace_identity_missing",
                f"run {source_run_id} recorded no workspace identity",
                {"sourceRunId": source_run_id},
            )
        try:
            observation = self.inspector.inspect(session_id, session_cwd)
        except Exception as exc:  # the host could not produce its facts: fail closed
            return park(
                "safety_observation_unavailable",
                f"host inspection failed: {type(exc).__name__}",
                {"errorClass": getattr(exc, "code", type(exc).__name__)},
            )
        source = self._read_source(session_id, header, read)
        if isinstance(source, ContinuationPlan):
            return source
        events, replay = source
        try:  # steps 5 and 6: is this boundary already continued?
            existing = durable_claim(self.reader, replay) or unclaimed_continuation(
                self.reader, session_id, header.run_id, len(events)
            )
        except STORE_FAULTS as exc:
            return park(
                "continuation_authority_unavailable",
                f"continuation claims cannot be read: {type(exc).__name__}",
                {"errorClass": store_fault_class(exc)},
            )
        if existing is not None:
            return existing
        return self._gates(header, events, replay, session_cwd, observation, expected_high_water)

    def _choose(self, session_id: str) -> ContinuationPlan | tuple[str, list[RuntimeEvent]]:
        """Pre-planner step 2: the candidate run and its events, or the park that says there
        is nothing to continue (no candidate, or one ended before its first user message)."""
        candidate = self._candidate(session_id)
        if candidate is None:
            awaiting = self._awaiting_operator(session_id)
            if awaiting is not None:
                return awaiting
            return park(
                "resume_candidate_missing",
                f"session {session_id} has no failed or cancelled session-inline run",
            )
        events = self._conversation_or_none(candidate)
        if events is None:
            return park(
                "resume_candidate_missing",
                f"run {candidate.run_id} ended before its first user message: nothing to continue",
                {"sourceRunId": candidate.run_id},
            )
        return candidate.run_id, events

    def _awaiting_operator(self, session_id: str) -> ContinuationPlan | None:
        """The park of the session's newest run when it is not ended because a call in it may
        have run (recovery leaves such a run awaiting the operator, ADR 0019 amendment): the
        reference's code for the blocked replay, with the tool named, rather than "nothing
        to continue". ``None`` when the newest run is ended or its replay is not blocked."""
        runs = [h for h in self.reader.runs_of_session(session_id) if h.is_session_inline]
        if not runs:
            return None
        newest = max(runs, key=lambda h: (h.created_at, js_sort_key(h.run_id)))
        if newest.is_terminal:
            return None
        source = self._read_source(session_id, newest)
        if isinstance(source, ContinuationPlan) and source.rejection_reasons == (
            "runtime_ledger_unreadable",
        ):
            return source if source.diagnostics[0].tool_name is not None else None
        return None

    def _conversation_or_none(self, candidate: RunHeader) -> list[RuntimeEvent] | None:
        """The candidate's events, or ``None`` when it is a first-generation run that recorded
        no conversation: only system facts (its recovered terminal), because it was ended
        before its first user message was committed. Such a run is no candidate: there is
        nothing to continue and the host's next turn starts fresh (ADR 0035). An unreadable
        ledger is returned as ``[]`` and parks in the planner's step 1 as before."""
        try:
            events = self.reader.events(candidate.run_id)
        except STORE_FAULTS:
            raise
        except MakaError:
            return []
        if (
            events
            and candidate.continuation_source is None
            and all(event.role == "system" for event in events)
        ):
            return None
        return events

    def _read_source(
        self, session_id: str, header: RunHeader, read: list[RuntimeEvent] | None = None
    ) -> ContinuationPlan | tuple[list[RuntimeEvent], CompositeReplay]:
        """Planner steps 2-4 (continuation.md#planner-steps): lineage, identity, composite replay
        (single-reason parks). ``read``: the source's events when the candidate step read
        them already (a non-empty list)."""
        try:
            events = read if read else self.reader.events(header.run_id)
        except STORE_FAULTS:
            raise
        except MakaError as exc:
            return park(
                "runtime_ledger_unreadable",
                f"run {header.run_id} ledger cannot be read: {exc.code}",
            )
        if not events:
            return park("runtime_ledger_unreadable", f"run {header.run_id} has no events")
        try:
            lineage = read_lineage(self.reader, header, events)
            check_v2_replay(lineage)
        except LineagePark as parked:
            return park(parked.code, str(parked), parked.detail)
        first = events[0]
        if (first.session_id, first.run_id) != (session_id, header.run_id):
            return park(
                "runtime_identity_mismatch",
                f"run {header.run_id} ledger belongs to {first.session_id}/{first.run_id}",
            )
        try:
            replay: CompositeReplay = build_composite_replay(lineage.segments)
        except CodecInputError as exc:
            return park("runtime_ledger_unreadable", f"lineage is not one immutable chain: {exc}")
        if not replay.replayable:  # step 4 comes before any claim is looked at
            return replay_blocked_plan(replay)
        return events, replay

    def _gates(
        self,
        header: RunHeader,
        events: list[RuntimeEvent],
        replay: CompositeReplay,
        current_cwd: str,
        observation: HostObservation,
        expected_high_water: int | None,
    ) -> ContinuationPlan:
        """Steps 7 and 8: fresh ids, then every gate (multi-reason)."""
        identity = ContinuationIdentity(
            invocation_id=self.new_id(), run_id=self.new_id(), turn_id=self.new_id()
        )
        inputs = ContinuationInputs(
            source_cwd=header.cwd,
            current_cwd=current_cwd,
            source_workspace_identity=header.workspace_identity,
            current_workspace_identity=observation.workspace_identity,
            background_operations_settled=observation.background_operations_settled,
            available_tool_names=list(observation.available_tool_names),
            continuation_identity=identity,
            workspace_checkpoint=observation.workspace_checkpoint,
            expected_runtime_event_high_water=expected_high_water,
            cwd_policy=self.settings.cwd_policy,
            terminal_policy=self.settings.terminal_policy,
            source_header=header,
        )
        return build_continuation_plan(events, inputs, replay=replay)


class Continuations:
    """Plans and executes continuations (see module docstring)."""

    def __init__(
        self,
        claims: Claims,
        host_inspector: HostInspector | None,
        telemetry: Telemetry,
        id_factory: Callable[[], str],
        tool_runtime: ToolRuntime,
        *,
        feature_enabled: Callable[[], bool],
    ) -> None:
        self.claims = claims
        self.tool_runtime = tool_runtime
        self.ledger = claims.ledger
        self.host_inspector = host_inspector
        self.telemetry = telemetry
        self.id_factory = id_factory
        self.feature_enabled = feature_enabled

    def planner(self, settings: PlannerSettings | None = None) -> ContinuationPlanner:
        ledger = self.ledger
        reader = RunReader(
            ledger.get_run_header,
            ledger.read_run_events,
            ledger.list_runs,
            self.claims.get_claim,
            self.end_pending,
        )
        return ContinuationPlanner(
            reader,
            self.host_inspector,
            self.id_factory,
            feature_enabled=self.feature_enabled(),
            settings=settings,
        )

    def end_pending(self, run_id: str) -> bool:
        """Whether ``run_id``'s owner may still be between ``end_run``'s two saves: this
        process holds the run, or its owner is another host whose lease is live (ADR 0021).
        An ownerless run, a lapsed lease, or this host before a restart (it holds nothing
        since) left the header for startup recovery to repair."""
        ownership = self.ledger.ownership
        if ownership is None:
            return False
        return ownership.verdict(self.ledger.load_run(run_id)) in ("held", "live")

    def plan(
        self,
        session_id: str,
        source_run_id: str | None = None,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        expected_high_water: int | None = None,
    ) -> ContinuationPlan:
        """See :meth:`maka_es.RuntimeApplication.plan_continuation`."""
        if expected_high_water is not None and (
            type(expected_high_water) is not int or expected_high_water < 0
        ):
            raise InvalidPlanRequestError(
                "expected_high_water must be a non-negative integer",
                detail={"expectedHighWater": repr(expected_high_water)},
            )
        planner = self.planner(settings)
        if not self.feature_enabled():
            plan = park("resume_feature_disabled", f"{FEATURE_FLAG} is not exactly '1'")
            self._emit_plan_telemetry(planner, session_id, source_run_id, plan)
            return plan
        try:
            session = self.ledger.get_session(session_id)
        except STORE_FAULTS as exc:
            plan = park(
                "source_run_unreadable",
                f"session {session_id} cannot be read: {type(exc).__name__}",
                {"sourceRunId": source_run_id or "", "errorClass": store_fault_class(exc)},
            )
        except MakaError:
            plan = park("resume_candidate_missing", f"session {session_id} does not exist")
        else:
            plan = planner.plan(
                session_id,
                current_cwd or session.cwd,
                source_run_id,
                expected_high_water=expected_high_water,
            )
        self._emit_plan_telemetry(planner, session_id, source_run_id, plan)
        return plan

    def _emit_plan_telemetry(
        self,
        planner: ContinuationPlanner,
        session_id: str,
        source_run_id: str | None,
        plan: ContinuationPlan,
    ) -> None:
        """Lifecycle telemetry of one planning (docs/reference/continuation.md#telemetry)."""
        if plan.continuation is not None:
            self.telemetry.plan_approved(
                session_id=session_id,
                source_run_id=plan.continuation.source_run_id,
                target_run_id=plan.continuation.run_id,
            )
            return
        if source_run_id is None and plan.rejection_reasons != ("resume_feature_disabled",):
            # the candidate's id when there was one, '' otherwise
            candidate = planner.candidate_or_none(session_id)
            source_run_id = candidate.run_id if candidate is not None else None
        self.telemetry.plan_parked(
            session_id=session_id,
            source_run_id=source_run_id or "",
            rejection_reasons=plan.rejection_reasons,
        )

    def execute(
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
        """See :meth:`maka_es.RuntimeApplication.execute_continuation`."""
        max_turns = checked_history_turns(history_turns)
        if step_limit is not None and (type(step_limit) is not int or step_limit < 1):
            raise InvalidPlanRequestError(
                "step_limit must be a positive integer",
                detail={"stepLimit": repr(step_limit)},
            )
        continuation = plan.continuation
        if continuation is None:
            raise ContinuationRevalidationError(
                "only a plan with disposition 'continue' can be executed",
                code="continuation_not_approved",
            )
        header = self.ledger.get_run_header(continuation.source_run_id)
        session = self.ledger.get_session(header.session_id)
        executor = ContinuationExecutor(
            self.claims,
            self.host_inspector,
            self.telemetry,
            self.tool_runtime,
            cwd_policy=(settings or PlannerSettings()).cwd_policy,
            system_prompt=system_prompt,
            step_limit=DEFAULT_STEP_LIMIT if step_limit is None else step_limit,
            history_turns=max_turns,
        )
        return executor.execute(
            plan, provider, session_id=header.session_id, current_cwd=current_cwd or session.cwd
        )
