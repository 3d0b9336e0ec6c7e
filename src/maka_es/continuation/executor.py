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

Revalidation (step 1, :class:`Revalidation`; docs/reference/continuation.md#revalidation): a
plan is not a lease, so everything it relied on is read again immediately before a continuation
claims its boundary. Order, and why: another live run of the session first (nothing else matters
while one runs); then the planned boundary, segment by segment (ancestors pinned, the source at
its latest), so a source that grew or was rewritten is ``source_identity_changed`` before any
high-water or replay comparison; then the rebuilt replay against the plan's digests and context
(``source_replay_changed``); then the source run's own header, terminal, cwd, high-water and
ledger identity; then the host's facts; last, claims and target ids. Every refusal is a
:class:`ContinuationRevalidationError` with a stable ``code``, raised before anything is
written. Store faults propagate unchanged: a locked database is not a verdict about the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maka_es import failpoints, telemetry
from maka_es.continuation.agent_loop import (
    DEFAULT_STEP_LIMIT,
    AgentLoop,
    LoopEnd,
    call_ids,
    commit_terminal,
    read_history,
)
from maka_es.continuation.claims import (
    Claims,
    ContinuationTarget,
    RunReader,
    SourceBoundary,
    claim_id_for,
    continuations_of,
    source_boundary,
)
from maka_es.continuation.host import HostInspector, HostObservation
from maka_es.continuation.lineage import (
    LineagePark,
    check_v2_replay,
    prefix_segment,
    read_lineage,
)
from maka_es.continuation.model.plan import (
    ContinuationPlan,
    CwdPolicy,
    RuntimeContinuation,
    normalize_cwd,
)
from maka_es.continuation.model.replay import CompositeReplay, build_composite_replay
from maka_es.errors import ContinuationRevalidationError as ContinuationRevalidationError
from maka_es.errors import MakaError
from maka_es.ledger.model.run import Run
from maka_es.ledger.ports import STORE_FAULTS
from maka_es.providers.protocol import Provider, ProviderRequest
from maka_es.telemetry import (
    CLAIM_ID,
    CONTINUATION_SPAN,
    OUTCOME,
    SESSION_ID,
    SOURCE_RUN_ID,
    TARGET_RUN_ID,
    Telemetry,
    error_class_of,
)
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader, run_status_for_terminal_event

__all__ = [
    "AFTER_CLAIM_COMMITTED",
    "AFTER_RUN_CREATED",
    "AFTER_START_COMMITTED",
    "AFTER_TERMINAL_EVENT",
    "AFTER_TERMINAL_HEADER",
    "ContinuationExecutor",
    "ContinuationOutcome",
    "ContinuationRevalidationError",
    "Revalidation",
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


# -- revalidation ---------------------------------------------------------------------------------


def refuse(code: str, message: str, **detail: Any) -> ContinuationRevalidationError:
    return ContinuationRevalidationError(message, code=code, detail=detail)


def boundary_claim_id_of(segment: dict[str, Any]) -> str:
    """The claim id of the boundary a source segment ends (the plan's ``claimId``)."""
    identity, position = segment["identity"], segment["position"]
    return claim_id_for(
        str(identity["sessionId"]),
        str(identity["runId"]),
        int(position["lastEventSeq"]),
        str(segment["prefixDigest"]),
    )


class Revalidation:
    """One revalidation of one plan against one application (see module docstring)."""

    def __init__(
        self, claims: Claims, inspector: HostInspector | None, cwd_policy: CwdPolicy
    ) -> None:
        self.claims = claims
        self.ledger = claims.ledger
        self.inspector = inspector
        self.cwd_policy = cwd_policy

    def run(
        self, continuation: RuntimeContinuation, session_id: str, current_cwd: str
    ) -> tuple[RunHeader, Run, SourceBoundary, HostObservation]:
        """In order (docs/reference/continuation.md#revalidation): another live run; the planned
        boundary re-read (identity, then replay); the source run's own facts; the host's facts;
        claims and target ids. Store faults propagate as they are: they are not verdicts about
        the source."""
        runs: list[RunHeader] = self.ledger.list_runs(session_id)
        self._refuse_active_runs(runs, continuation.source_run_id)
        boundary = self._reread_boundary(continuation)
        header, source = self._recheck_source(continuation, session_id, current_cwd)
        if (boundary.run_id, boundary.high_water) != (
            continuation.source_run_id,
            continuation.source_runtime_event_high_water,
        ):
            raise refuse(
                "source_identity_changed", "the plan's boundary does not end at its source run"
            )
        observation = self._reinspect(session_id, current_cwd, continuation)
        self._refuse_existing_claims(runs, boundary, continuation)
        return header, source, boundary, observation

    def _refuse_active_runs(self, runs: Sequence[RunHeader], source_run_id: str) -> None:
        """Step 1. Any non-terminal run header of the session counts as live (ADR 0015)."""
        for run in runs:
            if not run.is_terminal and run.run_id != source_run_id:
                raise refuse(
                    "continuation_run_active",
                    f"run {run.run_id} of the session is still active",
                    activeRunId=run.run_id,
                )

    def _reread_boundary(self, continuation: RuntimeContinuation) -> SourceBoundary:
        """Step 2: every planned segment is read again (ancestors pinned at their position,
        the source at its latest), so a source that grew or whose prefix was rewritten is
        ``source_identity_changed`` before any high-water or replay comparison; then the
        lineage is rebuilt and its digests and replay context must equal the plan's
        (``source_replay_changed``)."""
        planned = continuation.boundary
        if planned is None or continuation.claim_id is None or not planned.segments:
            raise refuse("source_identity_changed", "the plan carries no versioned boundary")
        segments = list(planned.segments)
        try:
            current = [
                self._segment_now(segment, pinned=index < len(segments) - 1)
                for index, segment in enumerate(segments)
            ]
        except STORE_FAULTS:
            raise
        except (MakaError, CodecInputError, KeyError, TypeError, ValueError) as exc:
            raise refuse(
                "source_identity_changed", f"a boundary segment cannot be read: {exc}"
            ) from None
        if current != segments or boundary_claim_id_of(current[-1]) != continuation.claim_id:
            raise refuse(
                "source_identity_changed",
                "a boundary segment's identity, position or prefix digest changed since planning",
            )
        replay = self._replay_now(current)
        if (
            replay.manifest_digest != planned.manifest_digest
            or replay.provider_replay_digest != continuation.provider_replay_digest
            or replay.provider_projection_version != continuation.provider_projection_version
            or [e.to_wire() for e in replay.runtime_context]
            != [e.to_wire() for e in continuation.runtime_context]
        ):
            raise refuse("source_replay_changed", "the replay differs from the plan's")
        return source_boundary(replay)

    def _segment_now(self, segment: dict[str, Any], *, pinned: bool) -> dict[str, Any]:
        """The segment of the run ``segment`` names, as it is committed now."""
        identity, position = segment["identity"], segment["position"]
        events = self.ledger.read_run_events(str(identity["runId"]))
        if pinned:
            events = events[: int(position["lastEventSeq"])]
        if not events:
            raise ValueError(f"run {identity['runId']} has no committed prefix")
        return prefix_segment(events)

    def _replay_now(self, segments: Sequence[dict[str, Any]]) -> CompositeReplay:
        """The source's lineage as its headers record it now (it must be the planned
        segments) and its composite replay."""
        reader = RunReader(
            self.ledger.get_run_header, self.ledger.read_run_events, self.ledger.list_runs
        )
        source_run_id = str(segments[-1]["identity"]["runId"])
        try:
            header = self.ledger.get_run_header(source_run_id)
            lineage = read_lineage(reader, header, self.ledger.read_run_events(source_run_id))
            check_v2_replay(lineage)
            replay = build_composite_replay(lineage.segments)
        except STORE_FAULTS:
            raise
        except (LineagePark, MakaError, CodecInputError) as exc:
            raise refuse("source_replay_changed", f"lineage no longer replays: {exc}") from None
        if [prefix_segment(s) for s in lineage.segments] != list(segments):
            raise refuse(
                "source_identity_changed", "the source's lineage is not the planned boundary"
            )
        if not replay.replayable:
            raise refuse("source_replay_changed", "the lineage is no longer replayable")
        return replay

    def _recheck_source(
        self, continuation: RuntimeContinuation, session_id: str, current_cwd: str
    ) -> tuple[RunHeader, Run]:
        """Step 3: the source run's header, terminal, cwd, high-water and ledger identity."""
        try:
            header: RunHeader = self.ledger.get_run_header(continuation.source_run_id)
            source: Run = self.ledger.load_run(continuation.source_run_id)
        except STORE_FAULTS:
            raise
        except MakaError as exc:
            raise refuse(
                "source_identity_changed", f"source run cannot be read: {exc.code}"
            ) from None
        if (header.session_id, header.run_id, header.turn_id) != (
            session_id,
            continuation.source_run_id,
            continuation.source_turn_id,
        ):
            raise refuse("source_identity_changed", "source run identity differs from the plan")
        events = list(source.events)
        terminals = [e for e in events if e.is_terminal]
        if len(terminals) != 1 or run_status_for_terminal_event(terminals[0]) != header.status:
            raise refuse(
                "source_terminal_changed", "source run no longer has one matching terminal fact"
            )
        if self.cwd_policy == "strict" and normalize_cwd(header.cwd) != normalize_cwd(current_cwd):
            raise refuse(
                "source_cwd_changed",
                "the current cwd differs from the source run's",
                sourceCwd=header.cwd,
                currentCwd=current_cwd,
            )
        if len(events) != continuation.source_runtime_event_high_water:
            planned = continuation.source_runtime_event_high_water
            raise refuse(
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
            raise refuse("source_ledger_identity_changed", "a source event has another identity")
        return header, source

    def _reinspect(
        self, session_id: str, current_cwd: str, continuation: RuntimeContinuation
    ) -> HostObservation:
        if self.inspector is None:
            raise refuse("safety_observation_unavailable", "no host inspector is configured")
        try:
            observation = self.inspector.inspect(session_id, current_cwd)
        except Exception as exc:
            raise refuse(
                "safety_observation_unavailable", f"host inspection failed: {type(exc).__name__}"
            ) from None
        snapshot = continuation.safety_snapshot
        if observation.workspace_identity != snapshot.workspace_identity:
            raise refuse("workspace_identity_changed", "the workspace identity changed")
        if not observation.background_operations_settled:
            raise refuse("background_operation_started", "a background operation started")
        if set(observation.available_tool_names) != set(snapshot.available_tool_names):
            raise refuse("tool_catalog_changed", "the tool catalog changed since planning")
        planned, current = snapshot.workspace_checkpoint, observation.workspace_checkpoint
        if planned is not None and (
            current is None
            or not current.restored
            or current.ref != planned.ref
            or current.runtime_event_high_water != planned.runtime_event_high_water
        ):
            raise refuse("workspace_checkpoint_changed", "the workspace checkpoint changed")
        return observation

    def _refuse_existing_claims(
        self,
        runs: Sequence[RunHeader],
        boundary: SourceBoundary,
        continuation: RuntimeContinuation,
    ) -> None:
        if self.claims.claim_exists(boundary.claim_id):
            raise refuse(
                "continuation_claim_conflict",
                f"boundary {boundary.claim_id} is already claimed",
                claimId=boundary.claim_id,
            )
        for run in continuations_of(runs, boundary.run_id, boundary.high_water):
            raise refuse(
                "continuation_claim_conflict",
                f"run {run.run_id} already continues this boundary",
                continuationRunId=run.run_id,
            )
        if self.ledger.run_exists(continuation.run_id):
            raise refuse(
                "target_run_conflict",
                f"target run {continuation.run_id} already exists",
                targetRunId=continuation.run_id,
            )


# -- execution -------------------------------------------------------------------------------------


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
            raise refuse(
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
            # the history first: its reads load the session's runs, and a load inside a command
            # advances the cached Run, so after revalidation it could fast-forward the source
            # past another resumer's seal between the check and the claim (a loser must see
            # continuation_claim_conflict, tests/crash/test_continuation_race.py)
            history = self.history_of(
                session_id, continuation.source_run_id, continuation.runtime_context
            )
            header, source, boundary, observation = self.revalidate(
                continuation, session_id, current_cwd
            )
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
        the session history sent before the replay (ADR 0038). In a continuation span that
        continues the source run's recorded trace (ADR 0043), whose context the target records."""
        source = target_header.continuation_source
        with telemetry.span(
            CONTINUATION_SPAN,
            {
                SESSION_ID: target_header.session_id,
                SOURCE_RUN_ID: source_run_id,
                TARGET_RUN_ID: target_header.run_id,
                CLAIM_ID: getattr(source, "claim_id", None),
            },
            links=lambda: (self.ledger.trace_context(source_run_id),),
            continues=lambda: self.ledger.trace_context(source_run_id),
        ) as span:
            self.ledger.record_trace_context(target_header.run_id, telemetry.current_traceparent())
            outcome = self._admitted_loop(
                target_header, replay_context, provider, source_run_id, tool_names, history
            )
            span.set(OUTCOME, outcome.status)
            if outcome.error_class is not None:
                span.fail(outcome.error_class)
            return outcome

    def _admitted_loop(
        self,
        target_header: RunHeader,
        replay_context: tuple[RuntimeEvent, ...],
        provider: Provider,
        source_run_id: str,
        tool_names: tuple[str, ...],
        history: tuple[RuntimeEvent, ...],
    ) -> ContinuationOutcome:
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
            return refuse("target_run_conflict", f"target run {target.run_id} already exists")
        return refuse(
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
