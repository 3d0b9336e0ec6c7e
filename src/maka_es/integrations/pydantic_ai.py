"""A Pydantic AI agent made crash-safe by maka_es, with no change to its tools or prompts
(issue 24, part 1; ADR 0041; docs/integrations/pydantic-ai.md).

Why this shape: maka_es already owns a turn's lifecycle (``run_turn``: the run and its user
message in one save, the refusal beside an unfinished turn, the terminal; ``resume``: the
plan, the claim, the continuation, the park and its operator commands) and a tool's
(``ToolRuntime``: T1, the tool, T2, recovery by mode). Pydantic AI owns its own loop (model,
tools, retries, output validation, streaming). :class:`DurableAgent` keeps both: to maka_es
the whole Pydantic AI run is ONE provider step (:class:`AgentStep`, which answers with an
empty turn, so the library's loop records nothing itself and ends the run); inside it the
agent runs its own loop with its model wrapped (:class:`RecordingModel`: each response is
recorded as RuntimeEvents in one save before any of its tools runs) and its toolsets wrapped
(:class:`JournaledToolset`: each call goes through ``app.tool_runtime.execute``, so T1 is
committed before the tool runs and T2 before the agent sees the result).

The agent is always run with ``message_history`` rebuilt from the ledger (the session's
earlier turns, then the run's replay: the user prompt of a first turn, or a continuation's
validated context) and no new prompt, so a resumed agent never gets its prompt twice and
never sees a call without its result. The agent's ``system_prompt`` is rebuilt for every run
(Pydantic AI adds it only to an empty history), never replayed from the ledger.

Parallel calls of one response are all recorded first, then executed one after another in the
model's order (one writer per run, as in maka_es's own loop). ``ModelRetry`` from a tool is a
committed error result (T2), and then the same ``ModelRetry`` reaches the agent, which sends
the model its retry prompt; a replay shows it as the same retry prompt. Any other exception
of a tool is committed (T2) and then raised out of the run, as Pydantic AI would, after the
turn was ended ``failed``.
"""

# ruff: noqa: E402 - the extra is checked (a typed error) before the framework is imported
from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, get_args

from pydantic import BaseModel, ConfigDict

from maka_es.extras import require_extra

require_extra("pydantic-ai", "the Pydantic AI integration", ("pydantic_ai",))

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolRetryCause,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.result import StreamedRunResult
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python

from maka_es.adapters.file_write import FileWriteArgs, FileWriteReconciler
from maka_es.app import RuntimeApplication
from maka_es.continuation.turns import TurnResult
from maka_es.errors import MakaError
from maka_es.ledger.model.host_config import HostConfig
from maka_es.providers.export import exchange_turns, tool_result_text
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.recovery.operator_actions import operator_commands
from maka_es.recovery.session_resume import ResumeResult
from maka_es.tooljournal.model.tools import Reconciler, Tool, ToolContext, ToolResult
from maka_es.wire.codec import operation_id_for
from maka_es.wire.events import RuntimeEvent, ToolRecoveryMode
from maka_es.wire.facts import tool_refs

__all__ = [
    "AgentStep",
    "DurableAgent",
    "DurableResume",
    "DurableStream",
    "DurableTurn",
    "JournaledToolset",
    "RecordingModel",
    "RUN_LEFT_OPEN",
    "ToolPolicy",
    "history_messages",
]

OutputT = TypeVar("OutputT")
T = TypeVar("T")

#: What ``ToolRuntime`` writes before the text of an exception a tool raised.
_RETRY_PREFIX = "tool_error: ModelRetry: "


class AnyArgs(BaseModel):
    """The journal's view of a Pydantic AI tool's arguments: any JSON object (the agent has
    validated them against the tool's own schema before the call reaches the journal)."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ToolPolicy:
    """How recovery treats one tool after a crash between its T1 and T2 (ADR 0007):
    ``never_auto_retry`` (the default: the run parks until an operator attests), ``idempotent``
    / ``replay_safe`` (recovery runs it again with the same operation id), or ``reconcile``
    with a ``reconciler`` whose arguments model is ``input_model``."""

    recovery_mode: ToolRecoveryMode = "never_auto_retry"
    reconciler: Reconciler[Any] | None = None
    input_model: type[BaseModel] = AnyArgs

    @classmethod
    def file_write(cls, root: Path) -> ToolPolicy:
        """A tool that writes ``content`` to the workspace file ``path`` below ``root``:
        settled after a crash from the file itself (the shipped ``Write`` reconciler)."""
        return cls("reconcile", FileWriteReconciler(root), FileWriteArgs)


@dataclass(frozen=True)
class DurableTurn(Generic[OutputT]):
    """A turn: maka_es's ``TurnResult`` and the agent's result (``None`` when it failed)."""

    turn: TurnResult
    result: Any = None

    @property
    def output(self) -> OutputT | None:
        """The agent's output, as ``AgentRunResult.output``."""
        return None if self.result is None else self.result.output


@dataclass(frozen=True)
class DurableResume(Generic[OutputT]):
    """``resume``: maka_es's ``ResumeResult`` and the continued agent's result, if it ran;
    ``operator_commands`` are the park's ``maka-es`` commands (the resume's, or for a
    response interrupted between two of its calls, the fork before that response)."""

    resume: ResumeResult
    result: Any = None
    operator_commands: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        """``nothing_to_resume``, ``continued`` or ``parked``."""
        return self.resume.status

    @property
    def output(self) -> OutputT | None:
        """The continued agent's output (``None`` when nothing ran)."""
        return None if self.result is None else self.result.output


@dataclass
class DurableStream(Generic[T]):
    """What ``run_stream`` / ``iter`` yield: the framework's own object (``run``: a
    ``StreamedRunResult`` or an ``AgentRun``), and the turn once the block has exited."""

    run: T
    turn: TurnResult | None = None


# -- the run binding: what the model and toolset wrappers of one maka_es run share -------------


@dataclass
class _ToolCall:
    """One call's implementation, handed to the journal's worker thread."""

    loop: asyncio.AbstractEventLoop
    call: Callable[[], Coroutine[Any, Any, Any]]
    ran: bool = False
    value: Any = None
    error: BaseException | None = None


@dataclass
class _RunBinding:
    """The maka_es run a Pydantic AI run records into, and its calls awaiting execution."""

    app: RuntimeApplication
    request: ProviderRequest
    used_call_ids: set[str]
    pending: dict[str, deque[dict[str, Any]]] = field(default_factory=dict)
    tool_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    result: Any = None
    error: BaseException | None = None
    #: What stopped a tool step between T1 and T2 (a kill, an interrupt): no call runs after.
    interrupted: BaseException | None = None

    def take_call(self, tool_call_id: str | None) -> dict[str, Any]:
        """The recorded call event of the agent's call ``tool_call_id`` (oldest first)."""
        queue = self.pending.get(tool_call_id or "")
        if not queue:
            raise LookupError(f"tool call {tool_call_id!r} was not recorded before it ran")
        return queue.popleft()


_CALL: ContextVar[_ToolCall | None] = ContextVar("maka_es_pydantic_ai_call", default=None)


def _journal_value(value: Any) -> Any:
    """A tool's return value as the JSON the journal stores (a string in the text envelope)."""
    if isinstance(value, str):
        return {"kind": "text", "text": value}
    return to_jsonable_python(value)


def _run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end from sync code: here, or in a thread of its own when this
    thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # carried to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


# -- recording the model's responses -------------------------------------------------------------


class RecordingModel(WrapperModel):
    """The agent's model; each response is recorded in the run as RuntimeEvents (text,
    thinking, tool calls with their ids) in ONE save, before the agent acts on it. Bound to
    its run, not to a context variable: a streamed run is consumed in the caller's task."""

    def __init__(self, wrapped: Model, binding: _RunBinding | None = None) -> None:
        super().__init__(wrapped)
        self.binding = binding

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await super().request(messages, model_settings, model_request_parameters)
        await _record(self.binding, response, model_request_parameters)
        return response

    @contextlib.asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[Any]:
        async with super().request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        await _record(self.binding, stream.get(), model_request_parameters)


def _output_of(part: ModelResponsePart, output_tools: frozenset[str]) -> dict[str, Any] | None:
    """The wire content of one response part (``None``: nothing the ledger records)."""
    if isinstance(part, TextPart):
        return {"kind": "text", "text": part.content} if part.content else None
    if isinstance(part, ThinkingPart):
        thinking: dict[str, Any] = {"kind": "thinking", "text": part.content}
        if part.signature:
            thinking["signature"] = part.signature
        return thinking if part.content else None
    if isinstance(part, ToolCallPart):
        if part.tool_name in output_tools:  # the final output, not a tool the journal runs
            return {"kind": "text", "text": part.args_as_json_str()}
        return {
            "kind": "function_call",
            "id": part.tool_call_id,
            "name": part.tool_name,
            "args": part.args_as_dict(),
        }
    return None  # provider-executed (native) tools and files: not this journal's


async def _record(
    binding: _RunBinding | None, response: ModelResponse, params: ModelRequestParameters
) -> None:
    """Append the response's outputs to the bound run in one save (unbound, the wrapper
    records nothing)."""
    if binding is None:
        return
    output_tools = frozenset(tool.name for tool in params.output_tools)
    outputs = [o for o in (_output_of(p, output_tools) for p in response.parts) if o is not None]
    if not outputs:
        return
    originals: list[str] = []
    for output in outputs:
        if output["kind"] == "function_call":
            originals.append(output["id"])
            output["id"] = _fresh_call_id(output["id"], binding.used_call_ids)
    turn = ProviderTurn(tuple(outputs))  # the library's own validation of model output
    events = _model_events(binding, turn.outputs)
    await asyncio.to_thread(binding.app.ledger.append_events, binding.request.run_id, events)
    calls = [event for event in events if event["content"]["kind"] == "function_call"]
    for original, call in zip(originals, calls, strict=True):
        binding.pending.setdefault(original, deque()).append(call)


def _fresh_call_id(call_id: str, used: set[str]) -> str:
    """The id the ledger records: the model's own, unless the conversation already used it
    (``TestModel`` repeats ``pyd_ai_tool_call_id__<tool>``), then a numbered variant."""
    chosen, n = call_id, 1
    while chosen in used:
        n += 1
        chosen = f"{call_id}~{n}"
    used.add(chosen)
    return chosen


def _model_events(binding: _RunBinding, outputs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Model events of the bound run, numbered after its committed ones."""
    ledger, run_id = binding.app.ledger, binding.request.run_id
    header = ledger.get_run_header(run_id)
    base = ledger.run_high_water(run_id)
    events = []
    for n, content in enumerate(outputs, start=base + 1):
        event: dict[str, Any] = {
            "id": f"{run_id}-pai-{n}",
            **header.spine,
            "ts": ledger.now_ms(),
            "partial": False,
            "role": "model",
            "author": "agent",
            "content": dict(content),
        }
        if content["kind"] == "function_call":
            operation_id = operation_id_for(binding.request.invocation_id, content["id"])
            event["refs"] = tool_refs(content["id"], operation_id)
        events.append(event)
    return events


# -- running the tools through the journal -------------------------------------------------------


@dataclass
class JournaledToolset(WrapperToolset[Any]):
    """One of the agent's toolsets, bound to a durable run: each call is one
    ``tool_runtime.execute``: T1, the tool, T2, one call at a time in the model's order."""

    binding: _RunBinding | None = None

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        binding = self.binding
        if binding is None:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        call = binding.take_call(ctx.tool_call_id)
        cell = _ToolCall(
            asyncio.get_running_loop(),
            lambda: self.wrapped.call_tool(name, tool_args, ctx, tool),
        )
        async with binding.tool_lock:
            if binding.interrupted is not None:
                raise binding.interrupted
            token = _CALL.set(cell)
            try:
                run_id = binding.request.run_id
                result = await asyncio.to_thread(binding.app.tool_runtime.execute, run_id, call)
            except BaseException as exc:
                if not isinstance(exc, Exception):
                    binding.interrupted = exc
                raise
            finally:
                _CALL.reset(token)
        return _answer(result, cell)


def _answer(result: ToolResult, cell: _ToolCall) -> Any:
    """What the agent gets once T2 is durable: the tool's own value, or its exception (a
    ``ModelRetry`` sends the model the retry prompt); a refusal before T1 is a retry prompt."""
    if cell.error is not None:
        raise cell.error
    if not result.dispatched:
        raise ModelRetry(tool_result_text(result.result))
    return cell.value if cell.ran else result.result


def _journal_tool(name: str, policy: ToolPolicy, recovery: Callable[..., Any]) -> Tool[Any]:
    """The catalogue entry of one agent tool: in a durable run it runs the agent's call on
    the agent's event loop; in ``recover()`` (no run) it runs the tool through ``recovery``."""

    def run(args: BaseModel, context: ToolContext) -> Any:
        cell = _CALL.get()
        if cell is None:
            return _journal_value(recovery(name, args.model_dump(mode="json"), context))
        future = asyncio.run_coroutine_threadsafe(cell.call(), cell.loop)
        try:
            value = future.result()
        except BaseException as exc:
            cell.error = exc
            raise
        cell.ran, cell.value = True, value
        return _journal_value(value)

    return Tool(name, policy.input_model, run, policy.recovery_mode, policy.reconciler)


# -- the ledger's conversation as Pydantic AI messages -------------------------------------------


#: The codes of a refusal before T1 (the tool never ran): the agent was sent a retry prompt.
_REFUSAL_CODES = ("tool_unknown", "invalid_arguments", "permission_denied", "preflight_failed")


def _result_part(item: Mapping[str, Any]) -> ModelRequestPart:
    """A committed tool result as the agent saw it: its return; a ``ModelRetry`` (or a
    refusal before T1) as the retried return Pydantic AI builds; any other error as failed."""
    name, call_id = str(item["toolName"]), str(item["toolCallId"])
    output = item["output"]
    is_text = isinstance(output, str) or (isinstance(output, dict) and output.get("kind") == "text")
    value = tool_result_text(output) if is_text else output
    if not item.get("isError"):
        return ToolReturnPart(tool_name=name, content=value, tool_call_id=call_id)
    text = tool_result_text(output)
    if text.startswith(_RETRY_PREFIX) or text.startswith(_REFUSAL_CODES):
        retry: RetryInfo[ToolRetryCause] = RetryInfo(cause="model_retry")
        message = text.removeprefix(_RETRY_PREFIX)
        return ToolReturnPart(
            tool_name=name, content=message, tool_call_id=call_id, outcome="retried", retry=retry
        )
    return ToolReturnPart(tool_name=name, content=text, tool_call_id=call_id, outcome="failed")


def _response_part(item: Mapping[str, Any]) -> ModelResponsePart:
    if item["kind"] == "tool_call":
        name, call_id = str(item["toolName"]), str(item["toolCallId"])
        return ToolCallPart(tool_name=name, args=item["input"], tool_call_id=call_id)
    if item["kind"] == "thinking":
        return ThinkingPart(content=str(item["text"]), signature=item.get("signature"))
    return TextPart(content=str(item["content"]))


def history_messages(
    events: Iterable[RuntimeEvent], system_parts: Iterable[SystemPromptPart] = ()
) -> list[ModelMessage]:
    """Committed RuntimeEvents as Pydantic AI's ``message_history``: the model-visible
    exchange (``exchange_turns``: never a call without its result), the system prompt first."""
    messages: list[ModelMessage] = []
    pending: list[ModelRequestPart] = list(system_parts)
    for turn in exchange_turns(events):
        if turn.role == "assistant":
            if pending:
                messages.append(ModelRequest(parts=pending))
                pending = []
            messages.append(ModelResponse(parts=[_response_part(i) for i in turn.items]))
        elif turn.role == "user":
            pending.append(UserPromptPart(content=str(turn.items[0]["content"])))
        else:
            pending.extend(_result_part(item) for item in turn.items)
    if pending:
        messages.append(ModelRequest(parts=pending))
    return messages


def _gap_fork(app: RuntimeApplication, run_id: str) -> tuple[str, ...]:
    """The fork before the response whose call has no result while a sibling's has (the
    ``provider_replay_non_suffix_gap`` park, for which recovery names no command): the model
    decides again from the boundary before that response (ADR 0041)."""
    events = app.read_run_events(run_id)
    answered = {e.function_response.id for e in events if e.function_response is not None}
    gap = next(
        (i for i, e in enumerate(events) if e.function_call and e.function_call.id not in answered),
        None,
    )
    if gap is None:
        return ()
    start = gap
    while start > 0 and events[start - 1].role == "model":
        start -= 1
    operations = {
        op.call_event_id: op.operation_id for op in app.tool_journal.tool_operations(run_id)
    }
    first = next((operations[e.id] for e in events[start:] if e.id in operations), None)
    return () if first is None else operator_commands(run_id, (first,), attestable=False)


def _policy(name: str, policy: ToolPolicy | str) -> ToolPolicy:
    """A declared policy, or one from a recovery mode's name (refused when it is none)."""
    if isinstance(policy, ToolPolicy):
        return policy
    if policy not in get_args(ToolRecoveryMode):
        modes = ", ".join(get_args(ToolRecoveryMode))
        raise ValueError(f"tool {name}: recovery mode {policy!r} is not one of {modes}")
    return ToolPolicy(cast(ToolRecoveryMode, policy))


#: The failure class of a turn whose ``run_stream`` / ``iter`` block exited before the agent's
#: run ended: an interrupted turn, which ``resume`` continues from its committed boundary.
RUN_LEFT_OPEN = "agent_run_left_open"


def _left_open(error: BaseException | None) -> bool:
    return isinstance(error, MakaError) and error.code == RUN_LEFT_OPEN


class _SystemPromptReadError(Exception):
    """Ends the run that only reads the agent's system prompt."""


# -- the agent as one maka_es provider step ------------------------------------------------------


AgentBody = Callable[[Agent[Any, Any], list[ModelMessage]], Awaitable[Any]]


class AgentStep:
    """The whole Pydantic AI run as one maka_es provider step (module docstring): it records
    into ``request.run_id`` itself and answers with an empty turn, which ends the library's
    loop ``completed`` (or its exception ends it ``failed``)."""

    def __init__(
        self,
        durable: DurableAgent[Any],
        app: RuntimeApplication,
        body: AgentBody,
        loop: asyncio.AbstractEventLoop | None,
        deps: Any = None,
    ) -> None:
        self.durable = durable
        self.app = app
        self.body = body
        self.loop = loop
        self.deps = deps
        self.binding: _RunBinding | None = None

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        used = {e.function_call.id for e in request.conversation if e.function_call is not None}
        binding = _RunBinding(self.app, request, used)
        self.binding = binding
        coro = self._run(binding)
        if self.loop is None:
            _run_blocking(coro)
        else:
            asyncio.run_coroutine_threadsafe(coro, self.loop).result()
        if binding.error is not None:
            raise binding.error
        return ProviderTurn(())

    async def _run(self, binding: _RunBinding) -> None:
        binding.tool_lock = asyncio.Lock()  # bound to the loop the agent runs on
        agent = self.durable.agent
        system = await self.durable.system_parts(self.deps)
        messages = history_messages(binding.request.conversation, system)
        model = RecordingModel(self.durable.model, binding)
        toolsets = [JournaledToolset(toolset, binding) for toolset in agent.toolsets]
        try:
            with agent.override(model=model, toolsets=toolsets, tools=[]):
                binding.result = await self.body(agent, messages)
        except Exception as exc:  # ends the run failed; re-raised to the caller after
            binding.error = exc


class DurableAgent(Generic[OutputT]):
    """An existing ``pydantic_ai.Agent``, its turns and resumes recorded in a maka_es
    application (module docstring). ``tools`` declares each tool's recovery
    (:class:`ToolPolicy` or a mode name; undeclared tools are ``never_auto_retry``); ``deps``
    is what a tool gets when ``recover()`` re-runs an ``idempotent`` / ``replay_safe`` one.
    Give the application ``tools=durable.tools`` so recovery knows every tool."""

    def __init__(
        self,
        agent: Agent[Any, OutputT],
        *,
        tools: Mapping[str, ToolPolicy | str] | None = None,
        deps: Any = None,
        history_turns: int | None = None,
    ) -> None:
        if agent.model is None:
            raise TypeError("DurableAgent needs an agent built with a model")
        self.agent = agent
        self.model: Model = infer_model(agent.model)
        self.deps = deps
        self.history_turns = history_turns
        policies = {name: _policy(name, policy) for name, policy in (tools or {}).items()}
        names = [*self._function_tool_names(), *policies]
        self.tools: list[Tool[Any]] = [
            _journal_tool(name, policies.get(name, ToolPolicy()), self._recovery_call)
            for name in dict.fromkeys(names)
        ]

    def open(
        self, store: str, *, cwd: Path | str, host_config: HostConfig | None = None, **kw: Any
    ) -> RuntimeApplication:
        """The host's application on ``store`` (a SQLite path or a PostgreSQL URL) with this
        agent's tools as its catalogue (recovery must know every tool), the host config (by
        default: this model's name, the workspace ``cwd``) and safe-boundary resume on."""
        config = host_config or HostConfig(
            backend_kind="ai-sdk",
            llm_connection_slug="pydantic-ai",
            model_id=self.model.model_name,
            permission_mode="ask",
            cwd=str(cwd),
        )
        kw.setdefault("safe_boundary_resume", True)
        return RuntimeApplication.open(store, tools=self.tools, host_config=config, **kw)

    def _function_tool_names(self) -> list[str]:
        """The names of the agent's function tools (other toolsets' tools: declare them)."""
        names: list[str] = []
        for toolset in self.agent.toolsets:
            tools = getattr(toolset, "tools", None)  # a FunctionToolset's name -> Tool
            if isinstance(tools, Mapping):
                names.extend(str(name) for name in tools)
        return names

    async def system_parts(self, deps: Any = None) -> list[SystemPromptPart]:
        """The agent's system prompt as this run builds it (Pydantic AI adds it only to an
        empty history): one offline run whose model reads its first request and stops."""
        captured: list[SystemPromptPart] = []

        def capture(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            first = messages[0]
            if isinstance(first, ModelRequest):
                captured.extend(p for p in first.parts if isinstance(p, SystemPromptPart))
            raise _SystemPromptReadError()

        reader = FunctionModel(capture)
        with (
            contextlib.suppress(_SystemPromptReadError),
            self.agent.override(model=reader, toolsets=[], tools=[]),
        ):
            await self.agent.run("", deps=deps)
        return captured

    def _recovery_call(self, name: str, args: dict[str, Any], context: ToolContext) -> Any:
        """``recover()`` re-runs a retry-safe tool outside any agent run: the agent's own
        toolset, its own argument validation, a run context with the recovery ``deps``."""

        async def call() -> Any:
            ctx = RunContext[Any](
                deps=self.deps,
                model=self.model,
                usage=RunUsage(),
                tool_call_id=context.tool_call_id,
                tool_name=name,
            )
            for toolset in self.agent.toolsets:
                async with toolset:
                    found = (await toolset.get_tools(ctx)).get(name)
                    if found is not None:
                        valid = found.args_validator.validate_python(args)
                        return await toolset.call_tool(name, valid, ctx, found)
            raise LookupError(f"the agent has no tool {name!r}")

        return _run_blocking(call())

    # -- the verbs -----------------------------------------------------------------------------

    def _runner(self, deps: Any, options: Mapping[str, Any]) -> AgentBody:
        async def body(agent: Agent[Any, Any], messages: list[ModelMessage]) -> Any:
            return await agent.run(None, message_history=messages, deps=deps, **options)

        return body

    def run_sync(
        self,
        app: RuntimeApplication,
        session_id: str,
        prompt: str,
        *,
        deps: Any = None,
        run_id: str | None = None,
        **options: Any,
    ) -> DurableTurn[OutputT]:
        """One turn (``Agent.run_sync``): the run and its prompt in one save, the agent to its
        output, the terminal. Refused (``turn_session_unfinished``) beside an unfinished turn:
        ``resume_sync`` first. ``options`` go to ``Agent.run`` (``model_settings``, ...)."""
        step = AgentStep(self, app, self._runner(deps, options), None, deps)
        return self._turn(app, session_id, prompt, step, run_id)

    async def run(
        self,
        app: RuntimeApplication,
        session_id: str,
        prompt: str,
        *,
        deps: Any = None,
        run_id: str | None = None,
        **options: Any,
    ) -> DurableTurn[OutputT]:
        """``run_sync`` from asyncio (``Agent.run``): the agent and its tools run on this
        event loop, the store commands in a worker thread."""
        step = AgentStep(self, app, self._runner(deps, options), asyncio.get_running_loop(), deps)
        return await asyncio.to_thread(self._turn, app, session_id, prompt, step, run_id)

    def _turn(
        self,
        app: RuntimeApplication,
        session_id: str,
        prompt: str,
        step: AgentStep,
        run_id: str | None,
    ) -> DurableTurn[OutputT]:
        turn = app.run_turn(
            session_id, prompt, step, run_id=run_id, history_turns=self.history_turns
        )
        return DurableTurn(turn, self._result_of(step))

    @staticmethod
    def _result_of(step: AgentStep) -> Any:
        binding = step.binding
        error = None if binding is None else binding.error
        if error is not None and not _left_open(error):
            raise error
        return None if binding is None else binding.result

    def resume_sync(
        self, app: RuntimeApplication, session_id: str, *, deps: Any = None, **options: Any
    ) -> DurableResume[OutputT]:
        """After ``app.recover()``: continue the session's interrupted turn from its committed
        boundary (the agent runs again with the replayed history, no new prompt), or return the
        park with its reasons and operator commands (``maka-es attest`` / ``fork``)."""
        step = AgentStep(self, app, self._runner(deps, options), None, deps)
        return self._resume(app, session_id, step)

    async def resume(
        self, app: RuntimeApplication, session_id: str, *, deps: Any = None, **options: Any
    ) -> DurableResume[OutputT]:
        """``resume_sync`` from asyncio."""
        step = AgentStep(self, app, self._runner(deps, options), asyncio.get_running_loop(), deps)
        return await asyncio.to_thread(self._resume, app, session_id, step)

    def _resume(
        self, app: RuntimeApplication, session_id: str, step: AgentStep
    ) -> DurableResume[OutputT]:
        resumed = app.resume(session_id, step, history_turns=self.history_turns)
        commands = resumed.operator_commands
        if resumed.status == "parked" and not commands and resumed.run_id is not None:
            commands = _gap_fork(app, resumed.run_id)
        return DurableResume(resumed, self._result_of(step), commands)

    @contextlib.asynccontextmanager
    async def run_stream(
        self,
        app: RuntimeApplication,
        session_id: str,
        prompt: str,
        *,
        deps: Any = None,
        run_id: str | None = None,
        **options: Any,
    ) -> AsyncIterator[DurableStream[Any]]:
        """A streamed turn (``Agent.run_stream``): ``.run`` is the ``StreamedRunResult``.
        The streamed response is recorded when its stream closes (a partial stream is never
        recorded part by part); the turn ends when the block exits, ``failed`` when the run
        was left before its end (``agent_run_left_open``; ``resume`` continues it)."""

        def enter(agent: Agent[Any, Any], messages: list[ModelMessage], kw: dict[str, Any]) -> Any:
            return agent.run_stream(None, message_history=messages, **kw)

        async with self._handed(app, session_id, prompt, enter, deps, run_id, options) as run:
            yield run

    @contextlib.asynccontextmanager
    async def iter(
        self,
        app: RuntimeApplication,
        session_id: str,
        prompt: str,
        *,
        deps: Any = None,
        run_id: str | None = None,
        **options: Any,
    ) -> AsyncIterator[DurableStream[Any]]:
        """A turn node by node (``Agent.iter``): ``.run`` is the ``AgentRun`` to iterate. A
        block left before the run's ``End`` ends the turn ``failed`` (``agent_run_left_open``):
        ``resume`` continues it."""

        def enter(agent: Agent[Any, Any], messages: list[ModelMessage], kw: dict[str, Any]) -> Any:
            return agent.iter(None, message_history=messages, **kw)

        async with self._handed(app, session_id, prompt, enter, deps, run_id, options) as run:
            yield run

    @contextlib.asynccontextmanager
    async def _handed(
        self,
        app: RuntimeApplication,
        session_id: str,
        prompt: str,
        enter: Callable[..., Any],
        deps: Any,
        run_id: str | None,
        options: Mapping[str, Any],
    ) -> AsyncIterator[DurableStream[Any]]:
        """The turn runs in a worker thread; the framework's context is entered on this loop
        and handed to the caller's block; the run ends after the block exits."""
        loop = asyncio.get_running_loop()
        handed: asyncio.Future[Any] = loop.create_future()
        released = asyncio.Event()

        async def body(agent: Agent[Any, Any], messages: list[ModelMessage]) -> Any:
            async with enter(agent, messages, {"deps": deps, **options}) as run:
                handed.set_result(run)
                await released.wait()
                if isinstance(run, StreamedRunResult):
                    finished, result = run.is_complete, None
                else:
                    finished, result = run.result is not None, run.result
            if not finished:
                message = "the run_stream / iter block exited before the agent's run ended"
                raise MakaError(message, code="agent_run_left_open")  # RUN_LEFT_OPEN
            return result

        step = AgentStep(self, app, body, loop, deps)
        task = asyncio.ensure_future(
            asyncio.to_thread(self._turn, app, session_id, prompt, step, run_id)
        )
        await asyncio.wait({handed, task}, return_when=asyncio.FIRST_COMPLETED)
        if not handed.done():
            await task  # the turn ended (or was refused) before the agent started
            raise RuntimeError("the turn ended before the agent started")
        held = DurableStream(handed.result())
        try:
            yield held
        finally:
            released.set()
            held.turn = (await task).turn
