"""A session's conversation so far: what a turn's model is shown before its own run (ADR 0038).

Why: a turn's replay is its own run (a first turn: its user message; a continuation: its
lineage's composite replay), so without more a session's second turn knows nothing of its
first. The history is a separate prefix (``ProviderRequest.history``), rendered before the
replay context and never part of it: the continuation's replay, its items and its digests are
unchanged (docs/reference/continuation.md#session-history).

The history of a turn (given by one run of its lineage, or none for a new turn):

1. only the session-inline runs created **before the turn's first run** (the root of its
   lineage) count, and never a run of the turn's own lineage: a continuation or fork of turn
   N therefore sees exactly the earlier turns the original turn N saw;
2. a turn of that slice is a run no run of the slice continues (the end of its lineage); it
   counts when it ``completed``. A ``cancelled`` turn does not (the host withdrew it; a host
   that wants it kept continues it, and the completed continuation then counts), nor does a
   ``failed`` one nobody continued, nor a run that is not finished;
3. a counted turn's conversation is what its model saw, then its answer: a first turn's
   events; a continuation's or fork's lineage replay (the same composite replay its start
   recorded, checked against that record) followed by its own events after its start; each
   through the provider-replay projection, keeping only model-visible events. A resumed turn
   is therefore there once, never as its failed source plus its continuation;
4. the counted turns go in the order their first runs were created, the newest ``max_turns``
   of them (``None``: all). An older turn that uses a tool call id a newer one (or the
   replay, ``reserved_call_ids``) uses ends the history there: the exporters pair calls and
   results by bare id and refuse a repeated one.

Pure: committed headers and events in, events out; ``events_of`` is only asked for the runs
of the turns kept. A subagent's turn (not session-inline) has no session history. A lineage
that no longer replays as recorded, or a run that is not the session's, raises
:class:`SessionHistoryError` (``session_history_unreplayable``) rather than showing the model
something it never saw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from maka_es.continuation.claims import RunReader
from maka_es.continuation.lineage import check_v2_replay, read_lineage
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.errors import (
    InvalidPlanRequestError,
    LineagePark,
    RunNotFoundError,
    SessionHistoryError,
)
from maka_es.providers.replay_items import provider_replay_item
from maka_es.resume.replay import provider_replay_subset
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = ["EventsOf", "SessionHistoryError", "checked_history_turns", "session_history"]

#: A run's committed events, by run id (``Ledger.read_run_events``).
EventsOf = Callable[[str], Sequence[RuntimeEvent]]


def checked_history_turns(value: object) -> int | None:
    """A ``history_turns`` setting as given: ``None`` (every earlier turn) or an ``int`` >= 0
    (at most that many, ``0``: no history); anything else is ``invalid_plan_request``."""
    if value is None or (type(value) is int and value >= 0):
        return value
    raise InvalidPlanRequestError(
        "history_turns must be None or a non-negative integer",
        detail={"historyTurns": repr(value)},
    )


def session_history(
    runs: Sequence[RunHeader],
    events_of: EventsOf,
    *,
    turn_of: str | None = None,
    max_turns: int | None = None,
    reserved_call_ids: Iterable[str] = (),
) -> tuple[RuntimeEvent, ...]:
    """The history prefix of a turn (module docstring): ``runs`` are the session's headers
    in creation order (``Ledger.list_runs``), ``turn_of`` a run of the turn (``None``: a new
    turn after every run)."""
    inline = [header for header in runs if header.is_session_inline]
    by_id = {header.run_id: header for header in inline}
    if turn_of is not None and turn_of not in by_id:
        if any(header.run_id == turn_of for header in runs):
            return ()  # a subagent's turn: the session's conversation is not its context
        raise SessionHistoryError(
            f"run {turn_of} is not a run of this session",
            detail={"runId": turn_of, "reason": "run_not_in_session"},
        )
    earlier = _before_turn(inline, by_id, turn_of)
    continued = {_source_id(h) for h in earlier if h.continuation_source is not None}
    ends = [h for h in earlier if h.run_id not in continued and h.status == "completed"]
    position = {header.run_id: n for n, header in enumerate(earlier)}
    ends.sort(key=lambda header: position[_lineage(header, by_id)[-1]])
    if max_turns is not None:
        ends = ends[len(ends) - max_turns :] if max_turns else []
    reader = _reader(earlier, events_of)
    used = set(reserved_call_ids)
    kept: list[tuple[RuntimeEvent, ...]] = []
    for header in reversed(ends):
        conversation = _conversation(reader, header, tuple(events_of(header.run_id)))
        ids = {e.function_call.id for e in conversation if e.function_call is not None}
        if ids & used:
            break
        used |= ids
        kept.append(conversation)
    return tuple(event for conversation in reversed(kept) for event in conversation)


def _source_id(header: RunHeader) -> str:
    edge = header.continuation_source
    return "" if edge is None else edge.source_run_id


def _lineage(header: RunHeader, by_id: dict[str, RunHeader]) -> list[str]:
    """The run ids of ``header``'s lineage, itself first, its root last (edges followed
    within the session; a cycle or a source outside it stops the walk)."""
    chain = [header.run_id]
    current = header
    while current.continuation_source is not None:
        source = by_id.get(_source_id(current))
        if source is None or source.run_id in chain:
            break
        chain.append(source.run_id)
        current = source
    return chain


def _before_turn(
    inline: list[RunHeader], by_id: dict[str, RunHeader], turn_of: str | None
) -> list[RunHeader]:
    """The runs created before the turn's root, none of its lineage (step 1)."""
    if turn_of is None:
        return inline
    lineage = _lineage(by_id[turn_of], by_id)
    root = next(n for n, h in enumerate(inline) if h.run_id == lineage[-1])
    return [h for h in inline[:root] if h.run_id not in lineage]


def _reader(earlier: list[RunHeader], events_of: EventsOf) -> RunReader:
    """A lineage reader over the slice: a run outside it is "missing" to the lineage."""
    by_id = {header.run_id: header for header in earlier}

    def header(run_id: str) -> RunHeader:
        if run_id not in by_id:
            raise RunNotFoundError(f"run {run_id} is not an earlier run of the session")
        return by_id[run_id]

    return RunReader(header, lambda run_id: list(events_of(run_id)), lambda _: list(earlier))


def _conversation(
    reader: RunReader, header: RunHeader, events: tuple[RuntimeEvent, ...]
) -> tuple[RuntimeEvent, ...]:
    """A counted turn as its model saw it, then its answer (step 3)."""
    if header.continuation_source is None:
        return _visible(provider_replay_subset(events))
    try:
        lineage = read_lineage(reader, header, events)
        check_v2_replay(lineage)
        replay = build_composite_replay(lineage.segments[:-1])
    except (LineagePark, CodecInputError) as exc:
        raise _unreplayable(header, getattr(exc, "code", "prefix_invalid")) from None
    if not replay.replayable:
        raise _unreplayable(header, str(replay.blocked_reason))
    return _visible(replay.runtime_context + tuple(provider_replay_subset(events[1:])))


def _visible(events: Iterable[RuntimeEvent]) -> tuple[RuntimeEvent, ...]:
    """Only what a provider format renders (the exporters' own item projection)."""
    return tuple(e for e in events if provider_replay_item(e.to_wire()) is not None)


def _unreplayable(header: RunHeader, reason: str) -> SessionHistoryError:
    return SessionHistoryError(
        f"earlier turn {header.run_id} no longer replays as its continuation recorded: {reason}",
        detail={"runId": header.run_id, "reason": reason},
    )
