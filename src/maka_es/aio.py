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
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from maka_es.app import RuntimeApplication, ToolJournalService
from maka_es.app_api import EventInput
from maka_es.continuation.claims import Claims, ContinuationClaim
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.service import PlannerSettings
from maka_es.continuation.turns import TurnResult
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.model.facts import StartKind, StoredFact
from maka_es.ledger.model.host_config import HostConfig
from maka_es.ledger.model.ownership import HostLease
from maka_es.ledger.service import AppendResult, Ledger, RunStarts, SessionInfo, ToolCommit
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.recovery.operator_actions import AttestationOutcome, EndRunOutcome, ForkOutcome
from maka_es.recovery.session_resume import ResumeResult
from maka_es.recovery.startup import StartupRecoveryOutcome
from maka_es.resume.models import ResumePlan
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.resolver import Resolution
from maka_es.tooljournal.model.tools import Reconciler, Tool, ToolContext, ToolResult
from maka_es.tooljournal.runtime import ToolRuntime
from maka_es.wire.events import RuntimeEvent, ToolRecoveryMode
from maka_es.wire.run_header import RunHeader

__all__ = [
    "AsyncClaims",
    "AsyncLedger",
    "AsyncOwnership",
    "AsyncProvider",
    "AsyncRunStarts",
    "AsyncRuntimeApplication",
    "AsyncToolJournal",
    "Conversations",
    "DEFAULT_CONVERSATION_THREADS",
    "FACADE_LOOP",
    "LoopProvider",
    "async_tool",
]


T = TypeVar("T")
ArgsT = TypeVar("ArgsT", bound=BaseModel)

#: The event loop of the facade call that is running in this worker thread, if any.
FACADE_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
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
    """The sync :class:`~maka_es.providers.protocol.Provider` the executor calls: each
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

    The ToolRuntime still brackets it with T1 and T2 (commands); the coroutine runs on the
    facade's loop, outside every lock (or, called outside the facade, in a private loop of
    the calling thread), so it may use the host's async clients.
    """

    def run_sync(args: ArgsT, context: ToolContext) -> Any:
        loop = FACADE_LOOP.get()
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


#: Conversations (continuations, forks, tool calls) a facade runs at once by default; one more
#: waits for a thread, never for another conversation's model call to hold a lock.
DEFAULT_CONVERSATION_THREADS = 64


class Conversations:
    """The threads conversations run in: each its own, outside the facade's lock and writer;
    their commands take the store's command lock one at a time (``maka_es.aio``)."""

    def __init__(self, threads: int) -> None:
        self._pool = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="maka-es-conversation"
        )
        self._in_flight: set[Future[Any]] = set()

    async def run(self, call: Callable[[], T]) -> T:
        """``call`` in a conversation thread that knows this loop (for async tools)."""
        context = contextvars.copy_context()
        context.run(FACADE_LOOP.set, asyncio.get_running_loop())
        future = self._pool.submit(context.run, call)
        self._in_flight.add(future)
        future.add_done_callback(self._in_flight.discard)
        return await asyncio.wrap_future(future)

    async def drain(self) -> None:
        """Wait for every conversation in flight (a cancelled caller's keeps running)."""
        while self._in_flight:
            pending = [asyncio.wrap_future(future) for future in list(self._in_flight)]
            await asyncio.gather(*pending, return_exceptions=True)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


class Runner(Protocol):
    """One of the facade's ways in: a command (lock, writer) or a read (thread pool)."""

    def __call__(self, call: Callable[[], T], /) -> Awaitable[T]: ...


class _Async:
    def __init__(self, write: Runner, read: Runner) -> None:
        self._write = write
        self._read = read


class AsyncLedger(_Async):
    """``RuntimeApplication.ledger`` as coroutines: raw appends, creating and importing runs,
    header patches and the reads of raw payloads and high-water marks."""

    def __init__(self, ledger: Ledger, write: Runner, read: Runner) -> None:
        super().__init__(write, read)
        self._ledger = ledger

    async def append_events(
        self, run_id: str, events: Iterable[EventInput], *, expected_high_water: int | None = None
    ) -> AppendResult:
        """``RuntimeApplication.ledger.append_events`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        batch = list(events)
        return await self._write(
            lambda: self._ledger.append_events(
                run_id, batch, expected_high_water=expected_high_water
            )
        )

    async def append_event(
        self, run_id: str, event: EventInput, *, expected_high_water: int | None = None
    ) -> AppendResult:
        """``RuntimeApplication.ledger.append_event`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._write(
            lambda: self._ledger.append_event(
                run_id, event, expected_high_water=expected_high_water
            )
        )

    async def create_run(
        self, header: RunHeader | Mapping[str, Any], *, clock_fields: Collection[str] = ()
    ) -> RunHeader:
        """``RuntimeApplication.ledger.create_run`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._write(lambda: self._ledger.create_run(header, clock_fields=clock_fields))

    async def import_run(
        self, header: RunHeader | Mapping[str, Any], events: Sequence[EventInput]
    ) -> AppendResult:
        """``RuntimeApplication.ledger.import_run`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        batch = list(events)
        return await self._write(lambda: self._ledger.import_run(header, batch))

    async def update_run_header(self, run_id: str, patch: Mapping[str, Any]) -> RunHeader:
        """``RuntimeApplication.ledger.update_run_header`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._write(lambda: self._ledger.update_run_header(run_id, patch))

    async def run_high_water(self, run_id: str) -> int:
        """``RuntimeApplication.ledger.run_high_water`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self._ledger.run_high_water(run_id))

    async def read_run_payloads(self, run_id: str) -> list[str]:
        """``RuntimeApplication.ledger.read_run_payloads`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self._ledger.read_run_payloads(run_id))

    async def all_run_ids(self) -> list[str]:
        """``RuntimeApplication.ledger.all_run_ids`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(self._ledger.all_run_ids)

    async def list_all_runs(self) -> list[RunHeader]:
        """``RuntimeApplication.ledger.list_all_runs`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(self._ledger.list_all_runs)


class AsyncRunStarts(_Async):
    """``RuntimeApplication.run_starts`` as a coroutine (a run with its first events)."""

    def __init__(self, run_starts: RunStarts, write: Runner, read: Runner) -> None:
        super().__init__(write, read)
        self._run_starts = run_starts

    async def create_run_with_events(
        self,
        header: RunHeader | Mapping[str, Any],
        events: Sequence[EventInput],
        *,
        clock_fields: Collection[str] = (),
    ) -> AppendResult:
        """A run with its first events (a turn's user message) in one save, as a command."""
        batch = list(events)
        return await self._write(
            lambda: self._run_starts.create_run_with_events(
                header, batch, clock_fields=clock_fields
            )
        )


class AsyncToolJournal(_Async):
    """``RuntimeApplication.tool_journal`` as coroutines (T1, T2, bundles and their reads)."""

    def __init__(self, journal: ToolJournalService, write: Runner, read: Runner) -> None:
        super().__init__(write, read)
        self._journal = journal

    async def commit_tool_prepared(
        self,
        run_id: str,
        call: EventInput,
        *,
        recovery_mode: str = "never_auto_retry",
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        """``RuntimeApplication.tool_journal.commit_tool_prepared`` as a coroutine, off the event
        loop (same parameters, same refusals)."""
        return await self._write(
            lambda: self._journal.commit_tool_prepared(
                run_id, call, recovery_mode=recovery_mode, metadata=metadata
            )
        )

    async def commit_tool_outcome(self, run_id: str, response: EventInput) -> ToolCommit:
        """``RuntimeApplication.tool_journal.commit_tool_outcome`` as a coroutine, off the event
        loop (same parameters, same refusals)."""
        return await self._write(lambda: self._journal.commit_tool_outcome(run_id, response))

    async def commit_tool_recovery_bundle(
        self,
        run_id: str,
        operation_id: str,
        *,
        reconcile: EventInput,
        decision: EventInput,
        outcome: EventInput | None = None,
    ) -> ToolCommit:
        """``RuntimeApplication.tool_journal.commit_tool_recovery_bundle`` as a coroutine, off the
        event loop (same parameters, same refusals)."""
        return await self._write(
            lambda: self._journal.commit_tool_recovery_bundle(
                run_id, operation_id, reconcile=reconcile, decision=decision, outcome=outcome
            )
        )

    async def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        """``RuntimeApplication.tool_journal.tool_operations`` as a coroutine, off the event loop
        (same parameters, same refusals)."""
        return await self._read(lambda: self._journal.tool_operations(run_id))

    async def resolve_run(self, run_id: str) -> Resolution:
        """``RuntimeApplication.tool_journal.resolve_run`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self._journal.resolve_run(run_id))

    async def attestations(self, run_id: str) -> tuple[OperatorAttestation, ...]:
        """``RuntimeApplication.tool_journal.attestations`` as a coroutine, off the event loop
        (same parameters, same refusals)."""
        return await self._read(lambda: self._journal.attestations(run_id))


class AsyncClaims(_Async):
    """``RuntimeApplication.claims`` as coroutines (the continuation claims)."""

    def __init__(self, claims: Claims, write: Runner, read: Runner) -> None:
        super().__init__(write, read)
        self._claims = claims

    async def get_claim(self, claim_id: str) -> ContinuationClaim | None:
        """``RuntimeApplication.claims.get_claim`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self._claims.get_claim(claim_id))

    async def claim_exists(self, claim_id: str) -> bool:
        """``RuntimeApplication.claims.claim_exists`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self._claims.claim_exists(claim_id))

    async def all_claims(self) -> list[ContinuationClaim]:
        """``RuntimeApplication.claims.all_claims`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(self._claims.all_claims)

    async def continuation_start_record(
        self, claim_id: str, start: RuntimeEvent, *, start_kind: StartKind
    ) -> StoredFact:
        """The fact to save with a claim's start (a decision: it writes nothing)."""
        return await self._read(
            lambda: self._claims.continuation_start_record(claim_id, start, start_kind=start_kind)
        )

    async def create_claimed_run(
        self, header: RunHeader, start: RuntimeEvent, *, start_kind: StartKind | None = None
    ) -> None:
        """``RuntimeApplication.claims.create_claimed_run`` as a coroutine, off the event loop
        (same parameters, same refusals)."""
        await self._write(
            lambda: self._claims.create_claimed_run(header, start, start_kind=start_kind)
        )

    async def start_claimed_run(self, run_id: str, start: RuntimeEvent) -> None:
        """``RuntimeApplication.claims.start_claimed_run`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        await self._write(lambda: self._claims.start_claimed_run(run_id, start))


class AsyncOwnership(_Async):
    """``RuntimeApplication.ownership`` as a coroutine (a host's newest lease, ADR 0021)."""

    def __init__(self, ownership: HostLeases, write: Runner, read: Runner) -> None:
        super().__init__(write, read)
        self._ownership = ownership

    async def lease(self, host_id: str | None = None) -> HostLease | None:
        """``RuntimeApplication.ownership.lease`` as a coroutine, off the event loop (same
        parameters, same refusals)."""
        return await self._read(lambda: self._ownership.lease(host_id))


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
        #: The application's service attributes, as coroutines (the ``Async*`` classes above).
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
