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

__all__ = ["paired_call_ids", "provider_replay_subset"]


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
