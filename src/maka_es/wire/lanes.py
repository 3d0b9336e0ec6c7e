"""Semantic lanes of tool facts: the one classification every writer and reader uses.

The lanes and their envelopes: docs/reference/wire.md#lanes.

Why strict: a tool fact with a sloppy envelope (a partial call, a dispatch that is also a
terminal, a response carrying extra actions) is ambiguous evidence. Instead of guessing which
reading was meant, the event is classified as a ``semantic_lane_conflict`` and treated as
corruption by the resolver and refused by the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal, get_args

from maka_es.wire.base import WireModel
from maka_es.wire.events import (
    RECONCILE_RESULT_KIND,
    FunctionCallContent,
    FunctionResponseContent,
    RuntimeEvent,
)

Lane = Literal[
    "function_call",
    "function_response",
    "tool_dispatch",
    "reconcile_result",
    "recovery_decision",
    "ordinary",
]

TOOL_LANES: frozenset[str] = frozenset(
    {"function_call", "function_response", "tool_dispatch", "reconcile_result", "recovery_decision"}
)

_CALL_STATE_KEYS = frozenset({"activityKind", "displayName", "intent"})
_DISPATCH_REF_SETS = (
    frozenset({"operationId", "toolCallId"}),
    frozenset({"operationId", "toolCallId", "parentToolCallId", "parentOperationId"}),
)
_RECOVERY_REF_SET = frozenset({"operationId", "toolCallId"})
_STATE_DELTA = frozenset({"stateDelta"})
_ONLY = {key: frozenset({key}) for key in ("toolDispatch", "toolRecovery")}


@dataclass(frozen=True, slots=True)
class LaneClassification:
    """The lane an event belongs to, or why it belongs to none (``conflict``)."""

    lane: Lane
    conflict: str | None = None

    @property
    def is_conflict(self) -> bool:
        return self.conflict is not None

    @property
    def is_tool_lane(self) -> bool:
        return self.lane in TOOL_LANES


def _triggers(event: RuntimeEvent) -> list[Lane]:
    lanes: list[Lane] = []
    if isinstance(event.content, FunctionCallContent):
        lanes.append("function_call")
    if isinstance(event.content, FunctionResponseContent):
        lanes.append("function_response")
    actions = event.actions
    if actions is not None:
        if actions.tool_dispatch is not None:
            lanes.append("tool_dispatch")
        if actions.tool_recovery is not None:
            kind = actions.tool_recovery.kind
            lanes.append(
                "reconcile_result" if kind == RECONCILE_RESULT_KIND else "recovery_decision"
            )
    return lanes


def _common_envelope_problem(event: RuntimeEvent) -> str | None:
    if event.partial:
        return "partial tool fact"
    if event.status is not None:
        return "tool fact carries a status"
    if event.branch is not None:
        return "branch-qualified tool fact"
    return None


def _set_keys(model: WireModel) -> frozenset[str]:
    """camelCase keys that were actually given on a wire model: the keys of its ``to_wire()``
    (which dumps exactly the set fields by alias), read from the fields without dumping, since
    every reload classifies every event."""
    aliases = _aliases(type(model))
    return frozenset(aliases[name] for name in model.model_fields_set)


def _given_exactly(model: WireModel, keys: frozenset[str]) -> bool:
    """``_set_keys(model) == keys``, compared on field names so no set is built per event
    (the fold classifies every tool event; ADR 0034)."""
    return model.model_fields_set == _field_names(type(model), keys)


@cache
def _field_names(model_type: type[WireModel], keys: frozenset[str]) -> frozenset[str]:
    """The field names whose wire keys are ``keys``; a key the model does not have makes a
    set no ``fields_set`` can equal (it holds field names only)."""
    aliases = _aliases(model_type)
    names = frozenset(name for name, alias in aliases.items() if alias in keys)
    return names if len(names) == len(keys) else frozenset({"<no such field>"})


@cache
def _aliases(model_type: type[WireModel]) -> dict[str, str]:
    """Field name -> wire key of one wire model class (fixed once the class exists)."""
    return {name: info.alias or name for name, info in model_type.model_fields.items()}


def _call_problem(event: RuntimeEvent) -> str | None:
    if event.role != "model" or event.author != "agent":
        return "function_call must be role=model author=agent"
    if event.actions is not None:
        if not _given_exactly(event.actions, _STATE_DELTA):
            return "function_call actions must be absent or exactly {stateDelta}"
        delta = event.actions.state_delta
        # The reference scanner: a non-empty delta of activityKind/displayName/intent strings.
        if (
            not delta
            or not set(delta) <= _CALL_STATE_KEYS
            or any(not isinstance(value, str) for value in delta.values())
        ):
            return (
                "function_call stateDelta must be non-empty activityKind/displayName/intent strings"
            )
    return None


def _response_problem(event: RuntimeEvent) -> str | None:
    if event.role != "tool" or event.author != "tool":
        return "function_response must be role=tool author=tool"
    if event.actions is not None:
        delta = event.actions.state_delta
        if (
            not _given_exactly(event.actions, _STATE_DELTA)
            or not isinstance(delta, dict)
            or set(delta) != {"durationMs"}
            or isinstance(delta["durationMs"], bool)
            or not isinstance(delta["durationMs"], int | float)
        ):
            return "function_response actions must be absent or exactly {stateDelta:{durationMs}}"
    return None


def _system_fact_problem(
    event: RuntimeEvent, action_key: str, ref_sets: tuple[frozenset[str], ...]
) -> str | None:
    if event.content is not None:
        return f"{action_key} fact carries content"
    if event.role != "system" or event.author != "system":
        return f"{action_key} fact must be role=system author=system"
    if event.actions is None or not _given_exactly(event.actions, _ONLY[action_key]):
        return f"{action_key} fact must carry no other action"
    refs = event.refs
    if refs is None or not any(_given_exactly(refs, keys) for keys in ref_sets):
        return f"{action_key} fact has the wrong refs"
    return None


_TOOL_CONTENT = (FunctionCallContent, FunctionResponseContent)

#: The classification of an event in a lane without conflict: one frozen instance per lane
#: (most events of a run are ordinary; the fold classifies every one).
_CLEAN: dict[str, LaneClassification] = {lane: LaneClassification(lane) for lane in get_args(Lane)}


def classify_lane(event: RuntimeEvent) -> LaneClassification:
    """Classify ``event`` into exactly one lane, or report a ``semantic_lane_conflict``."""
    if event.actions is None and not isinstance(event.content, _TOOL_CONTENT):
        return _CLEAN["ordinary"]  # no trigger can fire: most events of a run
    lanes = _triggers(event)
    if not lanes:
        return _CLEAN["ordinary"]
    lane = lanes[0]
    if len(lanes) > 1:
        return LaneClassification(lane, f"event matches several tool lanes: {', '.join(lanes)}")
    problem = _common_envelope_problem(event)
    if problem is None:
        if lane == "function_call":
            problem = _call_problem(event)
        elif lane == "function_response":
            problem = _response_problem(event)
        elif lane == "tool_dispatch":
            problem = _system_fact_problem(event, "toolDispatch", _DISPATCH_REF_SETS)
        else:
            problem = _system_fact_problem(event, "toolRecovery", (_RECOVERY_REF_SET,))
    return _CLEAN[lane] if problem is None else LaneClassification(lane, problem)
