# ruff: noqa: E402
"""An ``agents.Agent`` run through the OpenAI Agents SDK's ``Runner``, made crash-safe (ADR 0042).

Why this shape: maka_es already owns everything a durable turn needs (the run with its prompt
in one save, T1 and T2, recovery by evidence, claims, operator actions); what the SDK owns is
its loop (instructions, guardrails, hooks, ``max_turns``, ``final_output``). This module joins
them with the SDK's public extension points only, and with maka_es's own turn and resume:

* :class:`DurableRunner` runs a turn as ``RuntimeApplication.run_turn`` and a restart as
  ``RuntimeApplication.resume``. Their agent loop asks its provider once; the provider here
  (:class:`RunnerProvider`) runs ``Runner.run`` (or ``run_sync``) over the conversation maka_es
  gives it: the user's prompt on a first turn, the validated replay after a crash (the prompt
  once, every call with its committed result, a call that never crossed T1 trimmed, never a
  new user message). The Runner's items are recorded as they happen, so the provider itself
  returns no output and the loop commits the terminal.
* :class:`DurableModel` wraps the agent's ``Model``: each response is recorded as model
  RuntimeEvents (text, reasoning, calls with their ids and operation ids) in ONE save, before
  the SDK sees it; a streamed response is recorded when it completes, before its completed
  event is passed on.
* Each ``FunctionTool`` is rebuilt with ``dataclasses.replace`` around its own
  ``on_invoke_tool``: the call goes through ``ToolRuntime.execute`` (T1, the tool, T2), and
  the SDK is given the committed result's text, the same text a replay shows the model. The
  tools of one response run one at a time, in the model's order (one writer per run).
* :func:`journaled_tools` gives the same tools as maka_es :class:`Tool` s, each with its
  recovery mode (default ``never_auto_retry``) and reconciler, for ``tools=`` of the
  application: startup recovery settles an interrupted call with them (a ``replay_safe`` or
  ``idempotent`` one re-runs with no SDK run context: ``ctx.context`` is ``None``).

The ledger is the conversation's memory: do not pass an SDK ``Session`` too (the earlier
turns are sent by maka_es, ADR 0038). Handoffs, hosted tools and MCP servers are refused
(``openai_agents_unsupported``): their calls would not be journaled here.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

from maka_es.extras import require_extra

# the extra first, so its absence is one typed error (ADR 0040), not a bare import failure
require_extra("openai-agents", "the OpenAI Agents integration", ("agents",))

from agents import Agent, FunctionTool, Model, ModelResponse, Runner, RunResult
from agents.result import RunResultBase
from agents.run_config import RunConfig
from agents.stream_events import StreamEvent
from agents.tool_context import ToolContext as AgentsToolContext
from agents.usage import Usage
from openai.types.responses import ResponseCompletedEvent
from pydantic import BaseModel, ConfigDict

from maka_es.app import RuntimeApplication
from maka_es.continuation.agent_loop import call_ids, refuse_reused_call_ids
from maka_es.continuation.turns import TurnResult
from maka_es.errors import (
    OpenAIAgentsUnsupportedError,
    OperationInterrupted,
)
from maka_es.ledger.model.host_config import HostConfig
from maka_es.providers.export import tool_result_text
from maka_es.providers.openai_responses import openai_responses_input, openai_responses_response
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.recovery.session_resume import ResumeResult
from maka_es.tooljournal.model.tools import Reconciler, Tool, ToolContext
from maka_es.wire.codec import canonical_json, operation_id_for
from maka_es.wire.events import ToolRecoveryMode
from maka_es.wire.facts import envelope, tool_refs

__all__ = [
    "AgentTurn",
    "DurableModel",
    "DurableRunner",
    "OperationInterrupted",
    "RunnerProvider",
    "ToolArgs",
    "journaled_tools",
]

T = TypeVar("T")


class ToolArgs(BaseModel):
    """A function tool's arguments as maka_es validates them: any JSON object (the SDK's own
    ``on_invoke_tool`` validates them against the tool's schema, inside T1/T2)."""

    model_config = ConfigDict(extra="allow", frozen=True)


@dataclass
class _Turn:
    """Where the Runner of one maka_es run records: its run, spine, counters and calls."""

    app: RuntimeApplication
    request: ProviderRequest
    loop: asyncio.AbstractEventLoop | None = None
    outputs: int = 0
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    contexts: dict[str, AgentsToolContext[Any]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    stopped: bool = False

    @property
    def spine(self) -> dict[str, str]:
        r = self.request
        return {
            "sessionId": r.session_id,
            "invocationId": r.invocation_id,
            "runId": r.run_id,
            "turnId": r.turn_id,
        }


_TURN: contextvars.ContextVar[_Turn | None] = contextvars.ContextVar(
    "maka_es_openai_agents_turn", default=None
)


def _current(what: str) -> _Turn:
    turn = _TURN.get()
    if turn is None:
        raise OpenAIAgentsUnsupportedError(
            f"{what} outside a DurableRunner turn: nothing would be journaled",
            detail={"reason": "outside_durable_run"},
        )
    return turn


# -- the model: each response recorded in one save --------------------------------------------


def _record_response(turn: _Turn, response: ModelResponse) -> None:
    """The response's output items as model RuntimeEvents, in ONE save (ids
    ``<runId>-out-<n>``, calls bound to their operation ids, as the agent loop records)."""
    output = [item.model_dump(mode="json", exclude_none=True) for item in response.output]
    step = openai_responses_response({"id": response.response_id, "output": output})
    used = set(turn.calls) | call_ids(turn.request.conversation)
    refuse_reused_call_ids(step.outputs, used)  # the agent loop's rule (ADR 0038)
    events: list[dict[str, Any]] = []
    for content in step.outputs:
        turn.outputs += 1
        event_id = f"{turn.request.run_id}-out-{turn.outputs}"
        event = envelope(turn.spine, event_id, turn.app.now_ms(), "model", "agent")
        event["content"] = dict(content)
        if content["kind"] == "function_call":
            operation_id = operation_id_for(turn.request.invocation_id, content["id"])
            event["refs"] = tool_refs(content["id"], operation_id)
            turn.calls[content["id"]] = event
        events.append(event)
    if events:
        turn.app.ledger.append_events(turn.request.run_id, events)


class DurableModel(Model):
    """The agent's ``Model``, each of whose responses is durable before the SDK acts on it."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """The inner model's response, recorded (one save, in a worker thread) first."""
        turn = _current("a model call")
        response = await self.inner.get_response(*args, **kwargs)
        await asyncio.to_thread(_record_response, turn, response)
        return response

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """The inner stream, its response recorded when it completes and before the
        completed event is passed on (deltas already shown are not durable, ADR 0042)."""
        turn = _current("a model call")
        async for event in self.inner.stream_response(*args, **kwargs):
            if isinstance(event, ResponseCompletedEvent):
                response = event.response
                recorded = ModelResponse(
                    output=list(response.output), usage=Usage(), response_id=response.id
                )
                await asyncio.to_thread(_record_response, turn, recorded)
            yield event

    async def close(self) -> None:
        await self.inner.close()


# -- the tools: T1, the SDK tool, T2 ----------------------------------------------------------


def _call_on(loop: asyncio.AbstractEventLoop | None, coroutine: Awaitable[T]) -> T:
    """``coroutine`` on the Runner's loop from the tool runtime's worker thread, or in a
    private loop when recovery re-runs a tool outside any Runner (in a thread of its own when
    recovery was called on a running loop: ``asyncio.run`` would refuse there, and the
    refusal would be committed as the tool's outcome)."""

    async def awaited() -> T:
        return await coroutine

    if loop is not None:
        return asyncio.run_coroutine_threadsafe(awaited(), loop).result()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaited())
    # recovery called on an asyncio host's loop thread: the tool gets a loop of its own
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, awaited()).result()


def _journaled(
    tool: FunctionTool, recovery_mode: ToolRecoveryMode, reconciler: Reconciler[Any] | None
) -> Tool[ToolArgs]:
    """``tool`` as a maka_es Tool: its ``on_invoke_tool`` with the live SDK context, or (in
    recovery) a context without the host's run context."""

    def run(args: ToolArgs, context: ToolContext) -> dict[str, Any]:
        turn = _TURN.get()
        live = None if turn is None else turn.contexts.get(context.tool_call_id)
        if turn is not None and live is not None:
            output = _call_on(turn.loop, tool.on_invoke_tool(live, live.tool_arguments))
        else:
            arguments = canonical_json(args.model_dump(mode="json"))
            replayed = AgentsToolContext(
                context=None,
                tool_name=tool.name,
                tool_call_id=context.tool_call_id,
                tool_arguments=arguments,
            )
            output = _call_on(None, tool.on_invoke_tool(replayed, arguments))
        return {"kind": "text", "text": output if isinstance(output, str) else str(output)}

    return Tool(tool.name, ToolArgs, run, recovery_mode=recovery_mode, reconciler=reconciler)


def _function_tools(agent: Agent[Any]) -> list[FunctionTool]:
    """The agent's function tools; what this module cannot journal is refused."""
    refused = [
        ("handoffs", bool(agent.handoffs)),
        ("mcp_servers", bool(agent.mcp_servers)),
        ("hosted_tools", any(not isinstance(t, FunctionTool) for t in agent.tools)),
    ]
    for reason, present in refused:
        if present:
            raise OpenAIAgentsUnsupportedError(
                f"agent {agent.name!r} has {reason.replace('_', ' ')}: their calls would not "
                "be journaled; only function tools are",
                detail={"reason": reason, "agent": agent.name},
            )
    return [t for t in agent.tools if isinstance(t, FunctionTool)]


def journaled_tools(
    agent: Agent[Any],
    recovery_modes: Mapping[str, ToolRecoveryMode] | None = None,
    reconcilers: Mapping[str, Reconciler[Any]] | None = None,
) -> list[Tool[Any]]:
    """The agent's function tools as maka_es Tools, for ``RuntimeApplication(tools=...)``.

    ``recovery_modes`` by tool name (default ``never_auto_retry``: an interrupted call parks
    for an operator); a tool with a reconciler defaults to ``reconcile``. A reconciler gets a
    :class:`ToolArgs` (the call's arguments as attributes)."""
    modes, checks = dict(recovery_modes or {}), dict(reconcilers or {})
    tools = _function_tools(agent)
    unknown = sorted((set(modes) | set(checks)) - {t.name for t in tools})
    if unknown:
        raise OpenAIAgentsUnsupportedError(
            f"no function tool named {unknown[0]!r} on agent {agent.name!r}",
            detail={"reason": "tool_unknown", "tool": unknown[0]},
        )
    return [
        _journaled(
            t,
            modes.get(t.name, "reconcile" if t.name in checks else "never_auto_retry"),
            checks.get(t.name),
        )
        for t in tools
    ]


def _durable_tool(tool: FunctionTool) -> FunctionTool:
    """``tool`` whose invocation goes through the application's tool runtime."""

    async def invoke(ctx: AgentsToolContext[Any], arguments: str) -> str:
        turn = _current(f"tool {tool.name}")
        call = turn.calls.get(ctx.tool_call_id)
        if call is None:
            raise OpenAIAgentsUnsupportedError(
                f"tool call {ctx.tool_call_id!r} was not recorded by the durable model",
                detail={"reason": "call_unrecorded", "toolCallId": ctx.tool_call_id},
            )
        turn.contexts[ctx.tool_call_id] = ctx
        turn.loop = asyncio.get_running_loop()  # the tool itself runs on the Runner's loop
        async with turn.lock:  # one at a time, in the order the SDK started them
            if turn.stopped:  # an earlier tool step of this turn raised: no further T1
                raise OpenAIAgentsUnsupportedError(
                    f"tool call {ctx.tool_call_id!r} not run: an earlier tool step stopped",
                    detail={"reason": "turn_stopped", "toolCallId": ctx.tool_call_id},
                )
            try:
                runtime = turn.app.tool_runtime
                result = await asyncio.to_thread(runtime.execute, turn.request.run_id, call)
            except BaseException:
                turn.stopped = True
                raise
        return tool_result_text(result.result)

    return dataclasses.replace(tool, on_invoke_tool=invoke)


# -- the provider: one Runner run per maka_es run ---------------------------------------------


@dataclass(frozen=True)
class AgentTurn:
    """What a durable turn or resume did: maka_es's result (``turn`` for a new prompt,
    ``resume`` after a restart) and the SDK's ``RunResult`` (``None`` when the Runner did not
    run: a park, nothing to resume)."""

    turn: TurnResult | None = None
    resume: ResumeResult | None = None
    result: RunResultBase | None = None

    @property
    def status(self) -> str:
        """``completed`` / ``failed`` (a turn's or a continued run's), or ``parked`` /
        ``nothing_to_resume``."""
        if self.turn is not None:
            return self.turn.status
        assert self.resume is not None
        if self.resume.outcome is not None:
            return self.resume.outcome.status
        return self.resume.status

    @property
    def operator_commands(self) -> tuple[str, ...]:
        """A park's ``maka-es`` commands (``maka-es attest`` / ``maka-es fork``); else ``()``."""
        return () if self.resume is None else self.resume.operator_commands

    @property
    def final_output(self) -> Any:
        """The Runner's ``final_output`` (``None`` without a run)."""
        return None if self.result is None else self.result.final_output


class RunnerProvider:
    """The provider the agent loop of a maka_es turn or continuation calls once: it runs the
    agent's Runner over the request's conversation (module docstring) and returns no output
    (the Runner's items are already recorded)."""

    def __init__(
        self,
        app: RuntimeApplication,
        agent: Agent[Any],
        runner: Callable[[Agent[Any], list[Any]], RunResultBase],
    ) -> None:
        self.app = app
        self.agent = agent
        self.runner = runner
        self.result: RunResultBase | None = None

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        turn = _Turn(self.app, request)
        items = openai_responses_input(request.conversation)
        context = contextvars.copy_context()
        context.run(_TURN.set, turn)
        try:
            self.result = context.run(self.runner, self.agent, items)
        except Exception as exc:
            if any(op.is_unsettled for op in self.app.tool_journal.tool_operations(request.run_id)):
                raise OperationInterrupted(type(exc).__name__) from exc
            raise
        return ProviderTurn(outputs=())


class DurableRunner:
    """``Runner`` for one agent on one application (module docstring).

    The application must hold the agent's tools (``tools=journaled_tools(agent, ...)``), a
    host config and ``safe_boundary_resume=True``; the host calls ``app.recover()`` and
    ``app.open_session`` at every start, then :meth:`resume_sync` (or :meth:`resume`) before
    a new prompt's :meth:`run_sync` (or :meth:`run`)."""

    def __init__(
        self,
        app: RuntimeApplication,
        agent: Agent[Any],
        *,
        run_config: RunConfig | None = None,
        max_turns: int = 10,
        context: Any = None,
    ) -> None:
        tools = _function_tools(agent)
        missing = [t.name for t in tools if t.name not in app.tool_runtime.tools]
        if missing:
            raise OpenAIAgentsUnsupportedError(
                f"the application's tool catalogue has no {missing[0]!r}: open it with "
                "tools=journaled_tools(agent)",
                detail={"reason": "tool_not_in_catalogue", "tool": missing[0]},
            )
        self.app = app
        #: The last streamed turn's outcome (:meth:`run_streamed`, :meth:`resume_streamed`).
        self.last: AgentTurn | None = None
        self.run_config = run_config or RunConfig()
        self.max_turns = max_turns
        self.context = context
        model = agent.model
        if not isinstance(model, Model):
            model = self.run_config.model_provider.get_model(model)
        self.agent = agent.clone(model=DurableModel(model), tools=[_durable_tool(t) for t in tools])

    @classmethod
    def open(
        cls,
        store: str | Path,
        agent: Agent[Any],
        *,
        session_id: str,
        cwd: str | Path,
        recovery_modes: Mapping[str, ToolRecoveryMode] | None = None,
        reconcilers: Mapping[str, Reconciler[Any]] | None = None,
        **options: Any,
    ) -> DurableRunner:
        """The usual start in one call: the application on ``store`` (a SQLite path or a
        PostgreSQL URL) with the agent's journaled tools and a host config for ``cwd``, then
        ``recover()`` and ``open_session(session_id)``. ``options`` go to the runner
        (``run_config``, ``max_turns``, ``context``); :meth:`close` (or ``with``) closes it."""
        tools = journaled_tools(agent, recovery_modes, reconcilers)
        model = agent.model if isinstance(agent.model, str) else type(agent.model).__name__
        host = HostConfig(
            backend_kind="ai-sdk",
            llm_connection_slug="openai-agents",
            model_id=model,
            permission_mode="ask",
            cwd=str(cwd),
        )
        app = RuntimeApplication.open(
            str(store), tools=tools, host_config=host, safe_boundary_resume=True
        )
        try:
            app.recover()
            app.open_session(session_id)
            return cls(app, agent, **options)
        except BaseException:
            app.close()
            raise

    def close(self) -> None:
        """Close the application (its store connections)."""
        self.app.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sync ---------------------------------------------------------------------------------

    def _sync_runner(self, agent: Agent[Any], items: list[Any]) -> RunResult:
        return Runner.run_sync(
            agent, items, context=self.context, max_turns=self.max_turns, run_config=self.run_config
        )

    def run_sync(self, session_id: str, prompt: str, *, run_id: str | None = None) -> AgentTurn:
        """A new prompt as one durable turn (``run_turn``: refused while the session's newest
        run is unfinished, ``turn_session_unfinished``)."""
        provider = RunnerProvider(self.app, self.agent, self._sync_runner)
        turn = self.app.run_turn(session_id, prompt, provider, run_id=run_id)
        return AgentTurn(turn=turn, result=provider.result)

    def resume_sync(self, session_id: str) -> AgentTurn:
        """The session's interrupted turn continued by the Runner from the committed
        boundary, or its park with the operator commands (``RuntimeApplication.resume``)."""
        provider = RunnerProvider(self.app, self.agent, self._sync_runner)
        resumed = self.app.resume(session_id, provider)
        return AgentTurn(resume=resumed, result=provider.result)

    # -- async --------------------------------------------------------------------------------

    def _async_runner(self, loop: asyncio.AbstractEventLoop) -> Callable[..., RunResult]:
        def run(agent: Agent[Any], items: list[Any]) -> RunResult:
            turn = _current("the Runner")

            async def go() -> RunResult:
                _TURN.set(turn)
                return await Runner.run(
                    agent,
                    items,
                    context=self.context,
                    max_turns=self.max_turns,
                    run_config=self.run_config,
                )

            return asyncio.run_coroutine_threadsafe(go(), loop).result()

        return run

    async def run(self, session_id: str, prompt: str, *, run_id: str | None = None) -> AgentTurn:
        """:meth:`run_sync` for an asyncio host: the Runner runs on the caller's loop, the
        store commands in worker threads."""
        provider = RunnerProvider(self.app, self.agent, self._async_runner(_running()))
        turn = await asyncio.to_thread(
            self.app.run_turn, session_id, prompt, provider, run_id=run_id
        )
        return AgentTurn(turn=turn, result=provider.result)

    async def resume(self, session_id: str) -> AgentTurn:
        """:meth:`resume_sync` for an asyncio host."""
        provider = RunnerProvider(self.app, self.agent, self._async_runner(_running()))
        resumed = await asyncio.to_thread(self.app.resume, session_id, provider)
        return AgentTurn(resume=resumed, result=provider.result)

    # -- streamed -----------------------------------------------------------------------------

    def run_streamed(
        self, session_id: str, prompt: str, *, run_id: str | None = None
    ) -> AsyncIterator[StreamEvent]:
        """:meth:`run` with ``Runner.run_streamed``: the SDK's stream events, as they come.
        Each response is recorded when it completes, before its completed event is passed on
        and before any of its tools runs; a delta already shown is not durable (a crash
        mid-response asks the model again). The turn's ``AgentTurn`` is :attr:`last`."""
        return self._streamed(lambda provider: self.app.run_turn(session_id, prompt, provider,
                                                                 run_id=run_id))  # fmt: skip

    def resume_streamed(self, session_id: str) -> AsyncIterator[StreamEvent]:
        """:meth:`resume` with ``Runner.run_streamed`` (see :meth:`run_streamed`)."""
        return self._streamed(lambda provider: self.app.resume(session_id, provider))

    async def _streamed(
        self, call: Callable[[RunnerProvider], TurnResult | ResumeResult]
    ) -> AsyncIterator[StreamEvent]:
        """The maka_es turn in a worker thread; the Runner streams on this loop into a queue
        this generator yields from."""
        loop, queue = asyncio.get_running_loop(), asyncio.Queue[StreamEvent]()

        def runner(agent: Agent[Any], items: list[Any]) -> RunResultBase:
            turn = _current("the Runner")

            async def go() -> RunResultBase:
                _TURN.set(turn)
                streamed = Runner.run_streamed(agent, items, context=self.context,
                                               max_turns=self.max_turns,
                                               run_config=self.run_config)  # fmt: skip
                async for event in streamed.stream_events():
                    await queue.put(event)
                return streamed

            return asyncio.run_coroutine_threadsafe(go(), loop).result()

        provider = RunnerProvider(self.app, self.agent, runner)
        done = asyncio.ensure_future(asyncio.to_thread(call, provider))
        while not (done.done() and queue.empty()):
            event = asyncio.ensure_future(queue.get())
            await asyncio.wait({event, done}, return_when=asyncio.FIRST_COMPLETED)
            if event.done():
                yield event.result()
            else:
                event.cancel()
        self.last = _agent_turn(done.result(), provider.result)


def _agent_turn(outcome: TurnResult | ResumeResult, result: RunResultBase | None) -> AgentTurn:
    if isinstance(outcome, TurnResult):
        return AgentTurn(turn=outcome, result=result)
    return AgentTurn(resume=outcome, result=result)


def _running() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()
