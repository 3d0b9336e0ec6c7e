"""``GrowingReplay`` against ``provider_replay_subset`` (ADR 0046, issue 23 target 4).

Why: the agent loop keeps its run's replay from step to step and extends it by the events
committed since, instead of projecting every event again. It must give exactly what the plain
projection of the whole prefix gives, whatever the events and wherever a step cuts them,
including a tail that pairs an id an earlier event carries (a late response, a reused id, a
response before its call, hidden and partial events).
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from maka_es.resume.plan import GrowingReplay, provider_replay_subset
from maka_es.testing.builders import Events, Spine, event_ids
from maka_es.wire.events import RuntimeEvent

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
EV = Events.decoded(SPINE, ts=1)
IDS = ("c1", "c2")
NAMES = ("Bash", "Bash", "Read")
KINDS = ("call", "call", "response", "response", "text", "fact")


@st.composite
def ledgers(draw: st.DrawFn) -> list[RuntimeEvent]:
    """A ledger of calls, responses, texts and facts over a few reused ids and names."""
    events: list[RuntimeEvent] = []
    for n in range(draw(st.integers(0, 16))):
        kind = draw(st.sampled_from(KINDS))
        event_id = f"e{n}"
        hidden = draw(st.booleans()) and draw(st.booleans())
        partial = draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans())
        call_id, name = draw(st.sampled_from(IDS)), draw(st.sampled_from(NAMES))
        if kind == "call":
            event = EV.call(call_id, name, event_id=event_id, hidden=hidden, partial=partial)
        elif kind == "response":
            event = EV.response(call_id, name, event_id=event_id, hidden=hidden, partial=partial)
        elif kind == "text":
            event = EV.text("t", event_id=event_id, partial=partial)
        else:
            event = EV.event(event_id=event_id)
        events.append(event)
    return events


def cut(events: list[RuntimeEvent], cuts: list[int]) -> list[list[RuntimeEvent]]:
    bounds = sorted({min(c, len(events)) for c in cuts} | {0, len(events)})
    return [events[a:b] for a, b in itertools.pairwise(bounds)]


@given(ledgers(), st.lists(st.integers(0, 16), max_size=8))
@settings(max_examples=150)
def test_growing_replay_is_the_plain_projection_of_every_prefix(
    events: list[RuntimeEvent], cuts: list[int]
) -> None:
    replay = GrowingReplay()
    held: list[RuntimeEvent] = []
    for chunk in cut(events, cuts):
        replay.extend(chunk)
        held += chunk
        plain = provider_replay_subset(held)
        assert event_ids(replay.subset) == event_ids(plain)
        assert replay.subset == tuple(plain)
        assert replay.count == len(held)
        calls = {e.function_call.id for e in plain if e.function_call is not None}
        assert replay.call_ids == calls


def test_a_late_response_brings_back_its_earlier_call() -> None:
    """The call was held unpaired (left out); its response in a later tail pairs it, so the
    call joins at its own place in ledger order."""
    call = EV.call("c1", "Bash", event_id="call")
    note = EV.text("between", event_id="note")
    response = EV.response("c1", "Bash", event_id="response")
    replay = GrowingReplay()
    replay.extend([call, note])
    assert event_ids(replay.subset) == ["note"]
    replay.extend([response])
    assert event_ids(replay.subset) == ["call", "note", "response"]
    assert replay.call_ids == {"c1"}
