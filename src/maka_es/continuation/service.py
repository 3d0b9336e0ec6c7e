"""Phase 1 entry points: plan a continuation of a session, execute an approved plan.

Why a service: planning reads the session, its runs, the lineage and the claims, asks the host
for its safety facts and reports lifecycle telemetry; execution revalidates, claims and calls
the provider's agent loop. Both depend on typed collaborators only (the ledger and claims
services, the host inspector, the application's tool runtime, the provider, telemetry), never
on the application object (ADR 0017). The
rules themselves are in ``planner``, ``gates`` and ``executor`` (with its revalidation)
(docs/reference/continuation.md).
"""

from __future__ import annotations

from collections.abc import Callable

from maka_es.continuation.agent_loop import DEFAULT_STEP_LIMIT
from maka_es.continuation.claims import Claims, RunReader, park
from maka_es.continuation.executor import (
    ContinuationExecutor,
    ContinuationOutcome,
    ContinuationRevalidationError,
)
from maka_es.continuation.host import HostInspector
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.planner import FEATURE_FLAG, ContinuationPlanner, PlannerSettings
from maka_es.continuation.session_history import checked_history_turns
from maka_es.errors import InvalidPlanRequestError, MakaError
from maka_es.ledger.ports import STORE_FAULTS, store_fault_class
from maka_es.providers.protocol import Provider
from maka_es.telemetry import Telemetry
from maka_es.tooljournal.runtime import ToolRuntime


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
