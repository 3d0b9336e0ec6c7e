"""Commands over a run's life: creation, header updates, sealing, a continuation's target.

Why apart from the append rules: these commands decide facts *about* the run (its header, its
seal, its invocation binding) rather than RuntimeEvents in its ledger, and their rules follow
the header's authority (ledger.md#header-rules): the terminal status only ever follows a durable
terminal event, and the admission identity never changes. Pure: they read a
:class:`~maka_es.ledger.run_state.RunState` and return facts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from maka_es.errors import (
    HeaderUpdateRefusedError,
    InvalidRunHeaderError,
    ReservedFactError,
    RunSealedError,
    TerminalConflictError,
)
from maka_es.ledger.facts import (
    InvocationBound,
    RunCreated,
    RunHeaderUpdated,
    RunSealed,
    StoredFact,
    invocation_stream_id,
    run_stream_id,
)
from maka_es.ledger.ownership import RunOwner
from maka_es.ledger.run_append import check_tool_ledger, event_facts
from maka_es.ledger.run_state import RunState
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import (
    MUTABLE_HEADER_FIELDS,
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)

__all__ = [
    "bind_invocation",
    "create_continuation",
    "create_run",
    "decide_header_update",
    "decide_seal",
    "is_exact_create_retry",
]


def create_run(header: RunHeader, created_at: float, owner: RunOwner | None = None) -> RunCreated:
    """The fact that creates a run, owned by ``owner`` (ADR 0021). The header must be
    non-terminal: a terminal header is only ever derived from a durable terminal RuntimeEvent."""
    if header.is_terminal:
        raise InvalidRunHeaderError(
            "a run is created non-terminal; its terminal status follows its terminal event",
            field="status",
        )
    if header.invocation_id is None:
        raise InvalidRunHeaderError(
            "a run created through the store needs its invocationId", field="invocationId"
        )
    return RunCreated(
        originator_id=run_stream_id(header.run_id),
        originator_version=1,
        header=header.to_wire(),
        created_at=created_at,
        owner=None if owner is None else owner.to_json(),
    )


def is_exact_create_retry(
    first: StoredFact | None, header: RunHeader, clock_fields: Collection[str] = ()
) -> bool:
    """Whether creating a run with ``header`` repeats the creation ``first`` recorded (the
    run stream's version 1): the same header, field for field in canonical JSON, as the run
    was created with, whatever happened to the run since. ``clock_fields`` are fields the
    caller itself filled from the clock (``start_run``'s ``createdAt``/``updatedAt``), which
    a retry cannot repeat; they are left out of the comparison. A different header for the
    same run id is not a retry (``run_already_exists``)."""
    if not isinstance(first, RunCreated):
        return False

    def compared(wire: Mapping[str, Any]) -> str:
        return canonical_json({k: v for k, v in wire.items() if k not in clock_fields})

    return compared(first.header) == compared(header.to_wire())


def bind_invocation(header: RunHeader) -> InvocationBound:
    """Version 1 of the invocation's stream: one run per invocation, enforced by the store.
    Saved with every fact that creates a run."""
    if header.invocation_id is None:
        raise InvalidRunHeaderError(
            "a run created through the store needs its invocationId", field="invocationId"
        )
    return InvocationBound(
        originator_id=invocation_stream_id(header.invocation_id),
        originator_version=1,
        invocation_id=header.invocation_id,
        session_id=header.session_id,
        run_id=header.run_id,
        turn_id=header.turn_id,
    )


def decide_header_update(
    run: RunState, patch: Mapping[str, Any], *, updated_at: float
) -> RunHeaderUpdated:
    """Validate a header patch: only mutable fields; terminal only after the terminal event
    is durable and matches it; a terminal header that its durable terminal fact backs never
    changes again.

    A terminal header that NO durable fact backs (another writer or an old store wrote it
    without its terminal event) is not authority: once recovery has made a terminal fact
    durable, the header may be corrected to that fact, and to nothing else.
    """
    illegal = sorted(set(patch) - MUTABLE_HEADER_FIELDS)
    if illegal:
        raise HeaderUpdateRefusedError(
            f"header fields are immutable after creation: {', '.join(illegal)}",
            detail={"fields": illegal},
        )
    already_terminal = HeaderUpdateRefusedError(
        f"run {run.run_id} header is already terminal ({run.header.status})",
        detail={"status": run.header.status},
    )
    if run.header.is_terminal and _header_backed_by_terminal(run):
        raise already_terminal
    candidate = RunHeader.model_validate({**run.header.to_wire(), **patch})
    if run.header.is_terminal and not candidate.is_terminal:
        raise already_terminal
    if candidate.is_terminal:
        _check_terminal_header(run, candidate)
    return RunHeaderUpdated(
        originator_id=run.id,
        originator_version=run.version + 1,
        patch=dict(patch),
        updated_at=updated_at,
    )


def _header_backed_by_terminal(run: RunState) -> bool:
    terminal = run.terminal_event
    return terminal is not None and header_matches_terminal(run.header, terminal)


def _check_terminal_header(run: RunState, candidate: RunHeader) -> None:
    """A terminal header needs a durable terminal event, and must say what it says."""
    terminal = run.terminal_event
    if terminal is None:
        raise TerminalConflictError(
            f"run {run.run_id}: a terminal header needs a durable terminal event first",
            detail={"status": candidate.status},
        )
    if not header_matches_terminal(candidate, terminal):
        raise TerminalConflictError(
            f"run {run.run_id}: header {candidate.status} does not match terminal event "
            f"{terminal.id} ({run_status_for_terminal_event(terminal)})",
            detail={"status": candidate.status, "eventId": terminal.id},
        )


def decide_seal(run: RunState, claim_id: str, *, sealed_at: float) -> RunSealed:
    """Seal this run as a continuation source, at its current version: if the run changed
    after it was read, the claim's save conflicts and nothing of the claim is written."""
    if run.sealed_by is not None:
        raise RunSealedError(
            f"run {run.run_id} is already the source of claim {run.sealed_by}",
            detail={"claimId": run.sealed_by},
        )
    return RunSealed(
        originator_id=run.id,
        originator_version=run.version + 1,
        claim_id=claim_id,
        sealed_at=sealed_at,
    )


def create_continuation(
    header: RunHeader,
    start: RuntimeEvent,
    *,
    created_at: float,
    admitted: bool = False,
    owner: RunOwner | None = None,
) -> tuple[StoredFact, ...]:
    """The target Run of a continuation: created with its continuation-start fact as event
    1 (the generic path refuses start facts; this is their only writer;
    continuation.md#start-fact).

    ``admitted``: the start admits the run to execution, so the header records
    ``running`` (``updatedAt`` = the start's ``ts``) in the same save. A reader of the
    header can then tell an admitted run from a merely claimed one (still ``created``);
    a claim-repair start never runs anything and leaves the header ``created``.
    """
    if start.actions is None or start.actions.continuation_start is None:
        raise ReservedFactError(
            f"event {start.id} is not a continuation-start fact",
            detail={"eventId": start.id},
        )
    created = create_run(header, created_at, owner)
    run = RunState(created.originator_id, RunHeader.model_validate(created.header), 1)
    decision = event_facts(run, [start], created_at)
    check_tool_ledger(run, decision.appended)
    if not admitted:
        return (created, *decision.facts)
    for fact in decision.facts:
        run.apply(fact)
    running = decide_header_update(
        run, {"status": "running", "updatedAt": start.ts}, updated_at=created_at
    )
    return (created, *decision.facts, running)
