"""Provider message export (OpenAI chat completions, Anthropic Messages) of a replay context.

Exact outputs on hand-built histories, refusal of every unpaired or interleaved tool exchange,
and a Hypothesis property: for any paired history, every exported tool call is answered by
exactly one result, right after it, and the first message is the user's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.continuation.model.plan import ContinuationInputs, build_continuation_plan
from maka_es.errors import MakaError
from maka_es.providers.export import (
    ProviderExportError,
    ProviderMessage,
    to_anthropic_messages,
    to_openai_chat_messages,
    tool_result_text,
)
from maka_es.providers.replay_items import provider_replay_item
from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model.tools import outcome_unknown_result
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)

Exporter = Callable[[list[Any]], list[ProviderMessage]]
EXPORTERS: list[Exporter] = [to_openai_chat_messages, to_anthropic_messages]


def fact(event_id: str) -> RuntimeEvent:
    """A content-less system fact (continuation start, Original P1 form)."""
    return EV.state_delta_continuation_start(event_id=event_id, marker=True)


def history() -> list[RuntimeEvent]:
    """User, a step (thinking, text, two parallel calls), dispatch facts, results out of order
    (one an error), a final text, plus everything the model never sees."""
    return [
        fact("start-1"),
        EV.user("fix the port", event_id="user-1"),
        EV.text("a UI note", event_id="sys-1", role="system"),
        EV.thinking("need the config", event_id="think-1", signature="sig-1"),
        EV.text("Reading both files.", event_id="model-1"),
        EV.text("Readi", event_id="model-partial", partial=True),
        EV.call(
            "tool-a", "Read", {"path": "b.json", "limit": 2}, event_id="call-a", with_refs=True
        ),
        EV.call("tool-b", "Bash", {"command": "cat a.json"}, event_id="call-b", with_refs=True),
        EV.dispatch(
            "tool-a",
            "Read",
            {"path": "b.json", "limit": 2},
            event_id="dispatch-a",
            operation_id="op-a",
        ),
        EV.text("code mode chatter", event_id="hidden-1", modelVisibility="hidden"),
        EV.response(
            "tool-b",
            "Bash",
            {"exitCode": 1, "stderr": "no"},
            event_id="result-b",
            is_error=True,
            with_refs=True,
        ),
        EV.response("tool-a", "Read", "port: 3000", event_id="result-a", with_refs=True),
        EV.text("", event_id="model-empty"),
        EV.text("The port is 3000.", event_id="model-2"),
        EV.terminal("completed", event_id="terminal-1"),
    ]


def test_openai_exact_messages() -> None:
    assert to_openai_chat_messages(history()) == [
        {"role": "user", "content": "fix the port"},
        {
            "role": "assistant",
            "content": "Reading both files.",
            "tool_calls": [
                {
                    "id": "tool-a",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"limit":2,"path":"b.json"}'},
                },
                {
                    "id": "tool-b",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command":"cat a.json"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "tool-b", "content": '{"exitCode":1,"stderr":"no"}'},
        {"role": "tool", "tool_call_id": "tool-a", "content": "port: 3000"},
        {"role": "assistant", "content": "The port is 3000."},
    ]


def test_anthropic_exact_messages() -> None:
    assert to_anthropic_messages(history()) == [
        {"role": "user", "content": [{"type": "text", "text": "fix the port"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "need the config", "signature": "sig-1"},
                {"type": "text", "text": "Reading both files."},
                {
                    "type": "tool_use",
                    "id": "tool-a",
                    "name": "Read",
                    "input": {"path": "b.json", "limit": 2},
                },
                {
                    "type": "tool_use",
                    "id": "tool-b",
                    "name": "Bash",
                    "input": {"command": "cat a.json"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tool-b",
                    "content": '{"exitCode":1,"stderr":"no"}',
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "tool-a", "content": "port: 3000"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "The port is 3000."}]},
    ]


def test_tool_results_are_sent_as_the_tools_text_not_the_envelope_json() -> None:
    """The tool journal stores a result in its text envelope; the model reads the text. The
    replay items (what the continuation's replay digest binds) keep the stored envelope."""
    unknown = outcome_unknown_result("killed mid-write")
    events = [
        EV.user(text="fix the port"),
        EV.call("tool-a", "Read", {"path": "a.json"}, event_id="c-a", with_refs=True),
        EV.call("tool-b", "Write", {"path": "a.json"}, event_id="c-b", with_refs=True),
        EV.response(
            "tool-a", "Read", {"kind": "text", "text": "port: 3000"}, event_id="r-a", with_refs=True
        ),
        EV.response("tool-b", "Write", unknown, event_id="r-b", is_error=True, with_refs=True),
    ]
    assert to_openai_chat_messages(events)[2:] == [
        {"role": "tool", "tool_call_id": "tool-a", "content": "port: 3000"},
        {"role": "tool", "tool_call_id": "tool-b", "content": "outcome_unknown: killed mid-write"},
    ]
    assert to_anthropic_messages(events)[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "tool-a", "content": "port: 3000"},
        {
            "type": "tool_result",
            "tool_use_id": "tool-b",
            "content": "outcome_unknown: killed mid-write",
            "is_error": True,
        },
    ]
    items = [provider_replay_item(e.to_wire()) for e in events[3:]]
    assert [item["output"] for item in items if item is not None] == [
        {"kind": "text", "text": "port: 3000"},
        unknown,
    ]


@pytest.mark.parametrize(
    ("output", "text"),
    [
        ("plain", "plain"),
        ({"kind": "text", "text": ""}, ""),
        ({"kind": "text", "text": 3}, '{"kind":"text","text":3}'),
        ({"kind": "json", "value": 1}, '{"kind":"json","value":1}'),
        ([{"kind": "text", "text": "a"}], '[{"kind":"text","text":"a"}]'),
        (None, "null"),
    ],
)
def test_tool_result_text_of_other_results(output: Any, text: str) -> None:
    assert tool_result_text(output) == text


def test_calls_without_text_and_several_texts_in_one_step() -> None:
    events = [
        EV.user(text="run it"),
        EV.call("tool-1", "Bash", {"command": "ls"}, event_id="c1", with_refs=True),
        EV.response("tool-1", "Bash", "a b", event_id="r1", with_refs=True),
        EV.text("First.", event_id="m1"),
        EV.text("Second.", event_id="m2"),
    ]
    assert to_openai_chat_messages(events) == [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "tool-1",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "tool-1", "content": "a b"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "First."}, {"type": "text", "text": "Second."}],
        },
    ]
    assert to_anthropic_messages(events)[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "First."}, {"type": "text", "text": "Second."}],
    }


def test_text_after_calls_in_the_same_step_travels_with_them() -> None:
    events = [
        EV.user(text="run it"),
        EV.call("call-1", event_id="c1", with_refs=True),
        EV.text("Running it.", event_id="m1"),
        EV.response("call-1", "Bash", "ok", event_id="r1", with_refs=True),
    ]
    assert to_openai_chat_messages(events)[1]["content"] == "Running it."
    assert [b["type"] for b in to_anthropic_messages(events)[1]["content"]] == ["tool_use", "text"]


def test_thinking_signed_unsigned_and_thinking_only_steps() -> None:
    events = [
        EV.user("hi", event_id="user-1"),
        EV.thinking("unsigned thoughts", event_id="t1"),
        EV.user("still there?", event_id="user-2"),
        EV.thinking("signed thoughts", event_id="t2", signature="sig"),
        EV.text("Yes.", event_id="m1"),
    ]
    # chat completions accepts no reasoning input: all thinking goes, the thinking-only step too
    assert to_openai_chat_messages(events) == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "still there?"},
        {"role": "assistant", "content": "Yes."},
    ]
    # unsigned thinking is refused by the API: dropped; the two user turns then merge
    assert to_anthropic_messages(events) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "still there?"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed thoughts", "signature": "sig"},
                {"type": "text", "text": "Yes."},
            ],
        },
    ]


def test_steering_user_text_during_a_tool_follows_the_results() -> None:
    steering = EV.event(
        event_id="steer-1",
        role="user",
        author="user",
        content={"kind": "text", "text": "use port 4000", "steering": True},
    )
    envelope = (
        "The user sent a message while you were working:\n<user_query>\nuse port 4000\n"
        "</user_query>"
    )
    events = [
        EV.user(text="run it"),
        EV.call("tool-1", event_id="c1", with_refs=True),
        steering,
        EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
    ]
    assert to_openai_chat_messages(events)[2:] == [
        {"role": "tool", "tool_call_id": "tool-1", "content": "ok"},
        {"role": "user", "content": envelope},
    ]
    assert to_anthropic_messages(events)[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "tool-1", "content": "ok"},
            {"type": "text", "text": envelope},
        ],
    }


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_content_less_facts_only_history_is_empty(exporter: Exporter) -> None:
    assert (
        exporter([fact("start-1"), EV.terminal("failed", event_id="terminal-1", error_code=None)])
        == []
    )
    assert exporter([]) == []


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_wire_dicts_are_accepted_and_results_are_copies(exporter: Exporter) -> None:
    events = [
        EV.user(text="run it"),
        EV.call(
            "tool-1", "Bash", {"command": "ls", "env": {"A": "1"}}, event_id="c1", with_refs=True
        ),
        EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
    ]
    assert exporter([e.to_wire() for e in events]) == exporter(events)
    exported = to_anthropic_messages(events)
    exported[1]["content"][0]["input"]["env"]["A"] = "changed"
    assert events[1].to_wire()["content"]["args"] == {"command": "ls", "env": {"A": "1"}}


# --- refusals ---------------------------------------------------------------------------------

REFUSALS: dict[str, tuple[list[RuntimeEvent], str, str]] = {
    "call without result": (
        [EV.user(text="run it"), EV.call("tool-1", event_id="c1", with_refs=True)],
        "unmatched_tool_call",
        "tool-1",
    ),
    "result without call": (
        [
            EV.user(text="run it"),
            EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
        ],
        "unmatched_tool_result",
        "tool-1",
    ),
    "second result": (
        [
            EV.user(text="run it"),
            EV.call("call-1", event_id="c1", with_refs=True),
            EV.response("call-1", "Bash", "ok", event_id="r1", with_refs=True),
            EV.response("call-1", "Bash", "ok", event_id="r2", with_refs=True),
        ],
        "unmatched_tool_result",
        "call-1",
    ),
    "result names another tool": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", "Bash", event_id="c1", with_refs=True),
            EV.response("tool-1", "Write", "ok", event_id="r1", with_refs=True),
        ],
        "tool_id_mismatch",
        "tool-1",
    ),
    "call id reused": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
            EV.call("tool-1", event_id="c2", with_refs=True),
        ],
        "duplicate_tool_call",
        "tool-1",
    ),
    "model speaks before every result": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.call("tool-2", event_id="c2", with_refs=True),
            EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
            EV.text("done", event_id="m1"),
            EV.response("tool-2", "Bash", "ok", event_id="r2", with_refs=True),
        ],
        "tool_exchange_interleaved",
        "tool-2",
    ),
    "new call before every result": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.call("tool-2", event_id="c2", with_refs=True),
            EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
            EV.call("tool-3", event_id="c3", with_refs=True),
        ],
        "tool_exchange_interleaved",
        "tool-2",
    ),
    "hidden result leaves the call dangling": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.response("tool-1", "Bash", "ok", event_id="r1", hidden=True, with_refs=True),
        ],
        "unmatched_tool_call",
        "tool-1",
    ),
    "partial result does not count": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True, partial=True),
        ],
        "unmatched_tool_call",
        "tool-1",
    ),
    "hidden call leaves the result orphaned": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", hidden=True, with_refs=True),
            EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
        ],
        "unmatched_tool_result",
        "tool-1",
    ),
    "deferred user text does not hide a dangling call": (
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.user("and then?", event_id="user-2"),
        ],
        "unmatched_tool_call",
        "tool-1",
    ),
}


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_unpaired_or_interleaved_exchanges_are_refused(exporter: Exporter, case: str) -> None:
    events, reason, tool_call_id = REFUSALS[case]
    with pytest.raises(ProviderExportError) as caught:
        exporter(events)
    error = caught.value
    assert isinstance(error, MakaError)
    assert error.code == "provider_export_invalid"
    assert error.reason == reason
    assert error.detail["reason"] == reason
    assert error.detail["toolCallId"] == tool_call_id
    assert "eventId" in error.detail


@pytest.mark.parametrize("args", [None, [1, 2], "ls"])
def test_anthropic_refuses_non_object_tool_input(args: Any) -> None:
    events = [
        EV.user(text="run it"),
        EV.event(
            event_id="c1",
            role="model",
            author="agent",
            content={"kind": "function_call", "id": "tool-1", "name": "Bash", "args": args},
        ),
        EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
    ]
    with pytest.raises(ProviderExportError) as caught:
        to_anthropic_messages(events)
    assert caught.value.detail == {
        "reason": "tool_input_not_object",
        "toolCallId": "tool-1",
        "eventId": "c1",
    }
    # chat completions carries arguments as a JSON string, whatever their shape
    exported = to_openai_chat_messages(events)[1]["tool_calls"][0]["function"]["arguments"]
    assert exported == canonical_json(args)


# --- a continuation's runtime context ---------------------------------------------------------


def test_continuation_runtime_context_exports_without_a_new_user_message() -> None:
    events = [
        EV.user("run the tests", event_id="user-1"),
        EV.call("tool-1", "Bash", {"command": "npm test"}, event_id="call-1", with_refs=True),
        EV.response(
            "tool-1", "Bash", {"exitCode": 0}, event_id="result-1", is_error=False, with_refs=True
        ),
        EV.terminal("failed", event_id="terminal-1", error_code=None),
    ]
    facts = ContinuationInputs.model_validate(
        {
            "ledgerReadable": True,
            "terminalRepairSucceeded": True,
            "sourceCwd": "/workspace/repo",
            "currentCwd": "/workspace/repo",
            "sourceWorkspaceIdentity": "workspace-1",
            "currentWorkspaceIdentity": "workspace-1",
            "backgroundOperationsSettled": True,
            "availableToolNames": ["Bash"],
            "continuationIdentity": {
                "invocationId": "invocation-2",
                "runId": "run-2",
                "turnId": "turn-2",
            },
        }
    )
    plan = build_continuation_plan(events, facts)
    assert plan.continuation is not None
    context = plan.continuation.runtime_context
    openai = to_openai_chat_messages(context)
    assert [m["role"] for m in openai] == ["user", "assistant", "tool"]
    assert [m for m in openai if m["role"] == "user"] == [
        {"role": "user", "content": "run the tests"}
    ]
    anthropic = to_anthropic_messages(context)
    assert [m["role"] for m in anthropic] == ["user", "assistant", "user"]
    assert anthropic[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "tool-1", "content": '{"exitCode":0}'}
    ]


# --- property: paired histories export paired ------------------------------------------------

JSON_LEAVES = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
ARGS = st.dictionaries(st.sampled_from(["path", "command", "n"]), JSON_VALUES, max_size=3)


class _History:
    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []
        self.calls = 0

    def next_id(self, prefix: str) -> str:
        return f"{prefix}-{len(self.events) + 1}"

    def noise(self, draw: st.DrawFn) -> None:
        """Maybe a fact the model never sees (system, terminal, hidden, partial, empty)."""
        choice = draw(st.integers(0, 6))
        event_id = self.next_id("noise")
        if choice == 1:
            self.events.append(fact(event_id))
        elif choice == 2:
            self.events.append(EV.terminal("completed", event_id=event_id))
        elif choice == 3:
            self.events.append(EV.text("hidden", event_id=event_id, modelVisibility="hidden"))
        elif choice == 4:
            self.events.append(EV.text("parti", event_id=event_id, partial=True))
        elif choice == 5:
            self.events.append(EV.text("", event_id=event_id))


@st.composite
def paired_histories(draw: st.DrawFn) -> tuple[list[RuntimeEvent], int]:
    """A user text, then steps of optional thinking / text / parallel calls, each call answered
    exactly once (results in any order, maybe with errors), with invisible facts anywhere."""
    h = _History()
    h.noise(draw)
    h.events.append(EV.user(draw(st.text(min_size=1, max_size=8)), event_id=h.next_id("user")))
    for step in range(draw(st.integers(0, 4))):
        h.noise(draw)
        if draw(st.booleans()):
            signature = draw(st.none() | st.just("sig"))
            h.events.append(EV.thinking("hmm", event_id=h.next_id("think"), signature=signature))
        if draw(st.booleans()):
            h.events.append(
                EV.text(draw(st.text(min_size=1, max_size=8)), event_id=h.next_id("model"))
            )
        names = draw(st.lists(st.sampled_from(["Bash", "Read", "Write"]), max_size=3))
        ids = [f"tool-{step}-{n}" for n in range(len(names))]
        for call_id, name in zip(ids, names, strict=True):
            h.events.append(
                EV.call(call_id, name, draw(ARGS), event_id=h.next_id("call"), with_refs=True)
            )
            h.noise(draw)
        h.calls += len(ids)
        for n in draw(st.permutations(range(len(ids)))):
            h.noise(draw)
            result = draw(JSON_VALUES)
            is_error = draw(st.none() | st.booleans())
            h.events.append(
                EV.response(
                    ids[n],
                    names[n],
                    result,
                    event_id=h.next_id("result"),
                    is_error=is_error,
                    with_refs=True,
                )
            )
        if draw(st.booleans()):
            h.events.append(EV.user("more", event_id=h.next_id("user")))
    h.noise(draw)
    return h.events, h.calls


def _check_openai(messages: list[ProviderMessage], calls: int) -> None:
    assert messages[0]["role"] == "user"
    call_ids = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    result_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(call_ids) == calls
    assert Counter(call_ids) == Counter(result_ids)
    assert all(n == 1 for n in Counter(call_ids).values())
    for i, message in enumerate(messages):
        step_ids = [c["id"] for c in message.get("tool_calls", [])]
        following = messages[i + 1 : i + 1 + len(step_ids)]
        assert sorted(m.get("tool_call_id", "") for m in following) == sorted(step_ids)


def _check_anthropic(messages: list[ProviderMessage], calls: int) -> None:
    assert messages[0]["role"] == "user"
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in pairwise(roles))

    def ids(message: ProviderMessage, kind: str, key: str) -> list[str]:
        return [b[key] for b in message["content"] if b["type"] == kind]

    uses = [i for m in messages for i in ids(m, "tool_use", "id")]
    results = [i for m in messages for i in ids(m, "tool_result", "tool_use_id")]
    assert len(uses) == calls
    assert Counter(uses) == Counter(results)
    assert all(n == 1 for n in Counter(uses).values())
    for i, message in enumerate(messages):
        step_uses = ids(message, "tool_use", "id")
        if step_uses:
            answer = messages[i + 1]
            assert sorted(ids(answer, "tool_result", "tool_use_id")) == sorted(step_uses)
            kinds = [b["type"] for b in answer["content"]]
            assert kinds == sorted(kinds, key=lambda k: k != "tool_result")  # results first


@given(paired_histories())
def test_paired_histories_export_every_call_with_exactly_one_result(
    generated: tuple[list[RuntimeEvent], int],
) -> None:
    events, calls = generated
    _check_openai(to_openai_chat_messages(events), calls)
    _check_anthropic(to_anthropic_messages(events), calls)


@given(paired_histories(), st.data())
def test_dropping_any_call_or_result_is_refused(
    generated: tuple[list[RuntimeEvent], int], data: st.DataObject
) -> None:
    events, _ = generated
    tool_events = [n for n, e in enumerate(events) if e.function_call or e.function_response]
    if not tool_events:
        return
    drop = data.draw(st.sampled_from(tool_events))
    mutilated = events[:drop] + events[drop + 1 :]
    for exporter in (to_openai_chat_messages, to_anthropic_messages):
        with pytest.raises(ProviderExportError) as caught:
            exporter(mutilated)
        expected = (
            {"unmatched_tool_result"}
            if events[drop].function_call
            else {"unmatched_tool_call", "tool_exchange_interleaved"}
        )
        assert caught.value.reason in expected
