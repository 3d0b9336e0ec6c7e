"""An asyncio facade over :class:`~maka_es.app.RuntimeApplication`, for async agent stacks.

Why a facade and not a second application: the rules live once, in the synchronous services
(ADR 0017); an async host (the OpenAI or Anthropic async clients, Pydantic AI, LangGraph) needs
only two guarantees from them, and this module gives exactly those:

* **The event loop is never blocked by store I/O.** Every command and read runs in a worker
  thread; the loop keeps serving other coroutines while SQLite fsyncs.
* **One writer at a time.** Commands go through an :class:`asyncio.Lock` of the facade and then
  through ONE dedicated writer thread, so two coroutines never interleave a read-decide-save
  (the store's own lock already serialises threads; the single writer keeps commands in the
  order coroutines took the lock, and a cancelled caller cannot let a second command start
  while its own is still running in the thread). Reads (``read_run_events``, ``plan_resume``,
  ``plan_continuation``, ...) run in the default thread pool without the lock: they only load
  committed facts (docs/reference/ledger.md#write-rules).

Async providers and tools: the continuation executor is synchronous and runs in the writer
thread, holding the store's command lock for the whole agent loop
(docs/reference/continuation.md#agent-loop). An :class:`AsyncProvider` is called from there
through a sync adapter that submits its coroutine back to the facade's event loop with
:func:`asyncio.run_coroutine_threadsafe` and waits for the answer, so the provider's HTTP
client runs on the loop it was created for while the writer thread waits; an exception it
raises reaches the executor unchanged and is committed as the run's failure. :func:`async_tool`
does the same for a tool implementation (outside the facade, e.g. startup recovery called
synchronously, the coroutine runs in a private event loop of the calling thread).

Consequence a host must respect: while a continuation or a tool call is in flight, an async
provider or tool must not await a *command* of the same facade (it would wait for the writer
it is running inside); reads are fine.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from maka_es.app import RuntimeApplication
from maka_es.app_api import EventInput
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.gates import ContinuationPlan
from maka_es.continuation.planner import PlannerSettings
from maka_es.continuation.provider import ProviderRequest, ProviderTurn
from maka_es.ledger.ownership import HostLease
from maka_es.ledger.service import AppendResult, SessionInfo
from maka_es.ledger.tool_commands import ToolCommit
from maka_es.recovery.report import StartupRecoveryReport
from maka_es.resume.models import ResumePlan
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.tools import Reconciler, Tool, ToolContext, ToolResult
from maka_es.wire.events import RuntimeEvent, ToolRecoveryMode
from maka_es.wire.run_header import RunHeader

__all__ = ["AsyncProvider", "AsyncRuntimeApplication", "LoopProvider", "async_tool"]

T = TypeVar("T")
ArgsT = TypeVar("ArgsT", bound=BaseModel)

#: The event loop of the facade call that is running in this worker thread, if any.
_FACADE_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "maka_es_facade_loop", default=None
)


@runtime_checkable
class AsyncProvider(Protocol):
    """A model provider with an async client: one request in, one turn out (or an exception,
    which the continuation commits as the run's failure)."""

    async def complete(self, request: ProviderRequest) -> ProviderTurn: ...


def _call_on_loop(loop: asyncio.AbstractEventLoop, coroutine: Awaitable[T]) -> T:
    """Run ``coroutine`` on ``loop`` from a worker thread and wait for its result."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("an async provider or tool was called on its own event loop thread")

    async def wrapped() -> T:
        return await coroutine

    return asyncio.run_coroutine_threadsafe(wrapped(), loop).result()


class LoopProvider:
    """The sync :class:`~maka_es.continuation.provider.Provider` the executor calls: each
    ``complete`` submits the async provider's coroutine to ``loop`` and waits in the calling
    (worker) thread, never on the loop itself."""

    def __init__(self, provider: AsyncProvider, loop: asyncio.AbstractEventLoop) -> None:
        self.provider = provider
        self.loop = loop

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        return _call_on_loop(self.loop, self.provider.complete(request))


def async_tool(
    name: str,
    input_model: type[ArgsT],
    run: Callable[[ArgsT, ToolContext], Awaitable[Any]],
    *,
    recovery_mode: ToolRecoveryMode = "never_auto_retry",
    reconciler: Reconciler[ArgsT] | None = None,
) -> Tool[ArgsT]:
    """A :class:`Tool` whose implementation is a coroutine function.

    The ToolRuntime still brackets it with T1 and T2 in the writer thread; the coroutine runs
    on the facade's loop (or, called outside the facade, in a private loop of the calling
    thread), so it may use the host's async clients.
    """

    def run_sync(args: ArgsT, context: ToolContext) -> Any:
        loop = _FACADE_LOOP.get()
        if loop is None:
            return asyncio.run(_awaited(run(args, context)))
        return _call_on_loop(loop, run(args, context))

    return Tool(
        name=name,
        input_model=input_model,
        run=run_sync,
        recovery_mode=recovery_mode,
        reconciler=reconciler,
    )


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


class AsyncRuntimeApplication:
    """The async surface of one :class:`RuntimeApplication` (see module docstring).

    Use one facade per application and per event loop; :meth:`close` (or ``async with``) stops
    the writer thread and closes the application.
    """

    def __init__(self, app: RuntimeApplication) -> None:
        self.app = app
        self._write_lock = asyncio.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maka-es-writer")

    async def __aenter__(self) -> AsyncRuntimeApplication:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Wait for the writer to finish, then close the application (in a worker thread)."""
        async with self._write_lock:
            await self._in_thread(self._writer, self.app.close)
        self._writer.shutdown(wait=True)

    # -- the two ways in ------------------------------------------------------------------------

    async def _in_thread(self, executor: ThreadPoolExecutor | None, call: Callable[[], T]) -> T:
        """``call`` in a worker thread that knows this loop (for async tools)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        context.run(_FACADE_LOOP.set, loop)
        return await loop.run_in_executor(executor, functools.partial(context.run, call))

    async def _write(self, call: Callable[[], T]) -> T:
        """A command: the facade's lock, then the single writer thread."""
        async with self._write_lock:
            return await self._in_thread(self._writer, call)

    async def _read(self, call: Callable[[], T]) -> T:
        """A read: the default thread pool, no lock (reads load committed facts only)."""
        return await self._in_thread(None, call)

    # -- sessions and runs ----------------------------------------------------------------------

    async def open_session(
        self, session_id: str, cwd: str, workspace_identity: str | None = None
    ) -> SessionInfo:
        return await self._write(lambda: self.app.open_session(session_id, cwd, workspace_identity))

    async def get_session(self, session_id: str) -> SessionInfo:
        return await self._read(lambda: self.app.get_session(session_id))

    async def create_run(self, header: RunHeader | Mapping[str, Any]) -> RunHeader:
        return await self._write(lambda: self.app.create_run(header))

    async def get_run_header(self, run_id: str) -> RunHeader:
        return await self._read(lambda: self.app.get_run_header(run_id))

    async def list_runs(self, session_id: str) -> list[RunHeader]:
        return await self._read(lambda: self.app.list_runs(session_id))

    async def append_events(
        self, run_id: str, events: Iterable[EventInput], *, expected_high_water: int | None = None
    ) -> AppendResult:
        batch = list(events)
        return await self._write(
            lambda: self.app.append_events(run_id, batch, expected_high_water=expected_high_water)
        )

    async def update_run_header(self, run_id: str, patch: Mapping[str, Any]) -> RunHeader:
        return await self._write(lambda: self.app.update_run_header(run_id, patch))

    async def end_run(self, run_id: str, terminal: EventInput) -> RunHeader:
        return await self._write(lambda: self.app.end_run(run_id, terminal))

    async def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        return await self._read(lambda: self.app.read_run_events(run_id))

    async def run_high_water(self, run_id: str) -> int:
        return await self._read(lambda: self.app.run_high_water(run_id))

    async def heartbeat(self) -> HostLease:
        """Renew this host's lease (one save; ADR 0021)."""
        return await self._write(self.app.heartbeat)

    # -- tools ----------------------------------------------------------------------------------

    async def execute_tool(self, run_id: str, call: EventInput) -> ToolResult:
        """Run one function_call through the application's ToolRuntime (T1, the tool, T2)."""
        return await self._write(lambda: self.app.tool_runtime.execute(run_id, call))

    async def commit_tool_prepared(
        self, run_id: str, call: EventInput, *, recovery_mode: str = "never_auto_retry"
    ) -> ToolCommit:
        return await self._write(
            lambda: self.app.commit_tool_prepared(run_id, call, recovery_mode=recovery_mode)
        )

    async def commit_tool_outcome(self, run_id: str, response: EventInput) -> ToolCommit:
        return await self._write(lambda: self.app.commit_tool_outcome(run_id, response))

    async def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        return await self._read(lambda: self.app.tool_operations(run_id))

    # -- resume, continuation, recovery ---------------------------------------------------------

    async def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        return await self._read(lambda: self.app.plan_resume(run_id, expected_high_water))

    async def plan_continuation(
        self,
        session_id: str,
        source_run_id: str | None = None,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        expected_high_water: int | None = None,
    ) -> ContinuationPlan:
        return await self._read(
            lambda: self.app.plan_continuation(
                session_id,
                source_run_id,
                current_cwd=current_cwd,
                settings=settings,
                expected_high_water=expected_high_water,
            )
        )

    async def execute_continuation(
        self,
        plan: ContinuationPlan,
        provider: AsyncProvider,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        system_prompt: str | None = None,
        step_limit: int | None = None,
    ) -> ContinuationOutcome:
        """The sync executor in the writer thread, with ``provider`` awaited on this loop
        (:class:`LoopProvider`); same contract as ``RuntimeApplication.execute_continuation``."""
        bridge = LoopProvider(provider, asyncio.get_running_loop())
        return await self._write(
            lambda: self.app.execute_continuation(
                plan,
                bridge,
                current_cwd=current_cwd,
                settings=settings,
                system_prompt=system_prompt,
                step_limit=step_limit,
            )
        )

    async def recover(self, *, end_start_only_continuations: bool = True) -> StartupRecoveryReport:
        """Startup recovery (docs/reference/continuation.md#startup-recovery), as a command."""
        return await self._write(
            lambda: self.app.recover(end_start_only_continuations=end_start_only_continuations)
        )

    async def all_run_ids(self) -> Sequence[str]:
        return await self._read(self.app.all_run_ids)
