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
from maka_es.wire.events import FunctionCallContent, RuntimeEvent

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
        call = event.function_call
        if call is not None:
            calls[call.id] = call
            continue
        response = event.function_response
        if response is not None:
            earlier = calls.get(response.id)
            if earlier is not None and earlier.name == response.name:
                paired.add(response.id)
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
        if event.partial or event.is_hidden:
            continue
        call, response = event.function_call, event.function_response
        if call is not None:
            if call.id in paired:
                subset.append(event)
        elif response is not None:
            if response.id in paired:
                subset.append(event)
        else:
            subset.append(event)
    return subset
