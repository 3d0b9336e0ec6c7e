"""What the templates see: plain, frozen rows with every string already decided.

Why rows and not the store's models: the templates stay free of logic (no lane rules, no
resolver lookups, no formatting), so what a page shows is decided in Python, tested without a
browser, and deterministic; the templates only lay the rows out and escape them (ADR 0030).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EventLink",
    "EventRow",
    "LaneColumn",
    "LineageEdgeRow",
    "OperationRow",
    "PageView",
    "PlanRow",
    "ReasonRow",
    "RunView",
]


@dataclass(frozen=True, slots=True)
class LaneColumn:
    lane: str
    label: str


@dataclass(frozen=True, slots=True)
class EventLink:
    """A link to an event of the page (``anchor`` is ``None`` when it is not on the page)."""

    event_id: str
    anchor: str | None


@dataclass(frozen=True, slots=True)
class EventRow:
    seq: int
    anchor: str
    event_id: str
    lane: str
    lane_index: int
    conflict: str | None
    role: str
    author: str
    time: str
    summary: str
    operation_id: str | None
    status: str | None
    wire_json: str


@dataclass(frozen=True, slots=True)
class OperationRow:
    operation_id: str
    tool_name: str
    tool_call_id: str
    recovery_mode: str
    journal_state: str
    t1: EventLink
    t2: EventLink | None
    bundle: tuple[tuple[str, EventLink], ...]
    observation: str | None
    decision_status: str
    decision_reason: str
    settlement_origin: str | None
    attention: bool


@dataclass(frozen=True, slots=True)
class ReasonRow:
    code: str
    message: str
    event: EventLink | None
    blocking: bool


@dataclass(frozen=True, slots=True)
class PlanRow:
    """A planner's answer: its disposition, the reasons that decide it first (highlighted),
    then the diagnostics, then the facts it names."""

    title: str
    disposition: str
    proceeds: bool
    reasons: tuple[ReasonRow, ...]
    facts: tuple[tuple[str, str], ...]
    #: The operator commands that move a parked session on, in the order to try them.
    next_commands: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LineageEdgeRow:
    kind: str
    source_run_id: str
    source_anchor: str | None
    target_run_id: str
    target_anchor: str | None
    high_water: int
    claim_id: str | None
    detail: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class RunView:
    anchor: str
    run_id: str
    full: bool
    status: str
    header_facts: tuple[tuple[str, str], ...]
    events: tuple[EventRow, ...]
    operations: tuple[OperationRow, ...]
    issues: tuple[ReasonRow, ...]
    resume_plan: PlanRow
    continuation_plan: PlanRow
    edges_in: tuple[LineageEdgeRow, ...]
    edges_out: tuple[LineageEdgeRow, ...]


@dataclass(frozen=True, slots=True)
class PageView:
    kind: str
    title: str
    session_id: str
    lanes: tuple[LaneColumn, ...]
    runs: tuple[RunView, ...]
    edges: tuple[LineageEdgeRow, ...]
