"""The service attributes of :class:`~maka_es.aio.AsyncRuntimeApplication`.

Why: the asyncio facade mirrors the host surface of :class:`~maka_es.app.RuntimeApplication`
(ADR 0039): its verbs, and the plumbing on the same service attributes (``ledger``,
``run_starts``, ``tool_journal``, ``claims``, ``ownership``), each method a coroutine with the
parameters of the synchronous one. A command goes through the facade's lock and its single
writer thread, a read through the default thread pool (see ``maka_es.aio``); the rules stay in
the synchronous services.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from maka_es.app import ToolJournalService
from maka_es.app_api import EventInput
from maka_es.continuation.claims import Claims, ContinuationClaim
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.model.facts import StartKind, StoredFact
from maka_es.ledger.model.ownership import HostLease
from maka_es.ledger.service import AppendResult, Ledger, RunStarts, ToolCommit
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.resolver import Resolution
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = ["AsyncClaims", "AsyncLedger", "AsyncOwnership", "AsyncRunStarts", "AsyncToolJournal"]

T = TypeVar("T")


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
