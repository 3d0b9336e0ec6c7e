"""HEAD composite continuation replay (docs/reference/continuation.md#composite-replay and
docs/reference/wire.md#boundary-digests), mirroring continuation-replay.test.ts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from maka_es.continuation.model.replay import CompositeReplay, build_composite_replay
from maka_es.continuation.model.replay import project_history as _project
from maka_es.testing.builders import Events, Spine, event_ids
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
EV = Events.decoded(SPINE, ts=1)

SOURCE_SPINE = Spine("session-1", "invocation-2", "run-2", "turn-2")
SOURCE = SOURCE_SPINE.identity


def start_v2(event_id: str = "continuation-start", *, marker: bool = False) -> dict[str, Any]:
    """A V2 continuation-start fact as event 1 of run-2."""
    source_run = Events.wire(SOURCE_SPINE, ts=1)
    return source_run.continuation_start(SPINE, 2, event_id=event_id, marker=marker)


def in_source(e: Any) -> dict[str, Any]:
    """The wire dict of ``e`` moved onto the run-2 spine."""
    return {**e.to_wire(), **SOURCE}


def thinking(event_id: str, signature: str = "signed-1") -> Any:
    return EV.thinking("unfinished", event_id=event_id, signature=signature)


def only_segment(replay: CompositeReplay) -> Any:
    assert replay.blocked_reason is None
    assert len(replay.segments) == 1
    return replay.segments[0]


# --- reference continuation-replay.test.ts items 1-6 -------------------------------------------


def test_trims_interrupted_assistant_suffix_after_last_user() -> None:
    replay = build_composite_replay(
        [
            [
                EV.user("user-1", event_id="user-1", marker=T1),
                thinking("thinking-1"),
                EV.text("x", event_id="assistant-1"),
            ]
        ]
    )
    segment = only_segment(replay)
    assert segment.trimmed_suffix_event_ids == ("thinking-1", "assistant-1")
    assert event_ids(segment.replay_runtime_events) == ["user-1"]
    assert [item["eventId"] for item in segment.provider_items] == ["user-1"]
    assert replay.provider_items == segment.provider_items


def test_hidden_nested_events_are_excluded() -> None:
    hidden = EV.event(
        event_id="hidden-nested-result",
        role="tool",
        author="agent",
        modelVisibility="hidden",
        content={"kind": "text", "text": "hidden"},
    )
    segment = only_segment(
        build_composite_replay([[EV.user("run it", event_id="user-1", marker=T1), hidden]])
    )
    assert event_ids(segment.replay_runtime_events) == ["user-1"]
    assert segment.trimmed_suffix_event_ids == ()


def test_segment_without_anchor_trims_every_model_item() -> None:
    source = [
        start_v2(),
        in_source(thinking("thinking-1")),
        in_source(EV.text("partial answer", event_id="assistant-1")),
        in_source(EV.terminal("failed", event_id="failed-terminal", error_code=None)),
    ]
    segment = only_segment(build_composite_replay([source]))
    assert segment.trimmed_suffix_event_ids == ("thinking-1", "assistant-1")
    assert event_ids(segment.replay_runtime_events) == ["continuation-start", "failed-terminal"]
    assert segment.provider_items == ()


def test_pre_t1_call_in_continuation_is_trimmed() -> None:
    source = [
        start_v2(marker=True),
        in_source(EV.call("tool-call-1", "Write", {"path": "notes.txt"}, event_id="call-1")),
        in_source(EV.terminal("failed", event_id="failed-terminal", error_code=None)),
    ]
    segment = only_segment(build_composite_replay([source]))
    assert segment.trimmed_suffix_event_ids == ("call-1",)
    assert event_ids(segment.replay_runtime_events) == ["continuation-start", "failed-terminal"]
    assert segment.provider_items == ()


def test_unmatched_call_followed_by_assistant_text_is_a_gap() -> None:
    replay = build_composite_replay(
        [
            [
                EV.user("run it", event_id="user-1", marker=T1),
                EV.call("tool-1", "Read", {}, event_id="call-1"),
                EV.text("after the hole", event_id="assistant-1"),
            ]
        ]
    )
    assert replay.blocked_reason == "provider_replay_non_suffix_gap"
    assert replay.blocked_segment_index == 0
    assert replay.diagnostics[0].code == "unmatched_tool_call"
    assert replay.diagnostics[0].event_id == "call-1"
    assert replay.segments == ()
    assert replay.runtime_context == ()
    assert replay.manifest_digest is None
    assert replay.provider_replay_digest is None
    assert not replay.replayable


def test_each_segment_projected_once_ancestor_suffix_never_returns() -> None:
    ancestor = [
        EV.user("run it", event_id="root-user", marker=T1),
        thinking("root-thinking", "signed-root"),
        EV.text("interrupted", event_id="root-interrupted-text"),
    ]
    source = [in_source(EV.user("run it", event_id="child-user", marker=T1))]
    replay = build_composite_replay([ancestor, source])
    assert replay.replayable
    assert event_ids(replay.runtime_context) == ["root-user", "child-user"]
    assert [s.trimmed_suffix_event_ids for s in replay.segments] == [
        ("root-thinking", "root-interrupted-text"),
        (),
    ]
    assert [s.boundary["identity"]["runId"] for s in replay.segments] == [  # type: ignore[index,call-overload]
        "run-1",
        "run-2",
    ]
    assert [item["eventId"] for item in replay.provider_items] == ["root-user", "child-user"]


# --- digest vector (docs/reference/wire.md#vectors) --------------------------------------------


def test_spec_digest_vector() -> None:
    spine = {"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"}
    source = [
        {
            "id": "user",
            **spine,
            "ts": 1,
            "partial": False,
            "role": "user",
            "author": "user",
            "content": {"kind": "text", "text": "go"},
        },
        {
            "id": "term",
            **spine,
            "ts": 1,
            "partial": False,
            "role": "system",
            "author": "system",
            "status": "failed",
            "actions": {"endInvocation": True},
        },
    ]
    replay = build_composite_replay([source])
    assert replay.prefix_digests == (
        "sha256:0233d312baaacc040de803edaf225e284b75dac57bf5812640c96255f1dadf0c",
    )
    assert replay.manifest_digest == (
        "sha256:1cc9ef1e56462052c17dfa2a88417e69540af89138444cf9d4ac508200e71a04"
    )
    assert replay.provider_replay_digest == (
        "sha256:b4e2ce82a65d97773350b596b375266bc5e72602b040426e6f590204835a9cac"
    )
    assert replay.provider_items == (
        {"kind": "text", "role": "user", "content": "go", "eventId": "user", "ts": 1},
    )
    assert replay.segments[0].boundary["position"] == {
        "lastEventSeq": 2,
        "eventCount": 2,
        "lastEventId": "term",
    }
    assert replay.segments[0].provider_replay_digest == replay.provider_replay_digest


def test_trimming_changes_replay_digest_but_not_prefix_digest() -> None:
    base = [EV.user("run it", event_id="user-1"), EV.terminal(status="failed", error_code=None)]
    with_suffix = [
        EV.user("run it", event_id="user-1"),
        EV.text("x", event_id="assistant-1"),
        EV.terminal(status="failed", error_code=None),
    ]
    short, long = build_composite_replay([base]), build_composite_replay([with_suffix])
    assert short.provider_replay_digest == long.provider_replay_digest  # suffix trimmed
    assert short.prefix_digests != long.prefix_digests  # the committed prefix differs


# --- block reasons ------------------------------------------------------------------------------


def test_resolver_corruption_blocks() -> None:
    replay = build_composite_replay(
        [
            [
                EV.user(text="run it"),
                EV.response("tool-9", "Bash", "ok", event_id="orphan", with_refs=True),
            ]
        ]
    )
    assert replay.blocked_reason == "tool_recovery_corruption"
    assert replay.diagnostics[0].code == "tool_recovery_corruption"


def test_indeterminate_operation_blocks_as_unsettled() -> None:
    replay = build_composite_replay(
        [[EV.user(text="run it"), EV.call("tool-1", event_id="call-1", with_refs=True)]]
    )
    assert replay.blocked_reason == "tool_recovery_unsettled"


def test_dispatched_operation_without_result_blocks_as_unsettled() -> None:
    replay = build_composite_replay(
        [
            [
                EV.user(text="run it", marker=T1),
                EV.call("call-1", event_id="call-1", operation_id="operation-1"),
                EV.dispatch("call-1", event_id="dispatch-1", operation_id="operation-1"),
            ]
        ]
    )
    assert replay.blocked_reason == "tool_recovery_unsettled"


def test_the_unsettled_diagnostic_names_the_first_operation_and_its_tool() -> None:
    """The park code stays ``runtime_ledger_unreadable``; what to settle is in the detail."""
    events = [EV.user(text="run it", marker=T1)]
    for n in (1, 2):
        call_id, args = f"call-{n}", {"path": f"{n}.txt", "content": "x"}
        events.append(EV.call(call_id, "Write", args, event_id=call_id, operation_id=f"op-{n}"))
        events.append(EV.dispatch(call_id, "Write", args, operation_id=f"op-{n}"))
    replay = build_composite_replay([events])
    (diagnostic,) = replay.diagnostics
    assert diagnostic.event_id == "call-1"
    assert diagnostic.detail == {
        "operationId": "op-1",
        "toolName": "Write",
        "toolCallId": "call-1",
        "status": "indeterminate",
        "reason": "dispatch_without_response",
        "unsettledOperations": 2,
    }
    assert "tool Write (operation op-1, call call-1) may have run" in diagnostic.message


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        (
            EV.event(
                event_id="partial-1",
                partial=True,
                role="model",
                author="agent",
                content={"kind": "text", "text": "s"},
            ),
            "partial_skipped",
        ),
        (
            EV.event(
                event_id="tool-text",
                role="tool",
                author="tool",
                content={"kind": "text", "text": "t"},
            ),
            "unsupported_role",
        ),
        (
            EV.event(
                event_id="user-thinking",
                role="user",
                author="user",
                content={"kind": "thinking", "text": "t"},
            ),
            "unsupported_role",
        ),
        (
            EV.event(
                event_id="empty-user",
                role="user",
                author="user",
                content={"kind": "text", "text": ""},
            ),
            "unsupported_content",
        ),
    ],
)
def test_projection_problems_are_unsupported(bad: Any, code: str) -> None:
    replay = build_composite_replay([[EV.user(text="run it"), bad]])
    assert replay.blocked_reason == "provider_replay_unsupported"
    assert replay.diagnostics[0].code == code
    assert replay.diagnostics[0].event_id == bad.id


def test_renamed_result_is_resolver_corruption_before_projection() -> None:
    # The resolver runs first, so a renamed or orphan result never reaches the projection.
    renamed = [
        EV.user(text="run it"),
        EV.call("tool-1", "Bash", event_id="call-1", with_refs=True),
        EV.response("tool-1", "Write", "ok", event_id="result-1", with_refs=True),
    ]
    assert build_composite_replay([renamed]).blocked_reason == "tool_recovery_corruption"


def test_projection_diagnoses_renamed_and_orphan_results() -> None:
    # defence in depth behind the resolver: the provider projection refuses them on its own
    renamed = _project(
        [
            EV.user(text="run it"),
            EV.call("tool-1", "Bash", event_id="call-1", with_refs=True),
            EV.response("tool-1", "Write", "ok", event_id="result-1", with_refs=True),
        ],
        None,
    )
    assert [(d.code, d.event_id, d.detail) for d in renamed.diagnostics] == [
        (
            "tool_id_mismatch",
            "result-1",
            {
                "toolCallId": "tool-1",
                "callName": "Bash",
                "resultName": "Write",
                "callEventId": "call-1",
            },
        )
    ]
    orphan = _project(
        [
            EV.user(text="run it"),
            EV.response("tool-9", "Bash", "ok", event_id="result-1", with_refs=True),
        ],
        None,
    )
    assert [(d.code, d.detail) for d in orphan.diagnostics] == [
        ("unmatched_tool_result", {"toolCallId": "tool-9"})
    ]


def test_benign_skips_do_not_block() -> None:
    events = [
        EV.user(text="run it"),
        EV.event(
            event_id="closer", role="model", author="agent", content={"kind": "text", "text": ""}
        ),
        EV.event(event_id="err", content={"kind": "error", "message": "boom"}),
        EV.text("system note", event_id="note", role="system"),
        EV.call("tool-1", "Bash", event_id="call-1", with_refs=True),
        EV.response("tool-1", "Bash", {"exitCode": 0}, event_id="result-1", with_refs=True),
        EV.terminal(status="failed", error_code=None),
    ]
    replay = build_composite_replay([events])
    assert replay.replayable
    assert [item["eventId"] for item in replay.provider_items] == ["user-1", "call-1", "result-1"]
    assert event_ids(replay.runtime_context) == event_ids(
        events
    )  # nothing trimmed: ends at a tool result


def test_signed_thinking_in_unpaired_tool_turn_is_skipped() -> None:
    events = [
        EV.user(text="run it"),
        EV.call("tool-1", "Bash", event_id="call-1", with_refs=True),
        EV.response("tool-1", "Bash", "ok", event_id="result-1", with_refs=True),
        thinking("thinking-1"),
        EV.text("done", event_id="assistant-1"),
        EV.user("next", event_id="user-2"),
    ]
    replay = build_composite_replay([events])
    assert [item["eventId"] for item in replay.provider_items] == [
        "user-1",
        "call-1",
        "result-1",
        "assistant-1",
        "user-2",
    ]
    assert "thinking-1" in event_ids(replay.runtime_context)  # skipped from items, not trimmed


def test_unmatched_call_after_anchor_is_trimmed_with_suffix() -> None:
    events = [
        EV.user(text="run it", marker=T1),
        EV.text("let me check", event_id="assistant-1"),
        EV.call("tool-1", "Read", {}, event_id="call-1"),
        EV.terminal(status="failed", error_code=None),
    ]
    segment = only_segment(build_composite_replay([events]))
    assert segment.trimmed_suffix_event_ids == ("assistant-1", "call-1")
    assert event_ids(segment.replay_runtime_events) == ["user-1", "terminal-1"]


# --- inputs -------------------------------------------------------------------------------------


def test_invalid_segments_raise() -> None:
    with pytest.raises(CodecInputError):
        build_composite_replay([])
    with pytest.raises(CodecInputError):
        build_composite_replay([[]])
    with pytest.raises(CodecInputError):
        build_composite_replay(
            [
                [
                    EV.user(text="run it"),
                    {**EV.terminal(status="failed", error_code=None).to_wire(), "runId": "run-x"},
                ]
            ]
        )
    with pytest.raises(CodecInputError):  # a lineage may not reuse a run
        build_composite_replay([[EV.user(text="run it")], [EV.user("run it", event_id="user-2")]])


def test_deterministic_and_does_not_mutate_input() -> None:
    ancestor = [
        EV.user("run it", event_id="root-user").to_wire(),
        EV.text("x", event_id="root-text").to_wire(),
    ]
    source = [
        in_source(EV.user("run it", event_id="child-user")),
        in_source(EV.terminal(status="failed", error_code=None)),
    ]
    before = copy.deepcopy([ancestor, source])
    first = build_composite_replay([ancestor, source])
    second = build_composite_replay([ancestor, source])
    assert first == second
    assert first.model_dump(by_alias=True) == second.model_dump(by_alias=True)
    assert [ancestor, source] == before


def test_dump_keys() -> None:
    dumped = build_composite_replay(
        [[EV.user(text="run it"), EV.terminal(status="failed", error_code=None)]]
    ).model_dump(by_alias=True)
    assert list(dumped) == [
        "blockedReason",
        "blockedSegmentIndex",
        "diagnostics",
        "providerProjectionVersion",
        "segments",
        "runtimeContext",
        "providerItems",
        "prefixDigests",
        "manifestDigest",
        "providerReplayDigest",
    ]
    assert list(dumped["segments"][0]) == [
        "boundary",
        "prefixDigest",
        "replayRuntimeEvents",
        "trimmedSuffixEventIds",
        "providerItems",
        "providerReplayDigest",
    ]
    assert dumped["runtimeContext"][0] == EV.user(text="run it").to_wire()
