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
   The session history of the source's turn (ADR 0038: the earlier completed turns, the
   same prefix the interrupted turn was shown) is read under the same lock, before the claim.
3. **Only then** does the run's agent loop start (``agent_loop``,
   docs/reference/continuation.md#agent-loop): the provider is called with the validated
   replay context (no new user event, no duplicate of the original user message), its turn
   is recorded, its tool calls run through the tool journal in the target run, and the
   provider is called again with the run's replay, until a text-only turn, an error or the
   step limit. Steps 1 and 2 hold the store's command lock together; the loop holds it only
   inside each of its commands, never across a provider call or a tool.
4. The terminal event, then the terminal header are committed (terminal event before header,
   always): ``completed``, or ``failed`` with the error's class (``step_limit_exceeded`` for
   the limit) and, for an error maka_es authored (an invalid output), a ``failureMessage``
   naming what was wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from maka_es import failpoints
from maka_es.continuation.agent_loop import (
    DEFAULT_STEP_LIMIT,
    AgentLoop,
    LoopEnd,
    call_ids,
    commit_terminal,
    read_history,
)
from maka_es.continuation.claims import Claims, ContinuationTarget, SourceBoundary
from maka_es.continuation.host import HostInspector, HostObservation
from maka_es.continuation.plan import ContinuationPlan, CwdPolicy, RuntimeContinuation
from maka_es.continuation.provider import Provider, ProviderRequest
from maka_es.continuation.revalidation import ContinuationRevalidationError, Revalidation
from maka_es.continuation.revalidation import refuse as _refuse
from maka_es.continuation.telemetry import Telemetry, error_class_of
from maka_es.ledger.run import Run
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

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
    """What execution did: the target run, its terminal status, the error class (and the
    failure message) when it failed (committed as the run's terminal fact), how many model
    outputs were recorded, how many provider calls (steps) and tool calls the loop made."""

    target_run_id: str
    status: str
    error_class: str | None
    outputs: int
    steps: int = 0
    tool_calls: int = 0
    failure_message: str | None = None


class ContinuationExecutor:
    """One execution of one plan, against one application (see module docstring)."""

    def __init__(
        self,
        claims: Claims,
        inspector: HostInspector | None,
        telemetry: Telemetry,
        tool_runtime: ToolRuntime,
        *,
        cwd_policy: CwdPolicy = "strict",
        system_prompt: str | None = None,
        step_limit: int = DEFAULT_STEP_LIMIT,
        history_turns: int | None = None,
    ) -> None:
        self.claims = claims
        self.ledger = claims.ledger
        self.inspector = inspector
        self.telemetry = telemetry
        self.tool_runtime = tool_runtime
        self.cwd_policy = cwd_policy
        self.system_prompt = system_prompt
        self.step_limit = step_limit
        self.history_turns = history_turns

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
        target = ContinuationTarget(
            continuation.invocation_id, continuation.run_id, continuation.turn_id
        )
        # revalidation and the claim are one read-decide-save of this process; the agent loop
        # after it is not (each of its commands takes the lock for itself): a model call or a
        # tool of this conversation never holds up another conversation's commands
        with self.ledger.command():
            header, source, boundary, observation = self.revalidate(
                continuation, session_id, current_cwd
            )
            history = self.history_of(session_id, header.run_id, continuation.runtime_context)
            target_header = self._claim(header, source, boundary, target, observation)
        for name in (AFTER_CLAIM_COMMITTED, AFTER_RUN_CREATED, AFTER_START_COMMITTED):
            failpoints.hit(name)
        return self.run_admitted(
            target_header,
            tuple(continuation.runtime_context),
            provider,
            source_run_id=boundary.run_id,
            tool_names=tuple(observation.available_tool_names),
            history=history,
        )

    def history_of(
        self, session_id: str, turn_of: str, replay: Sequence[RuntimeEvent]
    ) -> tuple[RuntimeEvent, ...]:
        """The session history of the turn ``turn_of`` belongs to (ADR 0038), none of whose
        tool call ids the replay uses."""
        return read_history(
            self.ledger,
            session_id,
            turn_of=turn_of,
            max_turns=self.history_turns,
            reserved_call_ids=call_ids(replay),
        )

    def run_admitted(
        self,
        target_header: RunHeader,
        replay_context: tuple[RuntimeEvent, ...],
        provider: Provider,
        *,
        source_run_id: str,
        tool_names: tuple[str, ...],
        history: tuple[RuntimeEvent, ...] = (),
    ) -> ContinuationOutcome:
        """The agent loop over an admitted target (its start committed by the claim), then its
        terminal: shared by a continuation and an operator fork (ADR 0022); ``history`` is
        the session history sent before the replay (ADR 0038)."""
        session_id = target_header.session_id
        self.telemetry.execution_started(
            session_id=session_id, source_run_id=source_run_id, target_run_id=target_header.run_id
        )
        request = ProviderRequest(
            session_id=session_id,
            run_id=target_header.run_id,
            invocation_id=target_header.spine["invocationId"],
            turn_id=target_header.turn_id,
            replay_context=replay_context,
            system_prompt=self.system_prompt,
            tool_names=tool_names,
            history=history,
        )
        end = AgentLoop(self.ledger, self.tool_runtime, step_limit=self.step_limit).run(
            provider, request, target_header
        )
        return self._end(target_header, end, session_id=session_id, source_run_id=source_run_id)

    def _end(
        self, target_header: RunHeader, end: LoopEnd, *, session_id: str, source_run_id: str
    ) -> ContinuationOutcome:
        """The loop's terminal through the barrier, then telemetry and the outcome."""
        target_run_id = target_header.run_id
        error_class = None if end.error is None else error_class_of(end.error)
        self._finish(target_header, end.status, error_class, end.failure_message)
        if end.error is not None:
            self.telemetry.execution_failed(
                session_id=session_id,
                source_run_id=source_run_id,
                target_run_id=target_run_id,
                error=end.error,
            )
        else:
            self.telemetry.execution_completed(
                session_id=session_id, source_run_id=source_run_id, target_run_id=target_run_id
            )
        return ContinuationOutcome(
            target_run_id,
            end.status,
            error_class,
            end.outputs,
            end.steps,
            end.tool_calls,
            end.failure_message,
        )

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

    def _finish(
        self,
        target_header: RunHeader,
        status: str,
        error_class: str | None,
        failure_message: str | None,
    ) -> None:
        """The target's terminal fact, then its header (``commit_terminal``)."""
        commit_terminal(self.ledger, target_header, status, error_class, failure_message)
