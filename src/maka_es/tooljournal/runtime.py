"""ToolRuntime: runs a tool between T1 and T2 so that no side effect ever runs twice blindly.

Why: peers re-run an in-flight tool after a crash and duplicate its side effect. Here every
call is bracketed by durable facts:

* pre-T1 refusals (unknown tool, arguments that fail the tool's input model, permission denied,
  a reconciler whose preflight fails)
  commit the call and a synthetic error response on the generic lane; the implementation is
  never touched;
* T1 (call + dispatch, one transaction) commits *before* the implementation runs; if T1 fails,
  or reports ``created=False`` (someone already dispatched this operation), the implementation
  runs zero times;
* the implementation receives the operation id as its idempotency key;
* T2 (the bound response, one transaction) commits before the result is returned: a result the
  caller saw is always in the ledger.

After a crash, :meth:`ToolRuntime.recover` settles operations that have T1 and no T2 according
to the tool's recovery mode: ``reconcile`` tools observe external state and commit a recovery
bundle (completed with a synthesized outcome, or parked), or, when the state is provably what
it was before the call, a "not applied" T2 the model decides again on; ``idempotent`` and
``replay_safe``
tools are re-executed with the *same* operation id and the identical args hash; every other
mode is left indeterminate, so the resume plan stays ``blocked`` until an operator decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from maka_es import failpoints, telemetry
from maka_es.errors import InvalidRuntimeEventError, NonStrictJsonError
from maka_es.errors import OutcomeUnknownError as OutcomeUnknownError
from maka_es.errors import ToolAlreadyDispatchedError as ToolAlreadyDispatchedError
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.tools import (
    OUTCOME_UNKNOWN_CODE,
    Observation,
    PermissionPolicy,
    ReconcileObservation,
    Reconciler,
    RecoveryAction,
    Tool,
    ToolContext,
    ToolRecoveryOutcome,
    ToolResult,
    args_wire,
    error_result,
    outcome_unknown_result,
    reconciled_not_applied_result,
    state_digest,
)
from maka_es.tooljournal.ports import ToolJournalStore
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent, as_runtime_event
from maka_es.wire.facts import (
    PARKED_REASON_FOR_OBSERVATION,
    bound_response,
    completed_decision_fact,
    parked_decision_fact,
    pre_t1_refusal_response,
    reconcile_result_fact,
)

#: The tool types are defined in ``tooljournal.tools`` and re-exported here, where hosts have
#: always imported them from (``from maka_es.tooljournal.runtime import Tool, ToolRuntime``).
__all__ = [
    "AFTER_T1",
    "AFTER_T2",
    "BEFORE_T2",
    "OUTCOME_UNKNOWN_CODE",
    "Observation",
    "OutcomeUnknownError",
    "PermissionPolicy",
    "ReconcileObservation",
    "Reconciler",
    "RecoveryAction",
    "ToolRecoveryOutcome",
    "Tool",
    "ToolAlreadyDispatchedError",
    "ToolContext",
    "ToolResult",
    "ToolRuntime",
    "args_wire",
    "outcome_unknown_result",
    "state_digest",
]

#: Failpoints the crash harness can arm around a tool call (see ``maka_es.failpoints``).
AFTER_T1 = "tool.after_t1"
BEFORE_T2 = "tool.before_t2"
AFTER_T2 = "tool.after_t2"


class ToolRuntime:
    """Executes tool calls of a run through T1/T2 and recovers interrupted ones."""

    def __init__(
        self,
        journal: ToolJournalStore,
        tools: Iterable[Tool[Any]],
        *,
        permission: PermissionPolicy | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.journal = journal
        self.tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"tool {tool.name} registered twice")
            self.tools[tool.name] = tool
        self.permission = permission
        self._monotonic = monotonic

    # -- executing ------------------------------------------------------------------------------

    def execute(self, run_id: str, call: RuntimeEvent | Mapping[str, Any]) -> ToolResult:
        """Run one function_call event of ``run_id``; see the module docstring for the order."""
        event = as_runtime_event(call)
        content = event.function_call
        if content is None:
            raise InvalidRuntimeEventError(
                f"event {event.id} is not a function_call", field="content.kind"
            )
        tool = self.tools.get(content.name)
        if tool is None:
            return self._refuse(run_id, event, "tool_unknown", f"no tool named {content.name}")
        try:
            args = tool.input_model.model_validate(content.args)
        except ValidationError as exc:
            return self._refuse(run_id, event, "invalid_arguments", _validation_summary(exc))
        if self.permission is not None and not self.permission(tool.name, dict(args_wire(args))):
            return self._refuse(run_id, event, "permission_denied", f"{tool.name} was denied")

        try:
            metadata = dict(tool.reconciler.prepare(args)) if tool.reconciler is not None else None
        except Exception as exc:  # a failed preflight is a refusal the model must see
            return self._refuse(run_id, event, "preflight_failed", f"{type(exc).__name__}: {exc}")
        commit = self.journal.commit_tool_prepared(
            run_id, event, recovery_mode=tool.recovery_mode, metadata=metadata
        )
        if not commit.created:
            raise ToolAlreadyDispatchedError(
                f"operation {commit.operation_id} was already dispatched; not running it again",
                detail={"operationId": commit.operation_id, "runId": run_id},
            )
        with telemetry.tool_step_span(run_id, tool.name, tool.recovery_mode, commit.operation_id):
            failpoints.hit(AFTER_T1)
            context = ToolContext(run_id, content.id, commit.operation_id, metadata or {})
            return self._run_and_commit(run_id, event, tool, args, context)

    def _run_and_commit(
        self,
        run_id: str,
        call: RuntimeEvent,
        tool: Tool[Any],
        args: BaseModel,
        context: ToolContext,
    ) -> ToolResult:
        started = self._monotonic()
        result, is_error = _invoke(tool, args, context)
        duration_ms = max(0, round((self._monotonic() - started) * 1000))
        failpoints.hit(BEFORE_T2)
        response = bound_response(
            call,
            context.operation_id,
            ts=self.journal.now_ms(),
            result=result,
            is_error=is_error,
            duration_ms=duration_ms,
        )
        self.journal.commit_tool_outcome(run_id, response)
        failpoints.hit(AFTER_T2)
        return ToolResult(
            context.tool_call_id, context.operation_id, result, is_error, response.id, True
        )

    def _refuse(self, run_id: str, call: RuntimeEvent, code: str, message: str) -> ToolResult:
        """Pre-T1 refusal: call + synthetic error response on the generic lane (no dispatch)."""
        content = call.function_call
        assert content is not None
        result = error_result(code, message)
        response = pre_t1_refusal_response(call, ts=self.journal.now_ms(), result=result)
        self.journal.append_events(run_id, [call, response])
        return ToolResult(content.id, None, result, True, response.id, False)

    # -- recovery -------------------------------------------------------------------------------

    def recover(
        self, run_id: str, *, call_events: Mapping[str, RuntimeEvent] | None = None
    ) -> ToolRecoveryOutcome:
        """Settle every operation of ``run_id`` that has T1 and no T2, per recovery mode.

        ``call_events``: the committed call events of those operations by id, when the caller
        already read them (startup recovery reads them from the run's end, ADR 0012); an id
        missing from it is a call the ledger does not hold. ``None``: read from the run."""
        actions: list[RecoveryAction] = []
        unsettled = [op for op in self.journal.tool_operations(run_id) if op.is_unsettled]
        if not unsettled:
            return ToolRecoveryOutcome(())
        calls: Mapping[str, RuntimeEvent] = {} if call_events is None else call_events
        # only a tool in the catalogue reads its call (a pending unknown tool reads nothing)
        if call_events is None and any(op.tool_name in self.tools for op in unsettled):
            calls = {event.id: event for event in self.journal.read_run_events(run_id)}
        for operation in unsettled:
            actions.append(self._recover_one(run_id, operation, calls))
        return ToolRecoveryOutcome(tuple(actions))

    def _recover_one(
        self, run_id: str, operation: ToolOperationState, calls: Mapping[str, RuntimeEvent]
    ) -> RecoveryAction:
        def action(kind: Any, reason: str) -> RecoveryAction:
            return RecoveryAction(operation.operation_id, operation.tool_name, kind, reason)

        tool = self.tools.get(operation.tool_name)
        call = calls.get(operation.call_event_id or "")
        if tool is None or call is None or call.function_call is None:
            return action("left_indeterminate", "tool_unavailable")
        if tool.recovery_mode != operation.recovery_mode:
            # the tool's contract changed since T1: only the recorded mode may be honoured
            return action("left_indeterminate", "recovery_mode_changed")
        args = tool.input_model.model_validate(call.function_call.args)
        context = ToolContext(
            run_id, operation.tool_call_id, operation.operation_id, operation.metadata
        )
        mode = operation.recovery_mode
        if mode == "reconcile":
            assert tool.reconciler is not None
            observed = tool.reconciler.observe(args, operation.metadata)
            return action(*self._commit_bundle(run_id, call, operation, observed))
        if mode in {"idempotent", "replay_safe"}:
            # same operation id (the idempotency key) and the args hash recorded at T1
            self._run_and_commit(run_id, call, tool, args, context)
            return action("reexecuted", mode)
        return action("left_indeterminate", mode)

    def _commit_bundle(
        self,
        run_id: str,
        call: RuntimeEvent,
        operation: ToolOperationState,
        observed: ReconcileObservation,
    ) -> tuple[Literal["completed", "not_applied", "parked"], str]:
        """One recovery bundle for what the reconciler observed: the reconcile result, then a
        completed decision with a synthesized outcome, or a parked one (tool-journal.md#bundles).
        The prior state is no bundle: the reference can only park it, so it is settled as not
        applied by a plain T2 instead (tool-journal.md#recovery-modes)."""
        op = operation.operation_id
        assert operation.call_event_id is not None
        reconcile = reconcile_result_fact(
            call,
            op,
            ts=self.journal.now_ms(),
            observation=observed.observation,
            observation_digest=observed.digest,
        )
        evidence = [operation.call_event_id, operation.dispatch_event_id, reconcile.id]
        decision_ts = self.journal.now_ms()
        if observed.observation == "matches_expected_state":
            result = observed.result
            if result is None:
                result = {"kind": "text", "text": "reconciled: external state matches the call"}
            outcome = bound_response(call, op, ts=self.journal.now_ms(), result=result)
            decision = completed_decision_fact(
                call,
                op,
                ts=decision_ts,
                outcome_event_id=outcome.id,
                evidence_event_ids=[*evidence, outcome.id],
            )
            self.journal.commit_tool_recovery_bundle(
                run_id, op, reconcile=reconcile, decision=decision, outcome=outcome
            )
            return "completed", "reconcile_matches_expected_state"
        reason = PARKED_REASON_FOR_OBSERVATION[observed.observation]
        if observed.observation == "matches_prior_state":
            # the world is provably as before the call: it did not take effect. A T2 with a
            # "not applied" error result settles it, and the model decides again (ADR 0019)
            result = reconciled_not_applied_result(operation.tool_name)
            not_applied = bound_response(call, op, ts=decision_ts, result=result, is_error=True)
            self.journal.commit_tool_outcome(run_id, not_applied)
            return "not_applied", reason
        decision = parked_decision_fact(
            call, op, ts=decision_ts, reason_code=reason, evidence_event_ids=evidence
        )
        self.journal.commit_tool_recovery_bundle(run_id, op, reconcile=reconcile, decision=decision)
        return "parked", reason


def _validation_summary(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "<root>"
    return f"{where}: {first.get('msg', 'invalid')}"


def _invoke(tool: Tool[Any], args: BaseModel, context: ToolContext) -> tuple[Any, bool]:
    """Run the implementation; exceptions become committed error outcomes. BaseException
    (KeyboardInterrupt, SystemExit, a kill) propagates: no T2, the operation stays unsettled."""
    try:
        result = tool.run(args, context)
    except OutcomeUnknownError as exc:
        return outcome_unknown_result(str(exc)), True
    except Exception as exc:  # the outcome of a failed tool is a fact too
        return error_result("tool_error", f"{type(exc).__name__}: {exc}"), True
    try:
        canonical_json(result)
    except NonStrictJsonError as exc:
        return error_result("result_not_json", str(exc)), True
    return result, False
