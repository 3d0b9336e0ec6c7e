"""An asyncio facade over :class:`~maka_es.app.RuntimeApplication`, for async agent stacks.

Why a facade and not a second application: the rules live once, in the synchronous services
(ADR 0017); an async host (the OpenAI or Anthropic async clients, Pydantic AI, LangGraph) needs
three guarantees from them, and this module gives exactly those:

* **The event loop is never blocked by store I/O.** Every command and read runs in a worker
  thread; the loop keeps serving other coroutines while SQLite fsyncs.
* **One writer at a time, and only store commands are serialised.** A command goes through an
  :class:`asyncio.Lock` of the facade and then through ONE dedicated writer thread, so two
  coroutines never interleave a read-decide-save (the single writer keeps commands in the
  order coroutines took the lock, and a cancelled caller cannot let a second command start
  while its own is still running in the thread); inside, the command holds the store's command
  lock, the lock every command of the process takes. Reads (``read_run_events``,
  ``plan_resume``, ``plan_continuation``, ...) run in the default thread pool without the
  lock: they only load committed facts (docs/reference/ledger.md#write-rules).
* **A model call or a tool of one conversation never blocks another conversation.** A
  *conversation* (``run_turn``, ``resume``, ``execute_continuation``, ``execute_fork``,
  ``execute_tool``) is not one command: it runs in a thread of its own (a pool of
  ``conversation_threads``), outside the facade's lock and the writer. Its store commands
  (revalidation and the claim as one, each recorded model turn, T1, T2, the terminal) each take
  the store's command lock for themselves, one writer at a time with every other command; the
  provider call and the tool hold no lock (docs/reference/continuation.md#agent-loop).

Async providers and tools: an :class:`AsyncProvider` is called by the synchronous agent loop
through :class:`LoopProvider`, which submits its coroutine back to the facade's event loop with
:func:`asyncio.run_coroutine_threadsafe` and waits in the conversation's thread; the provider's
HTTP client runs on the loop it was created for, and an exception it raises reaches the
executor unchanged and is committed as the run's failure. :func:`async_tool` does the same
for a tool implementation (outside the facade, e.g. startup recovery called synchronously, the
coroutine runs in a private event loop of the calling thread); a sync tool runs in the
conversation's thread. Either may await the facade's commands and reads.

``recover`` is one command (startup recovery, before conversations start): a tool it
re-executes or reconciles runs inside it.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from maka_es.aio.bridge import (
    DEFAULT_CONVERSATION_THREADS,
    FACADE_LOOP,
    AsyncProvider,
    Conversations,
    LoopProvider,
    async_tool,
)
from maka_es.aio.services import (
    AsyncClaims,
    AsyncLedger,
    AsyncOwnership,
    AsyncRunStarts,
    AsyncToolJournal,
)
from maka_es.app import RuntimeApplication
from maka_es.app_api import EventInput
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.planner import PlannerSettings
from maka_es.continuation.turns import TurnResult
from maka_es.ledger.model.host_config import HostConfig
from maka_es.ledger.model.ownership import HostLease
from maka_es.ledger.service import SessionInfo
from maka_es.recovery.operator_actions import AttestationOutcome, EndRunOutcome, ForkOutcome
from maka_es.recovery.session_resume import ResumeResult
from maka_es.recovery.startup import StartupRecoveryOutcome
from maka_es.resume.models import ResumePlan
from maka_es.tooljournal.model.tools import ToolResult
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = ["AsyncProvider", "AsyncRuntimeApplication", "LoopProvider", "async_tool"]

T = TypeVar("T")


class AsyncRuntimeApplication:
    """The async surface of one :class:`RuntimeApplication` (see module docstring): every
    public verb of the application, as a coroutine (``now_ms`` stays a plain call), and its
    plumbing on the same service attributes (``ledger``, ``run_starts``, ``tool_journal``,
    ``claims``, ``ownership``; ADR 0039).

    Use one facade per application and per event loop; :meth:`close` (or ``async with``) waits
    for the conversations in flight, stops the writer thread and closes the application.
    """

    def __init__(
        self, app: RuntimeApplication, *, conversation_threads: int = DEFAULT_CONVERSATION_THREADS
    ) -> None:
        self.app = app
        self._write_lock = asyncio.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maka-es-writer")
        self._conversations = Conversations(conversation_threads)
        #: The application's service attributes, as coroutines (``maka_es.aio.services``).
        self.ledger = AsyncLedger(app.ledger, self._write, self._read)
        self.run_starts = AsyncRunStarts(app.run_starts, self._write, self._read)
        self.tool_journal = AsyncToolJournal(app.tool_journal, self._write, self._read)
        self.claims = AsyncClaims(app.claims, self._write, self._read)
        self.ownership = AsyncOwnership(app.ownership, self._write, self._read)

    async def __aenter__(self) -> AsyncRuntimeApplication:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Wait for the conversations in flight (a cancelled caller's keeps running in its
        thread) and the writer, then close the application (in a worker thread)."""
        await self._conversations.drain()
        async with self._write_lock:
            await self._in_thread(self._writer, self.app.close)
        self._writer.shutdown(wait=True)
        self._conversations.shutdown()

    # -- the three ways in ----------------------------------------------------------------------

    async def _in_thread(self, executor: ThreadPoolExecutor | None, call: Callable[[], T]) -> T:
        """``call`` in a worker thread that knows this loop (for async tools)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        context.run(FACADE_LOOP.set, loop)
        return await loop.run_in_executor(executor, functools.partial(context.run, call))

    async def _write(self, call: Callable[[], T]) -> T:
        """A command: the facade's lock, then the single writer thread."""
        async with self._write_lock:
            return await self._in_thread(self._writer, call)

    async def _read(self, call: Callable[[], T]) -> T:
        """A read: the default thread pool, no lock (reads load committed facts only)."""
        return await self._in_thread(None, call)

    async def _converse(self, call: Callable[[], T]) -> T:
        """A conversation: neither the facade's lock nor the writer (``Conversations``)."""
        return await self._conversations.run(call)

    # -- turns (ADR 0036) -----------------------------------------------------------------------

    async def run_turn(
        self,
        session_id: str,
        prompt: str,
        provider: AsyncProvider,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        system_prompt: str | None = None,
        step_limit: int | None = None,
        history_turns: int | None = None,
    ) -> TurnResult:
        """``RuntimeApplication.run_turn`` as a conversation, ``provider`` (an async one such
        as ``AsyncOpenAIChatProvider``) awaited on this loop (:class:`LoopProvider`): the
        refusal check and the run with its user message are one command, each step of the
        loop its own, the model call and the tools none."""
        bridge = LoopProvider(provider, asyncio.get_running_loop())
        return await self._converse(
            lambda: self.app.run_turn(
                session_id,
                prompt,
                bridge,
                run_id=run_id,
                invocation_id=invocation_id,
                turn_id=turn_id,
                system_prompt=system_prompt,
                step_limit=step_limit,
                history_turns=history_turns,
            )
        )

    async def resume(
        self,
        session_id: str,
        provider: AsyncProvider,
        *,
        system_prompt: str | None = None,
        step_limit: int | None = None,
        history_turns: int | None = None,
    ) -> ResumeResult:
        """``RuntimeApplication.resume`` as a conversation: the continuation (or pending fork)
        it executes runs as ``execute_continuation`` does, ``provider`` awaited on this loop."""
        bridge = LoopProvider(provider, asyncio.get_running_loop())
        return await self._converse(
            lambda: self.app.resume(
                session_id,
                bridge,
                system_prompt=system_prompt,
                step_limit=step_limit,
                history_turns=history_turns,
            )
        )

    # -- sessions and runs ----------------------------------------------------------------------

    async def open_session(
        self, session_id: str, cwd: str | None = None, workspace_identity: str | None = None
    ) -> SessionInfo:
        """``RuntimeApplication.open_session`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
        return await self._write(lambda: self.app.open_session(session_id, cwd, workspace_identity))

    async def start_run(
        self,
        session_id: str,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        config: HostConfig | None = None,
    ) -> RunHeader:
        """``RuntimeApplication.start_run`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
        return await self._write(
            lambda: self.app.start_run(
                session_id,
                run_id=run_id,
                invocation_id=invocation_id,
                turn_id=turn_id,
                config=config,
            )
        )

    async def get_session(self, session_id: str) -> SessionInfo:
        """``RuntimeApplication.get_session`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
        return await self._read(lambda: self.app.get_session(session_id))

    async def list_sessions(self) -> list[str]:
        """``RuntimeApplication.list_sessions`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(self.app.list_sessions)

    async def get_run_header(self, run_id: str) -> RunHeader:
        """``RuntimeApplication.get_run_header`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self.app.get_run_header(run_id))

    async def list_runs(self, session_id: str) -> list[RunHeader]:
        """``RuntimeApplication.list_runs`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
        return await self._read(lambda: self.app.list_runs(session_id))

    async def run_exists(self, run_id: str) -> bool:
        """``RuntimeApplication.run_exists`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
        return await self._read(lambda: self.app.run_exists(run_id))

    async def end_run(self, run_id: str, terminal: EventInput) -> RunHeader:
        """``RuntimeApplication.end_run`` as a coroutine, off the event loop (same parameters, same
        refusals)."""
        return await self._write(lambda: self.app.end_run(run_id, terminal))

    async def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        """``RuntimeApplication.read_run_events`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self.app.read_run_events(run_id))

    def now_ms(self) -> int:
        """The application's clock (no I/O, so no coroutine)."""
        return self.app.now_ms()

    # -- run ownership --------------------------------------------------------------------------

    async def heartbeat(self) -> HostLease:
        """Renew this host's lease (one save; ADR 0021)."""
        return await self._write(self.app.heartbeat)

    # -- tools ----------------------------------------------------------------------------------

    async def execute_tool(self, run_id: str, call: EventInput) -> ToolResult:
        """Run one function_call through the application's ToolRuntime (T1, the tool, T2) as a
        conversation: T1 and T2 are commands, the tool runs outside every lock."""
        return await self._converse(lambda: self.app.tool_runtime.execute(run_id, call))

    # -- operator actions (ADR 0022) ------------------------------------------------------------

    async def attest_operation(
        self,
        run_id: str,
        operation_id: str,
        *,
        applied: bool,
        result: Any = None,
        actor: str,
        note: str = "",
    ) -> AttestationOutcome:
        """``RuntimeApplication.attest_operation`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._write(
            lambda: self.app.attest_operation(
                run_id, operation_id, applied=applied, result=result, actor=actor, note=note
            )
        )

    async def fork_run(
        self, run_id: str, *, before_operation: str, actor: str, note: str = ""
    ) -> ForkOutcome:
        """``RuntimeApplication.fork_run`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
        return await self._write(
            lambda: self.app.fork_run(
                run_id, before_operation=before_operation, actor=actor, note=note
            )
        )

    async def execute_fork(
        self,
        fork_run_id: str,
        provider: AsyncProvider,
        *,
        system_prompt: str | None = None,
        history_turns: int | None = None,
    ) -> ContinuationOutcome:
        """``RuntimeApplication.execute_fork`` as a conversation, ``provider`` awaited on this
        loop (:class:`LoopProvider`)."""
        bridge = LoopProvider(provider, asyncio.get_running_loop())
        return await self._converse(
            lambda: self.app.execute_fork(
                fork_run_id, bridge, system_prompt=system_prompt, history_turns=history_turns
            )
        )

    # -- resume, continuation, recovery ---------------------------------------------------------

    async def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        """``RuntimeApplication.plan_resume`` as a coroutine, off the event loop (same parameters,
        same refusals)."""
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
        """``RuntimeApplication.plan_continuation`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
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
        history_turns: int | None = None,
    ) -> ContinuationOutcome:
        """``RuntimeApplication.execute_continuation`` as a conversation, ``provider`` awaited
        on this loop (:class:`LoopProvider`); revalidation and the claim are one command, each
        step of the loop its own, the model call and the tools none."""
        bridge = LoopProvider(provider, asyncio.get_running_loop())
        return await self._converse(
            lambda: self.app.execute_continuation(
                plan,
                bridge,
                current_cwd=current_cwd,
                settings=settings,
                system_prompt=system_prompt,
                step_limit=step_limit,
                history_turns=history_turns,
            )
        )

    async def end_start_only_run(self, run_id: str) -> EndRunOutcome:
        """End a start-only continuation or fork whose process is gone (ADR 0035), as a
        command."""
        return await self._write(lambda: self.app.end_start_only_run(run_id))

    async def recover(
        self, *, tool_runtime: ToolRuntime | None = None, end_start_only_continuations: bool = True
    ) -> StartupRecoveryOutcome:
        """Startup recovery (docs/reference/continuation.md#startup-recovery), as a command."""
        return await self._write(
            lambda: self.app.recover(
                tool_runtime=tool_runtime, end_start_only_continuations=end_start_only_continuations
            )
        )
