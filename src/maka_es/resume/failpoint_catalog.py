"""Phase 0 crash failpoint catalog and the crash-harness ledger.

docs/reference/phase0.md#failpoints.

Why a catalog: the crash harness, the docs and the tests must agree on *where* a process can die
and which RuntimeEvent prefix is then fully committed. The catalog is data (order matters), and
``harness_ledger`` builds the exact prefix for a failpoint deterministically (fixed ids and
timestamps, no clock), so a killed child and the verifying parent construct identical events.
"""

from __future__ import annotations

from typing import Literal

from maka_es.wire.events import RuntimeEvent, ValueModel
from maka_es.wire.facts import terminal_fact, unbound_response

__all__ = [
    "FAILPOINT_PREFIXES",
    "RUNTIME_RESUME_FAILPOINTS",
    "CommittedPrefix",
    "Failpoint",
    "committed_event_count",
    "harness_ledger",
]

CommittedPrefix = Literal[
    "before_function_call",
    "after_function_call",
    "after_function_response",
    "after_terminal_event",
]


class Failpoint(ValueModel):
    """One crash-injection point: ``committed_prefix`` is the last fully committed prefix."""

    id: str
    boundary: str
    committed_prefix: CommittedPrefix


RUNTIME_RESUME_FAILPOINTS: tuple[Failpoint, ...] = tuple(
    Failpoint(id=fid, boundary=boundary, committed_prefix=prefix)
    for fid, boundary, prefix in (
        ("P0", "before tool preparation (T1)", "before_function_call"),
        ("P1", "function_call committed before prepared journal", "after_function_call"),
        ("P2", "prepared journal committed before implementation", "after_function_call"),
        ("P3", "tool implementation in progress", "after_function_call"),
        ("P4", "side effect completed before outcome transaction (T2)", "after_function_call"),
        ("P5", "function_response committed before outcome journal", "after_function_response"),
        (
            "P6",
            "outcome transaction committed before model result delivery",
            "after_function_response",
        ),
        ("P7", "tool result delivered before the next provider step", "after_function_response"),
        ("P8", "terminal RuntimeEvent commit", "after_function_response"),
        ("P9", "terminal run header commit", "after_terminal_event"),
        ("P10", "recovery decision commit", "after_terminal_event"),
        ("P11", "continuation run creation", "after_terminal_event"),
    )
)

#: The distinct committed prefixes in first-appearance order.
FAILPOINT_PREFIXES: tuple[CommittedPrefix, ...] = tuple(
    dict.fromkeys(failpoint.committed_prefix for failpoint in RUNTIME_RESUME_FAILPOINTS)
)

_EVENT_COUNT: dict[str, int] = {
    prefix: index + 1 for index, prefix in enumerate(FAILPOINT_PREFIXES)
}


def committed_event_count(prefix: str) -> int:
    """How many harness events the ``prefix`` keeps (1..4); unknown prefix -> ``ValueError``."""
    try:
        return _EVENT_COUNT[prefix]
    except KeyError:
        raise ValueError(f"unknown committed prefix: {prefix!r}") from None


def harness_ledger(
    prefix: str,
    session_id: str = "session-1",
    run_id: str = "run-1",
    *,
    invocation_id: str | None = None,
    turn_id: str | None = None,
    response_is_error: bool = False,
) -> list[RuntimeEvent]:
    """The crash-harness ledger truncated to ``prefix``.

    ``[user(text), function_call(tool-1, Bash), function_response(tool-1, Bash), terminal(failed,
    endInvocation)]`` with ids ``user``/``call``/``response``/``terminal`` and ts 1..4. No
    protocol marker, so the resolver reads it as unmarked (a lone call is indeterminate).
    ``response_is_error`` gives the failed-result variant.
    """
    count = committed_event_count(prefix)
    spine = {
        "sessionId": session_id,
        "invocationId": invocation_id if invocation_id is not None else f"invocation-{run_id}",
        "runId": run_id,
        "turnId": turn_id if turn_id is not None else f"turn-{run_id}",
    }
    return _harness_events(spine, response_is_error)[:count]


def _harness_events(spine: dict[str, str], response_is_error: bool) -> list[RuntimeEvent]:
    """The four harness events of ``spine``, in ledger order. Fixed ids and timestamps: a
    killed child and the verifying parent must build byte-identical events
    (docs/reference/phase0.md#harness-ledger). The response and the terminal are the runtime's
    own fact shapes (an unbound response: the ledger carries no protocol marker)."""
    user = RuntimeEvent.model_validate(
        {
            "id": "user",
            **spine,
            "ts": 1,
            "partial": False,
            "role": "user",
            "author": "user",
            "content": {"kind": "text", "text": "run the tool"},
        }
    )
    call = RuntimeEvent.model_validate(
        {
            "id": "call",
            **spine,
            "ts": 2,
            "partial": False,
            "role": "model",
            "author": "agent",
            "content": {
                "kind": "function_call",
                "id": "tool-1",
                "name": "Bash",
                "args": {"command": "touch marker"},
            },
        }
    )
    response = unbound_response(
        call,
        event_id="response",
        ts=3,
        result={"exitCode": 1 if response_is_error else 0},
        is_error=response_is_error,
    )
    terminal = terminal_fact(spine, event_id="terminal", ts=4, status="failed")
    return [user, call, response, terminal]
