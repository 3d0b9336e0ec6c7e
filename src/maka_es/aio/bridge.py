"""The bridge between the synchronous agent loop and an asyncio host (``maka_es.aio``):
an async provider or tool implementation is awaited on the facade's event loop while the
conversation's worker thread waits for it; no lock is held meanwhile."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.tooljournal.model.tools import Reconciler, Tool, ToolContext
from maka_es.wire.events import ToolRecoveryMode

__all__ = [
    "DEFAULT_CONVERSATION_THREADS",
    "FACADE_LOOP",
    "AsyncProvider",
    "Conversations",
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
