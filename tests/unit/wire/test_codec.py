"""Wire-compatibility tests for the canonical codec.

The digests and identities pinned here are frozen by the reference runtime
(docs/reference/wire.md#vectors): a mismatch means a Python-written ledger or continuation claim
would not validate there.
"""

from __future__ import annotations

import copy
import json
import math
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.continuation.model.boundary import (
    build_segment,
    manifest_digest,
    prefix_digest,
    prefix_event_wire,
    provider_replay_digest,
)
from maka_es.errors import MakaError, NonStrictJsonError
from maka_es.providers.replay_items import format_text_with_inline_refs, provider_replay_item
from maka_es.wire.codec import (
    MAX_JSON_DEPTH,
    CodecInputError,
    JsonValue,
    canonical_args_hash,
    canonical_json,
    is_sha256_digest,
    js_number,
    operation_id_for,
    sha256_digest,
)

# --------------------------------------------------------------------------------------------
# docs/reference/wire.md#vectors
# --------------------------------------------------------------------------------------------

ARGS_HASH_VECTORS: list[tuple[str, JsonValue, str]] = [
    (
        "Write",
        {"content": "after", "path": "notes.txt"},
        "763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9",
    ),
    (
        "X",
        {"path": "prepared.txt"},
        "b10a9dfa507aac2940a27bdd3670fd7582d52705de906eb13c1ab37b553031e1",
    ),
    (
        "X",
        {"required": ["b", "a"]},
        "0002fcd132216e3442d4ab7579d9659019019c6b7000456fbef198b7ae53ee43",
    ),
    (
        "X",
        {"nested": {"enum": ["z", "a"]}},
        "a1545a7c4bb9197d99d49327067d31da23188091e1bf6641e2a1698d9a906eca",
    ),
    (
        "X",
        {"__proto__": {"admin": True}},
        "ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9",
    ),
    ("X", {}, "ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9"),
    (
        "X",
        {"ordinaryArray": ["b", "a"]},
        "4b6be45e18e1a7c6566dd72a0fa0c01b0f059bb3128ecd7a3265d5221f7b8351",
    ),
    (
        "Bash",
        {"command": "do-it"},
        "83f3a7d12c96b30b1e7b8e8afc4e13829dc19a0fa0f893647a0e31375b0a0669",
    ),
    (
        "X",
        {"enum": ["b", "B", "a", "A"]},
        "50938916dcb00c875cdf2693978a4cb887f09cb708e016c64ec33db685ccb65e",
    ),
    (
        "X",
        {"b": "é", "a": [3, 1.5, 1e21]},
        "e764a3824cf68b2b91f53ed61662c8a4037d7cc4218ae373c53b0def68b21c19",
    ),
]


@pytest.mark.parametrize(("tool_name", "args", "expected"), ARGS_HASH_VECTORS)
def test_canonical_args_hash_vectors(tool_name: str, args: JsonValue, expected: str) -> None:
    assert canonical_args_hash(tool_name, args) == f"sha256:{expected}"


def test_operation_id_vector() -> None:
    assert operation_id_for("i1", "c1") == "toolop_d0f988070ecbf20ace41f566372d2e9a"


def test_operation_id_is_json_of_pair_with_raw_non_ascii() -> None:
    expected = sha256_digest('["é\\"","c"]'.encode())[len("sha256:") :][:32]
    assert operation_id_for('é"', "c") == f"toolop_{expected}"


@pytest.mark.parametrize(("inv", "call"), [("", "c1"), ("i1", "")])
def test_operation_id_requires_both_ids(inv: str, call: str) -> None:
    with pytest.raises(CodecInputError):
        operation_id_for(inv, call)


def _identity(sid: str, iid: str, rid: str, tid: str) -> dict[str, str]:
    return {"sessionId": sid, "invocationId": iid, "runId": rid, "turnId": tid}


LEGACY_IDENTITY = _identity("session-1", "invocation-run-legacy", "run-legacy", "turn-run-legacy")
LEGACY_DIGEST = "sha256:d4c8211024788a3fd7554a644f6983f6af088eeb050404f507c76a519080d7ca"


def _legacy_event(origin_kind: str) -> dict[str, JsonValue]:
    return {
        "id": "event-legacy",
        **LEGACY_IDENTITY,
        "ts": 1,
        "partial": False,
        "role": "user",
        "author": "user",
        "content": {
            "kind": "text",
            "text": "automated prompt",
            "origin": {"kind": origin_kind, "automationId": "automation-1"},
        },
    }


@pytest.mark.parametrize("origin_kind", ["automation", "legacy_automation"])
def test_prefix_digest_frozen_automation_vector(origin_kind: str) -> None:
    # The reference decodes the released origin to ``legacy_automation`` and re-encodes it as
    # ``automation`` for hashing; both spellings must land on the frozen digest.
    event = _legacy_event(origin_kind)
    snapshot = copy.deepcopy(event)
    assert prefix_digest(LEGACY_IDENTITY, [(1, event)]) == LEGACY_DIGEST
    assert event == snapshot


def test_prefix_event_wire_rewrites_only_legacy_automation_text_origin() -> None:
    legacy = _legacy_event("legacy_automation")
    rewritten = prefix_event_wire(legacy)
    assert rewritten == _legacy_event("automation")
    assert legacy == _legacy_event("legacy_automation")  # not mutated
    other = _legacy_event("automation")
    assert prefix_event_wire(other) is other


S1 = _identity("s1", "i1", "r1", "t1")
GO_USER: dict[str, JsonValue] = {
    "id": "user",
    **S1,
    "ts": 1,
    "partial": False,
    "role": "user",
    "author": "user",
    "content": {"kind": "text", "text": "go"},
}
GO_TERMINAL: dict[str, JsonValue] = {
    "id": "term",
    **S1,
    "ts": 1,
    "partial": False,
    "role": "system",
    "author": "system",
    "status": "failed",
    "actions": {"endInvocation": True},
}
GO_ROWS: list[tuple[int, dict[str, JsonValue]]] = [(1, GO_USER), (2, GO_TERMINAL)]


def test_go_vector_prefix_digest() -> None:
    expected = "sha256:0233d312baaacc040de803edaf225e284b75dac57bf5812640c96255f1dadf0c"
    assert prefix_digest(S1, GO_ROWS) == expected


def test_go_vector_manifest_digest() -> None:
    segment = build_segment(S1, GO_ROWS)
    assert segment == {
        "protocol": "runtime_prefix_segment_v1",
        "identity": S1,
        "position": {"lastEventSeq": 2, "eventCount": 2, "lastEventId": "term"},
        "prefixDigest": "sha256:0233d312baaacc040de803edaf225e284b75dac57bf5812640c96255f1dadf0c",
    }
    expected = "sha256:1cc9ef1e56462052c17dfa2a88417e69540af89138444cf9d4ac508200e71a04"
    assert manifest_digest([segment]) == expected


def test_go_vector_provider_replay_digest() -> None:
    items = [i for i in (provider_replay_item(e) for _, e in GO_ROWS) if i is not None]
    assert items == [{"kind": "text", "role": "user", "content": "go", "eventId": "user", "ts": 1}]
    expected = "sha256:b4e2ce82a65d97773350b596b375266bc5e72602b040426e6f590204835a9cac"
    assert provider_replay_digest(items) == expected


# --------------------------------------------------------------------------------------------
# Prefix / manifest refusals
# --------------------------------------------------------------------------------------------


def _event(event_id: str, identity: dict[str, str], **extra: JsonValue) -> dict[str, JsonValue]:
    base: dict[str, JsonValue] = {
        "id": event_id,
        **identity,
        "ts": 1,
        "partial": False,
        "role": "user",
        "author": "user",
        "content": {"kind": "text", "text": event_id},
    }
    base.update(extra)
    return base


def test_prefix_digest_is_key_order_independent() -> None:
    first = _event("e1", S1, content={"kind": "text", "text": "hi", "displayText": "hi"})
    reordered = dict(reversed(list(first.items())))
    reordered["content"] = {"displayText": "hi", "text": "hi", "kind": "text"}
    assert prefix_digest(S1, [(1, first)]) == prefix_digest(S1, [(1, reordered)])


@pytest.mark.parametrize(
    "rows",
    [
        [(1, _event("e1", S1)), (3, _event("e3", S1))],
        [(0, _event("e0", S1))],
        [(2, _event("e2", S1))],
    ],
)
def test_prefix_digest_refuses_seq_gaps(rows: list[tuple[int, dict[str, JsonValue]]]) -> None:
    with pytest.raises(CodecInputError, match="event_seq gap") as info:
        prefix_digest(S1, rows)
    assert info.value.code == "prefix_invalid"
    assert isinstance(info.value, MakaError)
    assert isinstance(info.value, ValueError)


def test_prefix_digest_refuses_partial_rows() -> None:
    with pytest.raises(CodecInputError, match="partial snapshot"):
        prefix_digest(S1, [(1, _event("p1", S1, partial=True))])


def test_prefix_digest_refuses_identity_mismatch() -> None:
    foreign = _identity("s1", "i1", "r2", "t1")
    with pytest.raises(CodecInputError, match="identity mismatch"):
        prefix_digest(S1, [(1, _event("e1", foreign))])


def test_prefix_digest_refuses_bad_identity() -> None:
    with pytest.raises(CodecInputError):
        prefix_digest({"sessionId": "s1", "invocationId": "i1", "runId": "r1"}, [])
    with pytest.raises(CodecInputError):
        prefix_digest({**S1, "turnId": ""}, [])


def test_build_segment_refuses_empty_prefix() -> None:
    with pytest.raises(CodecInputError, match="empty"):
        build_segment(S1, [])


def _segment(run: str, session: str = "session-1") -> dict[str, JsonValue]:
    identity = _identity(session, f"invocation-{run}", run, f"turn-{run}")
    return build_segment(identity, [(1, _event(f"event-{run}", identity))])


def test_manifest_digest_binds_segment_order() -> None:
    a, b = _segment("run-a"), _segment("run-b")
    assert manifest_digest([a, b]) != manifest_digest([b, a])
    assert is_sha256_digest(manifest_digest([a, b]))


def test_manifest_digest_refuses_cross_session() -> None:
    with pytest.raises(CodecInputError, match="same session"):
        manifest_digest([_segment("run-a"), _segment("run-b", session="session-2")])


@pytest.mark.parametrize("key", ["runId", "invocationId", "turnId"])
def test_manifest_digest_refuses_duplicate_lineage_ids(key: str) -> None:
    first_identity = _identity("session-1", "invocation-a", "run-a", "turn-a")
    second_identity = {**_identity("session-1", "invocation-b", "run-b", "turn-b")}
    second_identity[key] = first_identity[key]
    first = build_segment(first_identity, [(1, _event("event-a", first_identity))])
    second = build_segment(second_identity, [(1, _event("event-b", second_identity))])
    with pytest.raises(CodecInputError, match=f"duplicate {key}"):
        manifest_digest([first, second])


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.update(prefixDigest="sha256:" + "A" * 64),
        lambda s: s.update(protocol="runtime_prefix_segment_v2"),
        lambda s: s.update(extra=1),
        lambda s: s["position"].update(eventCount=5),
        lambda s: s["position"].update(lastEventId=""),
    ],
)
def test_manifest_digest_refuses_malformed_segments(mutate: Any) -> None:
    segment = copy.deepcopy(_segment("run-a"))
    mutate(segment)
    with pytest.raises(CodecInputError) as info:
        manifest_digest([segment])
    assert info.value.code == "boundary_invalid"


def test_manifest_digest_refuses_empty() -> None:
    with pytest.raises(CodecInputError):
        manifest_digest([])


# --------------------------------------------------------------------------------------------
# Provider replay items
# --------------------------------------------------------------------------------------------


def test_replay_item_model_text_thinking_call_and_result() -> None:
    model_text = _event(
        "m1", S1, role="model", author="agent", refs={"providerEventId": "msg_1"}
    ) | {"content": {"kind": "text", "text": "hello", "providerOptions": {"a": {"b": 1}}}}
    assert provider_replay_item(model_text) == {
        "kind": "text",
        "role": "assistant",
        "content": "hello",
        "providerOptions": {"a": {"b": 1}},
        "stepId": "msg_1",
        "eventId": "m1",
        "ts": 1,
    }
    thinking = _event(
        "th",
        S1,
        role="model",
        author="agent",
        content={"kind": "thinking", "text": "hmm", "signature": "sig"},
        refs={"storedMessageId": "stored_1"},
    )
    assert provider_replay_item(thinking) == {
        "kind": "thinking",
        "text": "hmm",
        "signature": "sig",
        "stepId": "stored_1",
        "eventId": "th",
        "ts": 1,
    }
    call = _event(
        "c",
        S1,
        role="model",
        author="agent",
        content={"kind": "function_call", "id": "call_1", "name": "Write", "args": {"p": 1}},
        refs={"operationId": "toolop_x", "toolCallId": "call_1", "stepId": "msg_1"},
    )
    assert provider_replay_item(call) == {
        "kind": "tool_call",
        "toolCallId": "call_1",
        "toolName": "Write",
        "input": {"p": 1},
        "stepId": "msg_1",
        "eventId": "c",
        "ts": 1,
    }
    result = _event(
        "r",
        S1,
        role="tool",
        author="tool",
        content={
            "kind": "function_response",
            "id": "call_1",
            "name": "Write",
            "result": {"kind": "text", "text": "ok"},
            "isError": True,
        },
    )
    assert provider_replay_item(result) == {
        "kind": "tool_result",
        "toolCallId": "call_1",
        "toolName": "Write",
        "output": {"kind": "text", "text": "ok"},
        "isError": True,
        "eventId": "r",
        "ts": 1,
    }
    projected = provider_replay_item(result, project_tool_output=lambda name, out: f"{name}!")
    assert projected is not None
    assert projected["output"] == "Write!"


def test_replay_item_provider_executed_uses_provider_output() -> None:
    result = _event(
        "r",
        S1,
        role="tool",
        author="tool",
        content={
            "kind": "function_response",
            "id": "ws",
            "name": "web_search",
            "result": "stored",
            "providerExecuted": True,
            "providerOutput": {"raw": 1},
        },
    )
    item = provider_replay_item(result)
    assert item is not None
    assert item["output"] == {"raw": 1}
    assert item["providerExecuted"] is True
    assert item["isError"] is False


def test_replay_item_steering_and_quotes() -> None:
    event = _event(
        "u2",
        S1,
        content={
            "kind": "text",
            "text": "also this",
            "steering": True,
            "quotes": [{"label": 'say "x"', "text": "quoted"}],
        },
    )
    item = provider_replay_item(event)
    assert item == {
        "kind": "text",
        "role": "user",
        "content": "The user sent a message while you were working:\n<user_query>\n"
        "also this\n\n<quoted_excerpt label=\"say 'x'\">\nquoted\n</quoted_excerpt>"
        "\n</user_query>",
        "steering": {"eventId": "u2"},
        "eventId": "u2",
        "ts": 1,
    }


def test_format_text_with_attachments() -> None:
    content: dict[str, JsonValue] = {
        "kind": "text",
        "text": "see",
        "attachments": [
            {
                "name": "a.png",
                "mimeType": "image/png",
                "ref": {"kind": "session_file", "relativePath": "art_1"},
            },
            {
                "name": "b.txt",
                "mimeType": "text/plain",
                "ref": {"kind": "workspace_file", "relativePath": "src/b.txt"},
            },
        ],
    }
    assert format_text_with_inline_refs(content) == (
        "see\n\n<attachment>\n"
        'Read argument: {"ref":"maka://runtime/attachments/art_1"}\n'
        "This is a Session resource, not a workspace file. Use the ref above; never use the "
        "display name as a path.\n"
        'name: "a.png"\nmime_type: "image/png"\n</attachment>\n'
        '<attachment>\nRead argument: {"path":"src/b.txt"}\nname: "b.txt"\n'
        'mime_type: "text/plain"\n</attachment>'
    )


@pytest.mark.parametrize(
    "event",
    [
        _event("p", S1, partial=True),
        _event("h", S1, modelVisibility="hidden"),
        _event("e", S1, content={"kind": "text", "text": ""}),
        _event("x", S1, content={"kind": "error", "message": "boom"}),
        _event("s", S1, role="system", author="system"),
        _event("t", S1, role="tool", author="tool"),
        {k: v for k, v in _event("n", S1).items() if k != "content"},
    ],
)
def test_replay_item_skips_non_replayable_events(event: dict[str, JsonValue]) -> None:
    assert provider_replay_item(event) is None


# --------------------------------------------------------------------------------------------
# canonical_json: numbers, strings, key order
# --------------------------------------------------------------------------------------------

NUMBER_TABLE: list[tuple[int | float, str]] = [
    (1.0, "1"),
    (0, "0"),
    (-7, "-7"),
    (1e21, "1e+21"),
    (1e20, "100000000000000000000"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (1e-6, "0.000001"),
    (1.234e-6, "0.000001234"),
    # JS prints values below 1e21 in fixed notation: (123456789012345680000).toString()
    (123456789012345680000.0, "123456789012345680000"),
    (1.2345678901234568e21, "1.2345678901234568e+21"),
    (0.1, "0.1"),
    (-0.0, "0"),
    (100.5, "100.5"),
    (-2.5e-10, "-2.5e-10"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (2**53, "9007199254740992"),
    (-(2**53), "-9007199254740992"),
    (2.0**60, "1152921504606847000"),
    (float(2**53), "9007199254740992"),
]


@pytest.mark.parametrize(("value", "expected"), NUMBER_TABLE)
def test_js_number_formatting(value: int | float, expected: str) -> None:
    assert canonical_json(value) == expected
    assert js_number(value) == expected


def test_large_ints_only_when_javascript_prints_them_back_unchanged() -> None:
    # json.loads of our own output for 9007199254740994.0 / 1e20 yields these ints.
    assert canonical_json(9007199254740994) == "9007199254740994"
    assert canonical_json(10**20) == "100000000000000000000"
    for refused in (2**53 + 1, 2**60, 10**400):
        with pytest.raises(NonStrictJsonError):
            canonical_json(refused)


def test_bool_is_not_a_number() -> None:
    assert canonical_json([True, False, None]) == "[true,false,null]"
    with pytest.raises(NonStrictJsonError):
        js_number(True)


ESCAPE_TABLE: list[tuple[str, str]] = [
    ('"', '"\\""'),
    ("\\", '"\\\\"'),
    ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
    ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
    ("\x7f", '"\x7f"'),
    ("\u2028\u2029", '"\u2028\u2029"'),
    ("é😀/<>&'", '"é😀/<>&\'"'),
]


@pytest.mark.parametrize(("value", "expected"), ESCAPE_TABLE)
def test_string_escaping(value: str, expected: str) -> None:
    assert canonical_json(value) == expected


def test_no_whitespace_and_raw_non_ascii() -> None:
    assert canonical_json({"b": [1, {"é": "ü"}], "a": None}) == '{"a":null,"b":[1,{"é":"ü"}]}'


def test_keys_sorted_by_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00, which sorts before U+FFFF in UTF-16 even though
    # its code point is larger.
    value = {"\uffff": 1, "\U0001f600": 2, "z": 3, "\u00e9": 4, "A": 5}
    assert canonical_json(value) == '{"A":5,"z":3,"é":4,"😀":2,"\uffff":1}'


def test_array_index_keys_come_first_like_javascript_objects() -> None:
    value = {"b": 1, "10": 2, "9": 3, "01": 4, "4294967295": 5, "4294967294": 6}
    assert canonical_json(value) == ('{"9":3,"10":2,"4294967294":6,"01":4,"4294967295":5,"b":1}')


def test_proto_key_is_data_in_canonical_json_but_dropped_in_args_hash() -> None:
    assert canonical_json({"__proto__": {"a": 1}}) == '{"__proto__":{"a":1}}'
    assert canonical_args_hash("X", {"__proto__": 1, "k": 2}) == canonical_args_hash("X", {"k": 2})
    nested = {"a": [{"__proto__": 1, "b": 2}]}
    assert canonical_args_hash("X", nested) == canonical_args_hash("X", {"a": [{"b": 2}]})


def test_required_and_enum_locale_sort() -> None:
    sorted_hash = canonical_args_hash("X", {"enum": ["a", "A", "b", "B"]})
    assert canonical_args_hash("X", {"enum": ["B", "b", "A", "a"]}) == sorted_hash
    assert canonical_args_hash("X", {"required": ["y", "x"]}) == canonical_args_hash(
        "X", {"required": ["x", "y"]}
    )
    # Only arrays directly under ``required``/``enum`` are collated.
    assert canonical_args_hash("X", {"other": ["b", "a"]}) != canonical_args_hash(
        "X", {"other": ["a", "b"]}
    )
    assert canonical_args_hash("X", {"enum": [["b", "a"]]}) != canonical_args_hash(
        "X", {"enum": [["a", "b"]]}
    )
    # Collation is by the JSON text of each element and is stable: "10" < "2" (no numeric
    # collation), and equal-text elements keep their order.
    assert canonical_args_hash("X", {"enum": [2, 10]}) == canonical_args_hash(
        "X", {"enum": [10, 2]}
    )


def test_args_hash_refuses_non_strict_args_and_empty_tool_name() -> None:
    with pytest.raises(NonStrictJsonError):
        canonical_args_hash("X", {"a": math.nan})
    with pytest.raises(CodecInputError):
        canonical_args_hash("", {})


def test_to_wire_objects_are_encoded_through_to_wire() -> None:
    class Wire:
        def to_wire(self) -> dict[str, JsonValue]:
            return {"b": 1, "a": 2.0}

    assert canonical_json(Wire()) == '{"a":2,"b":1}'
    assert canonical_json({"x": [Wire()]}) == '{"x":[{"a":2,"b":1}]}'


def test_digest_helpers() -> None:
    digest = sha256_digest(b"")
    assert digest == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert is_sha256_digest(digest)
    assert not is_sha256_digest(digest.upper())
    assert not is_sha256_digest(digest[:-1])
    assert not is_sha256_digest(digest + "0")


# --------------------------------------------------------------------------------------------
# Strict-JSON refusals
# --------------------------------------------------------------------------------------------


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


REFUSALS: list[tuple[str, object, str]] = [
    ("nan", {"a": [1, math.nan]}, "/a/1"),
    ("inf", {"a": math.inf}, "/a"),
    ("-inf", [-math.inf], "/0"),
    ("non-str key", {"a": {1: "x"}}, "/a/1"),
    ("tuple", {"t": (1, 2)}, "/t"),
    ("set", {"s": {1}}, "/s"),
    ("bytes", [b"x"], "/0"),
    ("object", {"o/~": object()}, "/o~1~0"),
    ("big int", {"n": 2**60}, "/n"),
    ("negative big int", -(2**53) - 1, ""),
    ("lone surrogate", {"s": "a\ud800"}, "/s"),
    ("lone surrogate key", {"\udc00": 1}, "/\udc00"),
    ("depth 513", _nested(MAX_JSON_DEPTH + 1), "/0" * MAX_JSON_DEPTH),
]


@pytest.mark.parametrize(
    ("value", "path"), [(v, p) for _, v, p in REFUSALS], ids=[n for n, _, _ in REFUSALS]
)
def test_strict_json_refusals(value: object, path: str) -> None:
    with pytest.raises(NonStrictJsonError) as info:
        canonical_json(value)
    assert info.value.code == "non_strict_json"
    assert info.value.detail["path"] == path
    assert (path or "(root)") in str(info.value)


def test_depth_512_is_accepted() -> None:
    assert canonical_json(_nested(MAX_JSON_DEPTH)) == "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH


def test_cycles_are_refused_not_looped() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(NonStrictJsonError):
        canonical_json(cyclic)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

_SAFE = 2**53
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-_SAFE, max_value=_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=30,
)


def _normalise(value: Any) -> Any:
    """Compare numbers by value regardless of int/float (JSON has one number type)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value) if value != 0 else 0.0
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return {k: _normalise(v) for k, v in value.items()}


@given(json_values)
def test_round_trips_through_json_loads(value: JsonValue) -> None:
    assert _normalise(json.loads(canonical_json(value))) == _normalise(value)


@given(json_values)
def test_is_idempotent(value: JsonValue) -> None:
    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    return value


@given(json_values, st.randoms(use_true_random=False))
def test_invariant_under_key_insertion_order(value: JsonValue, rng: random.Random) -> None:
    assert canonical_json(_shuffled(value, rng)) == canonical_json(value)


@given(json_values)
def test_never_mutates_input(value: JsonValue) -> None:
    snapshot = copy.deepcopy(value)
    canonical_json(value)
    canonical_args_hash("T", value)
    assert repr(value) == repr(snapshot)
