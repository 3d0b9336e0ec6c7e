"""Executes an approved continuation exactly once (spec §4.4, §4.7; seed Phase 1).

Order, and why:

1. **Revalidate** immediately before execution: a plan is not a lease. Source identity,
   terminal, cwd (strict policy), high-water, ledger identity and replay are re-read from the
   store; workspace identity, background work, tool catalog and checkpoint are re-inspected;
   an existing claim or continuation of the boundary, or a taken target run id, refuses.
2. **Claim, in ONE save**: the claim (a stream whose id derives from the source boundary), the
   source run's seal (at the version that was just revalidated), the target Run (header with
   ``parentRunId``, ``parentTurnId``, ``continuationSource`` V2) with its continuation-start fact
   as event 1, the invocation binding and the session's registration. A concurrent claimer, or
   a source that changed since step 1, loses on the store's uniqueness and leaves nothing.
3. **Only then** is the provider called, with the validated replay context: no new user
   event, no duplicate of the original user message.
4. The provider's outputs, then the terminal event, then the terminal header are committed
   (terminal event before header, always).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maka_es.application.continuation_planner import (
    LineagePark,
    RunReader,
    check_v2_replay,
    continuations_of,
    prefix_segment,
    read_lineage,
)
from maka_es.application.host import HostInspector, HostObservation
from maka_es.application.provider import Provider, ProviderRequest
from maka_es.application.telemetry import Telemetry, error_class_of
from maka_es.domain.claim import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
    record_start_fact,
)
from maka_es.domain.events import RuntimeEvent
from maka_es.domain.run import Run, bind_invocation
from maka_es.domain.run_header import RunHeader, run_status_for_terminal_event, terminal_event
from maka_es.errors import MakaError
from maka_es.infrastructure import failpoints
from maka_es.projections.continuation import (
    ContinuationPlan,
    CwdPolicy,
    RuntimeContinuation,
    normalize_cwd,
)
from maka_es.projections.continuation_replay import build_composite_replay

#: Crash-harness failpoints (spec §4.7). The claim, the target run and its start fact are ONE
#: commit here, so the first three names mark the same point.
AFTER_CLAIM_COMMITTED = "continuation.after_continuation_claim_committed"
AFTER_RUN_CREATED = "continuation.after_run_created"
AFTER_START_COMMITTED = "continuation.after_continuation_start_committed"
AFTER_TERMINAL_EVENT = failpoints.AFTER_TERMINAL_EVENT
AFTER_TERMINAL_HEADER = failpoints.AFTER_TERMINAL_HEADER


class ContinuationRevalidationError(MakaError):
    """Execution refused immediately before it would start (spec §4.7 codes)."""

    default_code = "continuation_revalidation_failed"


@dataclass(frozen=True)
class ContinuationOutcome:
    """What execution did: the target run, its terminal status, and the error class if the
    provider failed (the failure is committed as the run's terminal fact)."""

    target_run_id: str
    status: str
    error_class: str | None
    outputs: int


def _refuse(code: str, message: str, **detail: Any) -> ContinuationRevalidationError:
    return ContinuationRevalidationError(message, code=code, detail=detail)


class ContinuationExecutor:
    """One execution of one plan, against one application (see module docstring)."""

    def __init__(
        self,
        app: Any,
        inspector: HostInspector | None,
        telemetry: Telemetry,
        *,
        cwd_policy: CwdPolicy = "strict",
        system_prompt: str | None = None,
    ) -> None:
        self.app = app
        self.inspector = inspector
        self.telemetry = telemetry
        self.cwd_policy = cwd_policy
        self.system_prompt = system_prompt

    # -- revalidation -----------------------------------------------------------------------------

    def revalidate(
        self, continuation: RuntimeContinuation, session_id: str, current_cwd: str
    ) -> tuple[RunHeader, Run, SourceBoundary, HostObservation]:
        app = self.app
        runs: list[RunHeader] = app.list_runs(session_id)
        self._refuse_active_runs(runs, continuation.source_run_id)
        try:
            header: RunHeader = app.get_run_header(continuation.source_run_id)
            source: Run = app._load_run(continuation.source_run_id)
        except MakaError as exc:
            raise _refuse(
                "source_identity_changed", f"source run cannot be read: {exc.code}"
            ) from None
        if (header.session_id, header.run_id, header.turn_id) != (
            session_id,
            continuation.source_run_id,
            continuation.source_turn_id,
        ):
            raise _refuse("source_identity_changed", "source run identity differs from the plan")
        events = list(source.events)
        terminals = [e for e in events if e.is_terminal]
        if len(terminals) != 1 or run_status_for_terminal_event(terminals[0]) != header.status:
            raise _refuse(
                "source_terminal_changed", "source run no longer has one matching terminal fact"
            )
        if self.cwd_policy == "strict" and normalize_cwd(header.cwd) != normalize_cwd(current_cwd):
            raise _refuse(
                "source_cwd_changed",
                "the current cwd differs from the source run's",
                sourceCwd=header.cwd,
                currentCwd=current_cwd,
            )
        if len(events) != continuation.source_runtime_event_high_water:
            planned = continuation.source_runtime_event_high_water
            raise _refuse(
                "source_high_water_changed",
                f"source has {len(events)} events, the plan {planned}",
                plannedHighWater=planned,
                actualHighWater=len(events),
            )
        spine = (
            session_id,
            continuation.source_invocation_id,
            continuation.source_run_id,
            continuation.source_turn_id,
        )
        if any(e.identity != spine for e in events):
            raise _refuse("source_ledger_identity_changed", "a source event has another identity")
        boundary = self._boundary(header, events, continuation)
        observation = self._reinspect(session_id, current_cwd, continuation)
        self._refuse_existing_claims(runs, boundary, continuation)
        return header, source, boundary, observation

    def _refuse_active_runs(self, runs: Sequence[RunHeader], source_run_id: str) -> None:
        for run in runs:
            if not run.is_terminal and run.run_id != source_run_id:
                raise _refuse(
                    "continuation_run_active",
                    f"run {run.run_id} of the session is still active",
                    activeRunId=run.run_id,
                )

    def _boundary(
        self, header: RunHeader, events: Sequence[RuntimeEvent], continuation: RuntimeContinuation
    ) -> SourceBoundary:

        app = self.app
        reader = RunReader(app.get_run_header, app.read_run_events, app.list_runs)
        try:
            lineage = read_lineage(reader, header, events)
            check_v2_replay(lineage)
            replay = build_composite_replay(lineage.segments)
        except (LineagePark, MakaError) as exc:
            raise _refuse("source_replay_changed", f"lineage no longer replays: {exc}") from None
        if (
            not replay.replayable
            or replay.manifest_digest is None
            or replay.provider_replay_digest is None
            or [e.to_wire() for e in replay.runtime_context]
            != [e.to_wire() for e in continuation.runtime_context]
        ):
            raise _refuse("source_replay_changed", "the replay context differs from the plan")
        first = events[0]
        segment = prefix_segment(events)
        return SourceBoundary(
            session_id=first.session_id,
            invocation_id=first.invocation_id,
            run_id=first.run_id,
            turn_id=first.turn_id,
            high_water=len(events),
            prefix_digest=str(segment["prefixDigest"]),
            manifest_digest=replay.manifest_digest,
            provider_replay_digest=replay.provider_replay_digest,
        )

    def _reinspect(
        self, session_id: str, current_cwd: str, continuation: RuntimeContinuation
    ) -> HostObservation:
        if self.inspector is None:
            raise _refuse("safety_observation_unavailable", "no host inspector is configured")
        try:
            observation = self.inspector.inspect(session_id, current_cwd)
        except Exception as exc:
            raise _refuse(
                "safety_observation_unavailable", f"host inspection failed: {type(exc).__name__}"
            ) from None
        snapshot = continuation.safety_snapshot
        if observation.workspace_identity != snapshot.workspace_identity:
            raise _refuse("workspace_identity_changed", "the workspace identity changed")
        if not observation.background_operations_settled:
            raise _refuse("background_operation_started", "a background operation started")
        if set(observation.available_tool_names) != set(snapshot.available_tool_names):
            raise _refuse("tool_catalog_changed", "the tool catalog changed since planning")
        planned, current = snapshot.workspace_checkpoint, observation.workspace_checkpoint
        if planned is not None and (
            current is None
            or not current.restored
            or current.ref != planned.ref
            or current.runtime_event_high_water != planned.runtime_event_high_water
        ):
            raise _refuse("workspace_checkpoint_changed", "the workspace checkpoint changed")
        return observation

    def _refuse_existing_claims(
        self,
        runs: Sequence[RunHeader],
        boundary: SourceBoundary,
        continuation: RuntimeContinuation,
    ) -> None:
        app = self.app
        if app.claim_exists(boundary.claim_id):
            raise _refuse(
                "continuation_claim_conflict",
                f"boundary {boundary.claim_id} is already claimed",
                claimId=boundary.claim_id,
            )
        for run in continuations_of(runs, boundary.run_id, boundary.high_water):
            raise _refuse(
                "continuation_claim_conflict",
                f"run {run.run_id} already continues this boundary",
                continuationRunId=run.run_id,
            )
        if app.run_exists(continuation.run_id):
            raise _refuse(
                "target_run_conflict",
                f"target run {continuation.run_id} already exists",
                targetRunId=continuation.run_id,
            )

    # -- execution --------------------------------------------------------------------------------

    def execute(
        self, plan: ContinuationPlan, provider: Provider, *, session_id: str, current_cwd: str
    ) -> ContinuationOutcome:
        continuation = plan.continuation
        if plan.disposition != "continue" or continuation is None:
            raise _refuse(
                "continuation_not_approved",
                "only a plan with disposition 'continue' can be executed",
                rejectionReasons=list(plan.rejection_reasons),
            )
        header, source, boundary, observation = self.revalidate(
            continuation, session_id, current_cwd
        )
        target = ContinuationTarget(
            continuation.invocation_id, continuation.run_id, continuation.turn_id
        )
        target_header = self._claim(header, source, boundary, target, observation)
        for name in (AFTER_CLAIM_COMMITTED, AFTER_RUN_CREATED, AFTER_START_COMMITTED):
            failpoints.hit(name)
        self.telemetry.execution_started(
            session_id=session_id, source_run_id=boundary.run_id, target_run_id=target.run_id
        )
        request = ProviderRequest(
            session_id=session_id,
            run_id=target.run_id,
            invocation_id=target.invocation_id,
            turn_id=target.turn_id,
            replay_context=tuple(continuation.runtime_context),
            system_prompt=self.system_prompt,
            tool_names=tuple(observation.available_tool_names),
        )
        try:
            turn = provider.complete(request)
            outputs = [self._output_event(target_header, n, o) for n, o in enumerate(turn.outputs)]
            if outputs:
                self.app.append_events(target.run_id, outputs)
        except Exception as exc:
            error_class = error_class_of(exc)
            self._finish(target_header, "failed", error_class)
            self.telemetry.execution_failed(
                session_id=session_id,
                source_run_id=boundary.run_id,
                target_run_id=target.run_id,
                error=exc,
            )
            return ContinuationOutcome(target.run_id, "failed", error_class, 0)
        self._finish(target_header, "completed", None)
        self.telemetry.execution_completed(
            session_id=session_id, source_run_id=boundary.run_id, target_run_id=target.run_id
        )
        return ContinuationOutcome(target.run_id, "completed", None, len(outputs))

    def _claim(
        self,
        header: RunHeader,
        source: Run,
        boundary: SourceBoundary,
        target: ContinuationTarget,
        observation: HostObservation,
    ) -> RunHeader:
        """ONE save: claim, source seal, target run + start fact, invocation, registration."""
        app = self.app
        claimed_at = app.clock()
        target_header = continuation_header(
            header,
            boundary,
            target,
            workspace_identity=observation.workspace_identity,
            claimed_at=claimed_at,
        )
        start = continuation_start_event(
            boundary, target, event_id=f"{target.run_id}-start", ts=claimed_at
        )
        facts = [
            ContinuationClaim.create(
                boundary, target, start.id, claimed_at, target_run_header=target_header
            ),
            record_start_fact(boundary.claim_id, start, "runtime_admission"),
            source.decide_seal(boundary.claim_id, sealed_at=claimed_at),
            *Run.create_continuation(target_header, start, created_at=claimed_at),
            bind_invocation(target_header),
            app.session_registration(boundary.session_id, target.run_id, claimed_at),
        ]
        app.commit_facts(facts, conflict=lambda: self._claim_conflict(boundary, target))
        return target_header

    def _claim_conflict(
        self, boundary: SourceBoundary, target: ContinuationTarget
    ) -> ContinuationRevalidationError:
        """Who won? A taken target run id without our claim, or (most often) another claimer."""
        if self.app.run_exists(target.run_id) and not self.app.claim_exists(boundary.claim_id):
            return _refuse("target_run_conflict", f"target run {target.run_id} already exists")
        return _refuse(
            "continuation_claim_conflict",
            f"another resumer claimed {boundary.claim_id} first",
            claimId=boundary.claim_id,
        )

    def _output_event(self, target_header: RunHeader, n: int, content: Any) -> dict[str, Any]:
        return {
            "id": f"{target_header.run_id}-out-{n + 1}",
            **target_header.spine,
            "ts": self.app.clock(),
            "partial": False,
            "role": "model",
            "author": "agent",
            "content": dict(content),
        }

    def _finish(self, target_header: RunHeader, status: str, error_class: str | None) -> None:
        """The target's terminal fact, then its header (``end_run`` keeps that order)."""
        self.app.end_run(
            target_header.run_id,
            terminal_event(
                target_header.spine,
                event_id=f"{target_header.run_id}-terminal",
                ts=self.app.clock(),
                status=status,
                failure_class=error_class,
            ),
        )
