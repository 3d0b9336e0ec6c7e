"""Properties of the continuation plan and composite replay over generated prefixes and facts:
deterministic, input-preserving, and ``continue`` exactly when no gate fired."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from maka_es.continuation.model.plan import ContinuationInputs, build_continuation_plan
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.testing.builders import Spine
from maka_es.testing.strategies import runtime_event_dicts
from maka_es.wire.events import RuntimeEvent

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
TOOL_NAMES = ["Bash", "Read", "Write", "a", "b"]

prefixes = st.lists(runtime_event_dicts(SPINE), max_size=8)

facts_dicts = st.fixed_dictionaries(
    {
        "ledgerReadable": st.booleans(),
        "terminalRepairSucceeded": st.booleans(),
        "sourceCwd": st.sampled_from(["/w/repo", "/w/repo/", "C:\\W\\Repo", "/elsewhere"]),
        "currentCwd": st.sampled_from(["/w/repo", "c:/w/repo", "/elsewhere"]),
        "sourceWorkspaceIdentity": st.sampled_from([None, "ws-1", "ws-2"]),
        "currentWorkspaceIdentity": st.sampled_from([None, "ws-1"]),
        "backgroundOperationsSettled": st.booleans(),
        "availableToolNames": st.lists(st.sampled_from(TOOL_NAMES), max_size=6),
        "continuationIdentity": st.sampled_from(
            [
                {"invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"},
                {"invocationId": "invocation-1", "runId": "run-2", "turnId": "turn-2"},
            ]
        ),
        "workspaceCheckpoint": st.none()
        | st.fixed_dictionaries(
            {"restored": st.booleans(), "runtimeEventHighWater": st.integers(0, 9)},
            optional={"ref": st.sampled_from(["", "checkpoint-1"])},
        ),
        "expectedRuntimeEventHighWater": st.none() | st.integers(0, 9),
        "cwdPolicy": st.sampled_from(["strict", "relocatable"]),
    }
)


@given(events=prefixes, ancestor=prefixes, raw_facts=facts_dicts)
def test_planning_twice_is_equal_and_inputs_unchanged(
    events: list[dict[str, Any]], ancestor: list[dict[str, Any]], raw_facts: dict[str, Any]
) -> None:
    facts = ContinuationInputs.model_validate(raw_facts)
    before = copy.deepcopy((events, ancestor, raw_facts))
    facts_before = facts.model_dump()

    first = build_continuation_plan(events, facts, ancestors=[ancestor])
    second = build_continuation_plan(events, facts, ancestors=[ancestor])

    assert first == second
    assert first.model_dump(by_alias=True) == second.model_dump(by_alias=True)
    assert (events, ancestor, raw_facts) == before
    assert facts.model_dump() == facts_before
    # decoded input plans the same as wire input
    decoded = [RuntimeEvent.model_validate(e) for e in events]
    assert build_continuation_plan(decoded, facts, ancestors=[ancestor]) == first
    # continue exactly when no gate fired
    assert (first.disposition == "continue") == (not first.rejection_reasons)
    assert (first.continuation is not None) == (first.disposition == "continue")
    assert len(set(first.rejection_reasons)) == len(first.rejection_reasons)
    if first.continuation is not None:
        assert first.continuation.source_runtime_event_high_water == len(events)
        names = first.continuation.safety_snapshot.available_tool_names
        assert list(names) == sorted(set(raw_facts["availableToolNames"]))


@given(events=st.lists(runtime_event_dicts(SPINE), min_size=1, max_size=8))
def test_composite_replay_is_deterministic_and_input_preserving(
    events: list[dict[str, Any]],
) -> None:
    before = copy.deepcopy(events)
    first = build_composite_replay([events])
    assert build_composite_replay([events]) == first
    assert events == before
    if first.replayable:
        assert len(first.prefix_digests) == 1
        assert first.manifest_digest is not None
        assert first.provider_replay_digest is not None
        kept = {event.id for event in first.runtime_context}
        assert kept.isdisjoint(first.segments[0].trimmed_suffix_event_ids)
    else:
        assert first.segments == ()
        assert first.runtime_context == ()
