"""Lone surrogates are refused wherever free-form JSON enters the store, keys included.

Why keys matter: pydantic's JSON serialisation rewrites a lone-surrogate object key to U+FFFD
before any later strict check, so ``{"\\ud800": 1, "\\udc00": 2}`` became ``{"\\ufffd": 2}``:
two keys collapsed into one and a value was silently lost. Every case here is refused with its
typed error naming the field, on a real SQLite file whose rows and bytes stay unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.app import RuntimeApplication
from maka_es.errors import (
    InvalidRunHeaderError,
    InvalidRuntimeEventError,
    MakaError,
    NonStrictJsonError,
)
from maka_es.testing.builders import Events, LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.wire.events import RuntimeEvent

#: Two distinct keys that both become "\ufffd" under lossy encoding.
COLLIDING = {"\ud800": 1, "\udc00": 2}  # noqa: F601 - distinct keys; ruff folds surrogates
assert len(COLLIDING) == 2


def _event(ledger: LedgerBuilder, **changes: Any) -> dict[str, Any]:
    event = Events.wire(ledger.spine, ts=5000).text("x", event_id="bad-1")
    event.update(changes)
    return event


def _call(args: Any) -> dict[str, Any]:
    return {"kind": "function_call", "id": "c1", "name": "Bash", "args": args}


EVENTS: list[tuple[str, dict[str, Any], str]] = [
    ("args keys collide", {"content": _call(COLLIDING)}, "content.args"),
    ("nested args key", {"content": _call({"k": [{"x\udfff": True}]})}, "content.args"),
    ("args string value", {"content": _call({"k": "a\ud800"})}, "content.args"),
    (
        "result key",
        {
            "role": "tool",
            "author": "tool",
            "content": {
                "kind": "function_response",
                "id": "c1",
                "name": "Bash",
                "result": {"out": {"\udbff": "lost"}},
            },
        },
        "content.result",
    ),
    (
        "text origin key",
        {"content": {"kind": "text", "text": "x", "origin": {"\ud83d": 1}}},
        "content.origin",
    ),
    (
        "error details key",
        {"content": {"kind": "error", "message": "m", "details": {"\udc00": "d"}}},
        "content.details",
    ),
    ("stateDelta key", {"actions": {"stateDelta": {"a": COLLIDING}}}, "actions.stateDelta"),
    ("artifactDelta key", {"actions": {"artifactDelta": COLLIDING}}, "actions.artifactDelta"),
    ("tokenUsage key", {"actions": {"tokenUsage": {"\ud800in": 3}}}, "actions.tokenUsage"),
    (
        "permission request args key",
        {
            "actions": {
                "permissionRequest": {
                    "kind": "tool_permission",
                    "requestId": "p1",
                    "toolUseId": "c1",
                    "toolName": "Bash",
                    "category": "shell",
                    "reason": "r",
                    "args": COLLIDING,
                    "rememberForTurnAllowed": False,
                }
            }
        },
        "actions.permissionRequest",  # the nested model's own error names ``args``
    ),
]


@pytest.fixture
def app(store_app: RuntimeApplication) -> RuntimeApplication:
    store_app.open_session("s1", "/workspace")
    store_app.ledger.create_run(run_header())
    ledger = LedgerBuilder()
    ledger.user()
    store_app.ledger.append_events("r1", ledger.events)
    return store_app


def _refused(
    app: RuntimeApplication, command: Callable[[], object], error: type[MakaError]
) -> MakaError:
    before = store_snapshot(app)
    with pytest.raises(error) as info:
        command()
    assert store_snapshot(app) == before
    return info.value


@pytest.mark.parametrize(
    ("changes", "field"), [(c, f) for _, c, f in EVENTS], ids=[n for n, _, _ in EVENTS]
)
def test_append_refuses_lone_surrogates_in_free_form_json(
    app: RuntimeApplication, changes: dict[str, Any], field: str
) -> None:
    event = _event(LedgerBuilder(), **changes)
    error = _refused(app, lambda: app.ledger.append_event("r1", event), InvalidRuntimeEventError)
    assert error.code == "invalid_runtime_event"
    assert isinstance(error, InvalidRuntimeEventError)
    assert error.field == field
    assert "lone surrogate" in str(error)
    str(error).encode("utf-8")  # the message itself can be logged


def test_json_text_with_escaped_lone_surrogate_keys_is_refused() -> None:
    text = json.dumps(_event(LedgerBuilder(), content=_call(COLLIDING)))
    assert "\\ud800" in text  # escaped on the wire, a lone surrogate once parsed
    with pytest.raises(InvalidRuntimeEventError) as info:
        RuntimeEvent.model_validate_json(text)
    assert info.value.field == "content.args"


def test_tool_t1_refuses_a_call_with_lone_surrogate_keys(app: RuntimeApplication) -> None:
    call = LedgerBuilder().call("c1", "Bash", {"env": COLLIDING})
    error = _refused(
        app, lambda: app.tool_journal.commit_tool_prepared("r1", call), InvalidRuntimeEventError
    )
    assert error.code == "invalid_runtime_event"


def test_tool_metadata_with_lone_surrogate_keys_is_refused(app: RuntimeApplication) -> None:
    call = LedgerBuilder().call("c1", "Bash", {"command": "ls"})
    error = _refused(
        app,
        lambda: app.tool_journal.commit_tool_prepared("r1", call, metadata={"digests": COLLIDING}),
        NonStrictJsonError,
    )
    assert error.code == "non_strict_json"
    assert app.tool_journal.tool_operations("r1") == ()


def test_run_header_free_form_fields_refuse_lone_surrogates(app: RuntimeApplication) -> None:
    header = run_header(Spine(run_id="r2", invocation_id="i2"), collaborationMode=COLLIDING)
    error = _refused(app, lambda: app.ledger.create_run(header), InvalidRunHeaderError)
    assert error.code == "invalid_run_header"
    assert isinstance(error, InvalidRunHeaderError)
    assert error.field == "collaborationMode"
    patch = {"runComposition": {"nested": {"\udfff": 1}}}
    error = _refused(app, lambda: app.ledger.update_run_header("r1", patch), InvalidRunHeaderError)
    assert isinstance(error, InvalidRunHeaderError)
    assert error.field == "runComposition"


def test_a_fact_the_transcoder_cannot_encode_is_a_typed_refusal(app: RuntimeApplication) -> None:
    """The last line of defence: any stored string that UTF-8 cannot hold (here a session's
    cwd) is refused as ``non_strict_json`` before the write, never a raw UnicodeEncodeError."""
    error = _refused(app, lambda: app.open_session("s2", "/work\udc00space"), NonStrictJsonError)
    assert error.code == "non_strict_json"


def test_well_formed_astral_keys_are_kept_exactly(app: RuntimeApplication) -> None:
    args = {"\U0001f600": 1, "\ufffd": 2, "a": {"\U0001f600\U0001f601": [3]}}
    app.ledger.append_event("r1", LedgerBuilder(prefix="ok-").call("c1", "Bash", args))
    content = app.read_run_events("r1")[-1].function_call
    assert content is not None
    assert content.args == args


_KEY_CHARS = st.characters(min_codepoint=0xD7FE, max_codepoint=0xE001, exclude_categories=())
_KEYS = st.text(_KEY_CHARS | st.sampled_from("ab"), max_size=3)


@given(args=st.dictionaries(_KEYS, st.integers(0, 9), max_size=4))
def test_appended_args_are_stored_exactly_or_refused(args: dict[str, int]) -> None:
    """Never a third outcome: whatever the keys, the committed args equal the given ones, or
    the append is refused and nothing is stored."""
    with RuntimeApplication.in_memory() as memory:
        memory.open_session("s1", "/workspace")
        memory.ledger.create_run(run_header())
        try:
            memory.ledger.append_event("r1", LedgerBuilder().call("c1", "Bash", args))
        except InvalidRuntimeEventError:
            assert memory.read_run_events("r1") == []
            return
        (event,) = memory.read_run_events("r1")
        assert event.function_call is not None
        assert event.function_call.args == args
