"""A host's turn, whole, on the library's agent loop (ADR 0036).

Why in the library: a host that writes its own first-turn loop must build the user event with
the protocol marker, filter the model's calls and drive the tool runtime itself, and it then
records one model turn with two calls differently from a continuation (two assistant messages
instead of one). :meth:`Turns.run_turn` does the whole turn instead, on the SAME
:class:`~maka_es.continuation.agent_loop.AgentLoop` continuations and forks run on:

1. refuse (``turn_session_unfinished``, nothing written) when the session's newest run is
   live, waiting or failed (an interrupted run ends ``failed``; a ``cancelled`` one was the
   host's own decision): a new prompt beside an unfinished turn would leave two
   conversations, and ``resume`` is the way on (``maka_es.recovery.session_resume``);
2. read the session history (ADR 0038): the earlier completed turns' conversation, sent
   before the turn's own messages in every request (``history_turns`` bounds it, ``0`` turns
   it off); one that cannot be built refuses here, nothing written;
3. create the run from the host config with its user message (the T1 protocol marker) as
   event 1, in ONE save (``RunStarts.create_run_with_events``): no run without its prompt exists;
4. the agent loop: model, T1, tool, T2, model, to a text-only turn, an error or the step limit;
5. its terminal, event before header (``commit_terminal``).
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
    commit_terminal,
    read_history,
)
from maka_es.continuation.lineage import checked_history_turns
from maka_es.errors import InvalidPlanRequestError, TurnRefusedError
from maka_es.ledger.service import CLOCK_FIELDS, HostSessions, Ledger, RunStarts
from maka_es.providers.protocol import Provider, ProviderRequest
from maka_es.telemetry import OUTCOME, RUN_ID, SESSION_ID, TURN_SPAN, error_class_of
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1, RuntimeEvent, TextContent
from maka_es.wire.facts import envelope
from maka_es.wire.run_header import RunHeader

__all__ = ["AFTER_TURN_STARTED", "TurnResult", "Turns", "answer_of"]

#: The turn's run and its user message are durable; the model was not called yet.
AFTER_TURN_STARTED = "turn.after_run_and_user_message_committed"

#: Newest-run statuses a new turn may follow.
FINISHED = frozenset({"completed", "cancelled"})


@dataclass(frozen=True)
class TurnResult:
    """What a turn did: its run, terminal status (``completed`` or ``failed``), the model's
    final text (``None`` when it gave none), the error class and maka_es-authored failure
    message when it failed, and how many outputs, provider calls and tool calls it made."""

    run_id: str
    status: str
    answer: str | None
    error_class: str | None = None
    failure_message: str | None = None
    outputs: int = 0
    steps: int = 0
    tool_calls: int = 0


def answer_of(events: Sequence[RuntimeEvent]) -> str | None:
    """The model's last text of a run: its answer (``None`` without one)."""
    for event in reversed(events):
        if event.role == "model" and isinstance(event.content, TextContent):
            return str(event.content.text)
    return None


def user_message(header: RunHeader, prompt: str, *, ts: int) -> dict[str, Any]:
    """Event 1 of a turn: the user's prompt, declaring the T1 tool-boundary protocol
    (docs/reference/tool-journal.md#protocol-marker)."""
    wire = envelope(header.spine, f"{header.run_id}-user", ts, "user", "user")
    protocol = {"runtimeProtocol": {"toolBoundary": TOOL_BOUNDARY_PROTOCOL_V1}}
    return wire | {"content": {"kind": "text", "text": prompt}, "actions": protocol}


class Turns:
    """``run_turn`` over the ledger, the host config and the application's tool runtime."""

    def __init__(
        self,
        ledger: Ledger,
        run_starts: RunStarts,
        host_sessions: HostSessions,
        tool_runtime: ToolRuntime,
    ) -> None:
        self._ledger = ledger
        self._run_starts = run_starts
        self._sessions = host_sessions
        self._tool_runtime = tool_runtime

    def refuse_unfinished(self, session_id: str) -> None:
        """``turn_session_unfinished`` when the session's newest run is live, failed or
        waiting (module docstring, step 1)."""
        runs = self._ledger.list_runs(session_id)
        if runs and runs[-1].status not in FINISHED:
            newest = runs[-1]
            raise TurnRefusedError(
                f"session {session_id}'s newest run {newest.run_id} is {newest.status}, not "
                "completed: resume it first (resume(session, provider))",
                detail={"sessionId": session_id, "runId": newest.run_id, "status": newest.status},
            )

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
        """One turn to its end (module docstring); the ids default to the id factory's."""
        if step_limit is not None and (type(step_limit) is not int or step_limit < 1):
            raise InvalidPlanRequestError(
                "step_limit must be a positive integer", detail={"stepLimit": repr(step_limit)}
            )
        max_turns = checked_history_turns(history_turns)
        with telemetry.span(TURN_SPAN, {SESSION_ID: session_id}) as span:
            with self._ledger.command():
                self.refuse_unfinished(session_id)
                history = read_history(self._ledger, session_id, turn_of=None, max_turns=max_turns)
                header = self._sessions.header_for(
                    session_id, run_id=run_id, invocation_id=invocation_id, turn_id=turn_id
                )
                user = user_message(header, prompt, ts=self._ledger.now_ms())
                self._run_starts.create_run_with_events(header, [user], clock_fields=CLOCK_FIELDS)
            span.set(RUN_ID, header.run_id)
            self._ledger.record_trace_context(header.run_id, telemetry.current_traceparent())
            failpoints.hit(AFTER_TURN_STARTED)
            request = ProviderRequest(
                session_id=session_id,
                run_id=header.run_id,
                invocation_id=header.spine["invocationId"],
                turn_id=header.turn_id,
                replay_context=(RuntimeEvent.model_validate(user),),
                system_prompt=system_prompt,
                tool_names=tuple(self._tool_runtime.tools),
                history=history,
            )
            limit = DEFAULT_STEP_LIMIT if step_limit is None else step_limit
            loop = AgentLoop(self._ledger, self._tool_runtime, step_limit=limit)
            result = self._end(header, loop.run(provider, request, header))
            span.set(OUTCOME, result.status)
            if result.error_class is not None:
                span.fail(result.error_class)
            return result

    def _end(self, header: RunHeader, end: LoopEnd) -> TurnResult:
        """The loop's terminal through the barrier, then the result."""
        error_class = None if end.error is None else error_class_of(end.error)
        commit_terminal(self._ledger, header, end.status, error_class, end.failure_message)
        return TurnResult(
            header.run_id,
            end.status,
            answer_of(self._ledger.read_run_events(header.run_id)),
            error_class,
            end.failure_message,
            end.outputs,
            end.steps,
            end.tool_calls,
        )
