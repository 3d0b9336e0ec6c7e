"""The agent loop of every turn (docs/reference/continuation.md#agent-loop; ADR 0036).

Why a loop: what usually follows a tool result is another tool call, so a continuation that
could only take text would end a tool-using agent at its first step. A continuation run is a
full agent turn instead, and a host's first turn (``RuntimeApplication.run_turn``, its user
message as the run's event 1) runs on this same loop, so both record a model turn the same
way. Each step:

1. the provider is called with the run's replay: the first request's context (the plan's
   validated replay context, or the first turn's user message), then
   this run's own new events (everything after its first one) through the provider-replay
   projection (docs/reference/phase0.md#replay-subset), so the model sees its calls and their
   committed results and never half of an exchange; the projection is kept from step to step
   and extended by the events committed since (``GrowingReplay``, ADR 0046), so a step costs
   the same early and late in a long run;
2. the provider's turn is **recorded** in one save: its text, thinking and tool calls, as model
   events ``<runId>-out-<n>`` (``n`` counts on over the whole run); a turn that is one tool
   call alone is recorded by that call's T1, which commits the call with its dispatch in one
   transaction (ADR 0047: a step is then two commits, as a plain tool step is);
3. a turn without a tool call ends the loop (``completed``); otherwise **each call is
   executed** in the order the model gave them, through the application's ``ToolRuntime``: T1
   before the tool runs, T2 after (docs/reference/tool-journal.md#t1-t2).

Parallel tool calls of one model turn: **all calls are recorded first, then each is executed**.
The run's start declares the tool-boundary protocol, so a recorded call that never crossed T1
is provably not dispatched (docs/reference/tool-journal.md#protocol-marker): a crash between
the record and a call's T1 leaves a call the replay trims, never a tool that might have run.
Executing them one after another (not concurrently) keeps one writer per run and a ledger
order a reader can follow.

The loop ends with a value, never with a write: the executor commits the terminal through
the normal barrier (``Ledger.end_run``). A provider error or an invalid output ends it
``failed`` with the error's class; the step limit ends it ``failed`` with
``step_limit_exceeded``. A tool step that raises while an operation has T1 and no T2 is not
turned into a terminal: the exception propagates and startup recovery settles the operation
before it ends the run (ADR 0019, ADR 0020).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal

from maka_es import telemetry
from maka_es.continuation.lineage import session_history
from maka_es.errors import InvalidProviderOutputError, MakaError
from maka_es.ledger.service import Ledger
from maka_es.providers.formats import ToolSpec
from maka_es.providers.protocol import Provider, ProviderRequest, ProviderTurn
from maka_es.resume.plan import GrowingReplay, provider_replay_subset
from maka_es.telemetry import MODEL_CALL_SPAN, RUN_ID, STEP
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.codec import operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import tool_refs
from maka_es.wire.run_header import RunHeader, terminal_event

__all__ = [
    "DEFAULT_STEP_LIMIT",
    "AgentLoop",
    "LoopEnd",
    "call_ids",
    "commit_terminal",
    "read_history",
]

#: Provider calls one continuation run may make (a setting: ``execute_continuation``'s
#: ``step_limit``). Generous for a real turn, small enough to stop a model that loops.
DEFAULT_STEP_LIMIT = 16


@dataclass(frozen=True)
class LoopEnd:
    """How the loop ended: the status to commit, what it recorded, and the error, if any."""

    status: Literal["completed", "failed"]
    outputs: int
    steps: int
    tool_calls: int
    error: Exception | None = None

    @property
    def failure_message(self) -> str | None:
        """The run's ``failureMessage``: the message of a maka_es error (authored here, e.g.
        which provider output was invalid and why). A foreign exception's text is not copied
        into the ledger: it may carry what the provider's client put there."""
        if isinstance(self.error, MakaError):
            return str(self.error.args[0])
        return None


@dataclass
class _Progress:
    outputs: int = 0
    steps: int = 0
    tool_calls: int = 0

    def end(self, status: Literal["completed", "failed"], error: Exception | None) -> LoopEnd:
        return LoopEnd(status, self.outputs, self.steps, self.tool_calls, error)


class AgentLoop:
    """Runs one continuation run's steps (see module docstring) over the ledger and the
    application's tool runtime."""

    def __init__(self, ledger: Ledger, tool_runtime: ToolRuntime, *, step_limit: int) -> None:
        self.ledger = ledger
        self.tool_runtime = tool_runtime
        self.step_limit = step_limit

    def run(self, provider: Provider, first: ProviderRequest, target: RunHeader) -> LoopEnd:
        """Call, record, execute, until a text-only turn, an error or the step limit."""
        progress = _Progress()
        if not first.tools:
            first = dataclasses.replace(first, tools=self._specs(first.tool_names))
        # the plain path (fast paths off, ADR 0037) projects every event again at each step
        replay = GrowingReplay() if self.ledger.fast_paths else None
        first_ids = call_ids(first.conversation)
        for step in range(self.step_limit):
            request = first if step == 0 else self._next_request(first, replay)
            try:
                with telemetry.span(MODEL_CALL_SPAN, {RUN_ID: target.run_id, STEP: step + 1}):
                    turn = provider.complete(request)
                progress.steps += 1
                used = (
                    call_ids(request.conversation)
                    if replay is None
                    else first_ids | replay.call_ids
                )
                refuse_reused_call_ids(turn.outputs, used)
                calls = self._record(target, turn, request, progress)
            except Exception as exc:
                return progress.end("failed", exc)
            if not calls:
                return progress.end("completed", None)
            progress.tool_calls += len(calls)
            failure = self._run_tools(target.run_id, calls)
            if failure is not None:
                return progress.end("failed", failure)
        # an end, not a refusal: it is committed as the run's failure and never raised
        limit = MakaError(
            f"the model still asked for tools after {self.step_limit} provider calls "
            f"(step limit {self.step_limit})",
            code="step_limit_exceeded",
            detail={"stepLimit": self.step_limit},
        )
        return progress.end("failed", limit)

    def _specs(self, names: Sequence[str]) -> tuple[ToolSpec, ...]:
        """The specs of the offered tools this runtime has (the input model's docstring is
        the description a model reads)."""
        tools = [self.tool_runtime.tools[name] for name in names if name in self.tool_runtime.tools]
        return tuple(ToolSpec.from_tool(t, (t.input_model.__doc__ or "").strip()) for t in tools)

    def _next_request(
        self, first: ProviderRequest, replay: GrowingReplay | None
    ) -> ProviderRequest:
        """The first request's context (a continuation's replay, or a first turn's user
        message), then this run's events after its first one (the start fact, or that user
        message), projected: ``replay`` holds the ones projected at the earlier steps, and
        only the events committed since are read (``None``: every event, projected again)."""
        if replay is None:
            events = self.ledger.read_run_events(first.run_id)[1:]
            own = tuple(provider_replay_subset(events))
        else:
            replay.extend(self.ledger.read_run_events_after(first.run_id, 1 + replay.count))
            own = replay.subset
        return dataclasses.replace(first, replay_context=first.replay_context + own)

    def _record(
        self, target: RunHeader, turn: ProviderTurn, request: ProviderRequest, progress: _Progress
    ) -> list[dict[str, Any]]:
        """Append the turn's outputs in one save; return its calls (to execute in order)."""
        events = []
        for content in turn.outputs:
            progress.outputs += 1
            event: dict[str, Any] = {
                "id": f"{target.run_id}-out-{progress.outputs}",
                **target.spine,
                "ts": self.ledger.now_ms(),
                "partial": False,
                "role": "model",
                "author": "agent",
                "content": dict(content),
            }
            if content["kind"] == "function_call":
                operation_id = operation_id_for(request.invocation_id, content["id"])
                event["refs"] = tool_refs(content["id"], operation_id)
            events.append(event)
        calls = [event for event in events if event["content"]["kind"] == "function_call"]
        if events and not (len(events) == 1 and calls):
            self.ledger.append_events(target.run_id, events)
        # a turn that is one call alone is recorded by its T1 (the call commits with its
        # dispatch in one transaction, ADR 0047): one commit less per step, same ledger
        return calls

    def _run_tools(self, run_id: str, calls: Sequence[dict[str, Any]]) -> Exception | None:
        """Each recorded call through T1, the tool, T2. An error the run can end on is
        returned; one that left an operation between T1 and T2 propagates (module docstring).
        """
        try:
            for call in calls:
                self.tool_runtime.execute(run_id, call)
        except Exception as exc:
            operations = self.ledger.load_run(run_id).tool_operations
            if any(operation.is_unsettled for operation in operations):
                raise
            return exc
        return None


def refuse_reused_call_ids(outputs: Sequence[Mapping[str, Any]], used: Set[str]) -> None:
    """A call id the conversation already ``used`` (the session history included, ADR 0038)
    would pair the new call with an old result (the exporters pair by bare id and refuse a
    repeated one) and, inside this run, name an existing operation: refused before the
    outputs are recorded (``provider_output_invalid``). The framework integrations call it
    on their responses too."""
    for index, content in enumerate(outputs):
        if content["kind"] == "function_call" and content["id"] in used:
            raise InvalidProviderOutputError(
                f"provider output {index} reuses tool call id {content['id']!r}, which an "
                "earlier call of this conversation already has",
                detail={"index": index, "field": "id", "toolCallId": content["id"]},
            )


def commit_terminal(
    ledger: Ledger,
    header: RunHeader,
    status: str,
    error_class: str | None,
    failure_message: str | None,
) -> None:
    """A loop's run ends: its terminal fact, then its header (``end_run`` keeps that order).
    A failure message rides in the fact (error content and ``stateDelta.failureMessage``), so
    the header derived from it, or repaired from it after a crash, carries it too."""
    ledger.end_run(
        header.run_id,
        terminal_event(
            header.spine,
            event_id=f"{header.run_id}-terminal",
            ts=ledger.now_ms(),
            status=status,
            failure_class=error_class,
            message=failure_message,
            state_delta=None if failure_message is None else {"failureMessage": failure_message},
        ),
    )


def call_ids(events: Iterable[RuntimeEvent]) -> frozenset[str]:
    """The tool call ids of ``events`` (a history must not reuse them, ADR 0038)."""
    return frozenset(e.function_call.id for e in events if e.function_call is not None)


def read_history(
    ledger: Ledger,
    session_id: str,
    *,
    turn_of: str | None,
    max_turns: int | None,
    reserved_call_ids: Iterable[str] = (),
) -> tuple[RuntimeEvent, ...]:
    """The session history of a turn (``session_history``) from the committed runs; nothing
    is read when ``max_turns`` is ``0`` (the host switched it off)."""
    if max_turns == 0:
        return ()
    return session_history(
        ledger.list_runs(session_id),
        ledger.read_run_events,
        turn_of=turn_of,
        max_turns=max_turns,
        reserved_call_ids=reserved_call_ids,
    )
