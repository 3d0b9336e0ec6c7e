"""Hypothesis strategies for RuntimeEvents, reusable in hosts' own property suites.

Why shipped: a host that wires maka_es into its runtime should be able to generate the same
shapes we test against (valid wire events, tool lifecycles, corrupted variants) without
re-deriving docs/reference/wire.md. Every strategy produces *wire dicts* (what the reference
runtime writes); decode them with ``RuntimeEvent.model_validate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from maka_es.testing.builders import Spine

#: Small alphabet keeps shrinking readable while still covering non-ASCII and escapes.
_TEXT = st.text(
    alphabet=st.sampled_from(list('abcXYZ019 _-"\\\n\té€😀\u2028')), min_size=0, max_size=12
)
_ID = st.text(alphabet=st.sampled_from(list("abcdef0123456789-_")), min_size=1, max_size=10)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)

#: Strict JSON values (what tool args, results and state deltas may hold).
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=12,
)

spines = st.builds(Spine, _ID, _ID, _ID, _ID)


def _envelope(spine: Spine, event_id: str, ts: int, role: str, author: str) -> dict[str, Any]:
    return spine.envelope(event_id, ts, role, author)


#: Draws the body of one event shape onto its envelope (``spine``, ``event_id``, ``ts`` given).
_Shape = Callable[[st.DrawFn, Spine, str, int], dict[str, Any]]


def _user_text(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "user", "user")
    event["content"] = {"kind": "text", "text": draw(_TEXT)}
    return event


def _model_text(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "model", "agent")
    event["content"] = {"kind": "text", "text": draw(_TEXT)}
    event["refs"] = {"providerEventId": draw(_ID)}
    return event


def _thinking(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "model", "agent")
    event["content"] = {"kind": "thinking", "text": draw(_TEXT), "signature": draw(_ID)}
    return event


def _function_call(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "model", "agent")
    event["content"] = {
        "kind": "function_call",
        "id": draw(_ID),
        "name": draw(_ID),
        "args": draw(json_values),
    }
    return event


def _function_response(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "tool", "tool")
    event["content"] = {
        "kind": "function_response",
        "id": draw(_ID),
        "name": draw(_ID),
        "result": draw(json_values),
        "isError": draw(st.booleans()),
    }
    event["actions"] = {"stateDelta": {"durationMs": draw(st.integers(0, 10**6))}}
    return event


def _error(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "system", "system")
    event["content"] = {"kind": "error", "message": draw(_TEXT), "code": draw(_ID)}
    return event


def _permission_request(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "system", "system")
    event["actions"] = {
        "permissionRequest": {
            "kind": "tool_permission",
            "requestId": draw(_ID),
            "toolUseId": draw(_ID),
            "toolName": draw(_ID),
            "category": "file_write",
            "reason": "file_write",
            "args": draw(json_values),
            "rememberForTurnAllowed": draw(st.booleans()),
        }
    }
    return event


def _permission_decision(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "system", "system")
    event["actions"] = {
        "permissionDecision": {
            "requestId": draw(_ID),
            "decision": draw(st.sampled_from(["allow", "deny"])),
        }
    }
    return event


def _terminal(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "system", "system")
    event["status"] = draw(st.sampled_from(["completed", "failed", "aborted", "cancelled"]))
    event["actions"] = {"endInvocation": True}
    return event


def _tool_dispatch(draw: st.DrawFn, spine: Spine, event_id: str, ts: int) -> dict[str, Any]:
    event = _envelope(spine, event_id, ts, "system", "system")
    operation = "toolop_" + draw(st.text(alphabet="0123456789abcdef", min_size=32, max_size=32))
    call_id = draw(_ID)
    event["actions"] = {
        "toolDispatch": {
            "protocol": "t1_after_preflight_v1",
            "operationId": operation,
            "providerToolCallId": call_id,
            "toolName": draw(_ID),
            "canonicalArgsHash": "sha256:"
            + draw(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)),
            "recoveryMode": draw(st.sampled_from(_RECOVERY_MODES)),
        }
    }
    event["refs"] = {"operationId": operation, "toolCallId": call_id}
    return event


_RECOVERY_MODES = [
    "replay_safe",
    "idempotent",
    "reconcile",
    "reattach",
    "outcome_unknown",
    "never_auto_retry",
]

#: Every shape ``runtime_event_dicts`` draws from, in the order Hypothesis shrinks towards.
_SHAPES: dict[str, _Shape] = {
    "user": _user_text,
    "model_text": _model_text,
    "thinking": _thinking,
    "call": _function_call,
    "response": _function_response,
    "error": _error,
    "permission": _permission_request,
    "decision": _permission_decision,
    "terminal": _terminal,
    "dispatch": _tool_dispatch,
}


@st.composite
def runtime_event_dicts(draw: st.DrawFn, spine: Spine | None = None) -> dict[str, Any]:
    """One valid wire event of any shape in docs/reference/wire.md#examples (ordinary or tool
    lane)."""
    spine = spine or draw(spines)
    event_id = draw(_ID)
    ts = draw(st.integers(min_value=0, max_value=2**45))
    kind = draw(st.sampled_from(list(_SHAPES)))
    return _SHAPES[kind](draw, spine, event_id, ts)


def shuffled_keys(value: Any, permutation_seed: int) -> Any:
    """The same JSON value with every object's keys in another (deterministic) order."""
    if isinstance(value, dict):
        keys = list(value)
        if keys:
            shift = permutation_seed % len(keys)
            keys = list(reversed(keys[shift:] + keys[:shift]))
        return {key: shuffled_keys(value[key], permutation_seed + 1) for key in keys}
    if isinstance(value, list):
        return [shuffled_keys(item, permutation_seed + 1) for item in value]
    return value
