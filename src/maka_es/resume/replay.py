"""Provider replay subset of a committed prefix (docs/reference/phase0.md#replay-subset).

Why a subset and not the whole ledger: the provider must never see half of a tool exchange. A
call without a committed, same-named result is exactly the interrupted suffix whose side effects
are unknown; replaying it would invite the model to act on (or repeat) it. Events without content
(terminal, permission, dispatch and recovery facts, continuation starts) stay: they are canonical
facts that the model-history projection ignores, and dropping them would make the replay list
disagree with the ledger about where the run ended.
"""

from __future__ import annotations

from collections.abc import Sequence

from maka_es.resume.models import RuntimeEventInput, decode_events
from maka_es.wire.events import FunctionCallContent, FunctionResponseContent, RuntimeEvent

__all__ = ["GrowingReplay", "paired_call_ids", "provider_replay_subset"]


def paired_call_ids(events: Sequence[RuntimeEvent]) -> frozenset[str]:
    """Provider call ids with an earlier non-partial call and a later same-named response.

    Pairing keys on the bare provider id (not the invocation), as the provider sees it; the
    latest earlier call with that id is the one a response is matched against.
    """
    calls: dict[str, FunctionCallContent] = {}
    paired: set[str] = set()
    for event in events:
        if event.partial:
            continue
        content = event.content
        if isinstance(content, FunctionCallContent):
            calls[content.id] = content
        elif isinstance(content, FunctionResponseContent):
            earlier = calls.get(content.id)
            if earlier is not None and earlier.name == content.name:
                paired.add(content.id)
    return frozenset(paired)


def provider_replay_subset(events: Sequence[RuntimeEventInput]) -> list[RuntimeEvent]:
    """The legal provider-replay subset of ``events``, in ledger order.

    Drops partial and hidden events, and calls/responses whose id is not paired; keeps every
    content-less fact and every other content event (text, thinking, error).
    """
    decoded = decode_events(events)
    paired = paired_call_ids(decoded)
    subset: list[RuntimeEvent] = []
    for event in decoded:
        if event.partial or event.model_visibility == "hidden":
            continue
        content = event.content
        if isinstance(content, FunctionCallContent | FunctionResponseContent):
            if content.id in paired:
                subset.append(event)
        else:
            subset.append(event)
    return subset


class GrowingReplay:
    """``provider_replay_subset`` of a ledger that only grows, extended by its new events.

    Why: the agent loop asks for its run's replay before every provider call; projecting every
    event again made a turn quadratic in its steps (issue 23, target 4). Pairing only ever adds
    ids, so the subset of the whole is the subset of the prefix plus the tail's, unless the
    tail pairs an id an earlier visible call or response carries: then that earlier event joins
    and the subset is projected again from every event held (the plain function, ADR 0046).
    """

    def __init__(self) -> None:
        self._events: list[RuntimeEvent] = []
        self._calls: dict[str, FunctionCallContent] = {}  # the latest non-partial call per id
        self._paired: set[str] = set()
        self._held_ids: set[str] = set()  # ids of visible, complete calls and responses held
        self._subset: list[RuntimeEvent] = []
        self._subset_call_ids: set[str] = set()

    @property
    def count(self) -> int:
        """How many events of the ledger are held (the next read starts after them)."""
        return len(self._events)

    @property
    def subset(self) -> tuple[RuntimeEvent, ...]:
        """``provider_replay_subset`` of every event held."""
        return tuple(self._subset)

    @property
    def call_ids(self) -> frozenset[str]:
        """The ids of the function calls in :attr:`subset`."""
        return frozenset(self._subset_call_ids)

    def extend(self, events: Sequence[RuntimeEvent]) -> None:
        """Hold ``events``, the ledger's events after the ones held, in ledger order."""
        newly_paired = [call_id for call_id in self._pair(events) if call_id in self._held_ids]
        self._events.extend(events)
        for event in events:
            content = event.content
            visible = not event.partial and event.model_visibility != "hidden"
            if visible and isinstance(content, FunctionCallContent | FunctionResponseContent):
                self._held_ids.add(content.id)
        if newly_paired:
            self._subset = provider_replay_subset(self._events)
            self._subset_call_ids = set()
            self._note_calls(self._subset)
            return
        tail = self._visible(events)
        self._subset.extend(tail)
        self._note_calls(tail)

    def _pair(self, events: Sequence[RuntimeEvent]) -> list[str]:
        """``paired_call_ids``' fold over ``events``; the ids it pairs for the first time."""
        newly: list[str] = []
        for event in events:
            if event.partial:
                continue
            content = event.content
            if isinstance(content, FunctionCallContent):
                self._calls[content.id] = content
            elif isinstance(content, FunctionResponseContent):
                earlier = self._calls.get(content.id)
                paired = earlier is not None and earlier.name == content.name
                if paired and content.id not in self._paired:
                    self._paired.add(content.id)
                    newly.append(content.id)
        return newly

    def _visible(self, events: Sequence[RuntimeEvent]) -> list[RuntimeEvent]:
        """``provider_replay_subset``'s filter, with the pairs of every event held."""
        kept: list[RuntimeEvent] = []
        for event in events:
            if event.partial or event.model_visibility == "hidden":
                continue
            content = event.content
            if isinstance(content, FunctionCallContent | FunctionResponseContent):
                if content.id in self._paired:
                    kept.append(event)
            else:
                kept.append(event)
        return kept

    def _note_calls(self, events: Sequence[RuntimeEvent]) -> None:
        for event in events:
            if event.function_call is not None:
                self._subset_call_ids.add(event.function_call.id)
