"""Executes an approved continuation exactly once (docs/reference/continuation.md#execution).

Order, and why:

1. **Revalidate** immediately before execution: a plan is not a lease. The planned boundary,
   the replay, the source run's identity, terminal, cwd (strict policy), high-water and
   ledger identity are re-read from the store; workspace identity, background work, tool
   catalog and checkpoint are re-inspected; an existing claim or continuation of the
   boundary, or a taken target run id, refuses (``continuation_revalidation``).
2. **Claim, in ONE save**: the claim (a stream whose id derives from the source boundary), the
   source run's seal (at the version that was just revalidated), the target Run (header with
   ``parentRunId``, ``parentTurnId``, ``continuationSource`` V2) with its continuation-start fact
   as event 1 and its header ``running`` (admitted), the invocation binding and the session's
   registration. A concurrent claimer, or a source that changed since step 1, loses on the
   store's uniqueness and leaves nothing.
3. **Only then** is the provider called, with the validated replay context: no new user
   event, no duplicate of the original user message.
4. The provider's outputs, then the terminal event, then the terminal header are committed
   (terminal event before header, always).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from maka_es import failpoints
from maka_es.continuation.claim import ContinuationTarget, SourceBoundary
from maka_es.continuation.claims import Claims
from maka_es.continuation.gates import ContinuationPlan, CwdPolicy, RuntimeContinuation
from maka_es.continuation.host import HostInspector, HostObservation
from maka_es.continuation.provider import Provider, ProviderRequest
from maka_es.continuation.revalidation import ContinuationRevalidationError, Revalidation
from maka_es.continuation.revalidation import refuse as _refuse
from maka_es.continuation.telemetry import Telemetry, error_class_of
from maka_es.ledger.run import Run
from maka_es.wire.run_header import RunHeader, terminal_event

__all__ = [
    "AFTER_CLAIM_COMMITTED",
    "AFTER_RUN_CREATED",
    "AFTER_START_COMMITTED",
    "AFTER_TERMINAL_EVENT",
    "AFTER_TERMINAL_HEADER",
    "ContinuationExecutor",
    "ContinuationOutcome",
    "ContinuationRevalidationError",
]

#: Crash-harness failpoints (docs/reference/continuation.md#continuation-failpoints). The claim,
#: the target run and its start fact are ONE commit here, so the first three names mark the same
#: point.
AFTER_CLAIM_COMMITTED = "continuation.after_continuation_claim_committed"
AFTER_RUN_CREATED = "continuation.after_run_created"
AFTER_START_COMMITTED = "continuation.after_continuation_start_committed"
AFTER_TERMINAL_EVENT = failpoints.AFTER_TERMINAL_EVENT
AFTER_TERMINAL_HEADER = failpoints.AFTER_TERMINAL_HEADER


@dataclass(frozen=True)
class ContinuationOutcome:
    """What execution did: the target run, its terminal status, and the error class if the
    provider failed (the failure is committed as the run's terminal fact)."""

    target_run_id: str
    status: str
    error_class: str | None
    outputs: int


class ContinuationExecutor:
    """One execution of one plan, against one application (see module docstring)."""

    def __init__(
        self,
        claims: Claims,
        inspector: HostInspector | None,
        telemetry: Telemetry,
        *,
        cwd_policy: CwdPolicy = "strict",
        system_prompt: str | None = None,
    ) -> None:
        self.claims = claims
        self.ledger = claims.ledger
        self.inspector = inspector
        self.telemetry = telemetry
        self.cwd_policy = cwd_policy
        self.system_prompt = system_prompt

    # -- revalidation -----------------------------------------------------------------------------

    def revalidate(
        self, continuation: RuntimeContinuation, session_id: str, current_cwd: str
    ) -> tuple[RunHeader, Run, SourceBoundary, HostObservation]:
        """docs/reference/continuation.md#revalidation (see ``revalidation``); refuses before
        anything is written."""
        return Revalidation(self.claims, self.inspector, self.cwd_policy).run(
            continuation, session_id, current_cwd
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
                self.ledger.append_events(target.run_id, outputs)
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
        """ONE save (``Claims.admit``): claim, source seal, target run + start, binding."""
        return self.claims.admit(
            header,
            source,
            boundary,
            target,
            workspace_identity=observation.workspace_identity,
            conflict=lambda: self._claim_conflict(boundary, target),
        )

    def _claim_conflict(
        self, boundary: SourceBoundary, target: ContinuationTarget
    ) -> ContinuationRevalidationError:
        """Who won? A taken target run id without our claim, or (most often) another claimer."""
        if self.ledger.run_exists(target.run_id) and not self.claims.claim_exists(
            boundary.claim_id
        ):
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
            "ts": self.ledger.now_ms(),
            "partial": False,
            "role": "model",
            "author": "agent",
            "content": dict(content),
        }

    def _finish(self, target_header: RunHeader, status: str, error_class: str | None) -> None:
        """The target's terminal fact, then its header (``end_run`` keeps that order)."""
        self.ledger.end_run(
            target_header.run_id,
            terminal_event(
                target_header.spine,
                event_id=f"{target_header.run_id}-terminal",
                ts=self.ledger.now_ms(),
                status=status,
                failure_class=error_class,
            ),
        )
