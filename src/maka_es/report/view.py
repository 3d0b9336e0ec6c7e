"""From the store's answers (``ReportData``) to the rows a page lays out (``PageView``).

Why pure: the same store must render byte-identical HTML (ADR 0030), so this step reads
nothing but its argument. It decides what an operator looks at first: operations whose
outcome is unknown or parked, and the reasons that block a plan, are flagged for highlighting.
One module for the concept (issue 22, part 1): the frozen answers, the rows the templates see,
the timeline rows and the step between them, all pure.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.recovery.operator_actions import ForkOutcome, operator_commands
from maka_es.resume.models import Diagnostic, ResumePlan
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.resolver import Resolution, ToolDecision
from maka_es.wire.events import (
    ErrorContent,
    FunctionCallContent,
    FunctionResponseContent,
    RuntimeEvent,
    TextContent,
    ThinkingContent,
    classify_lane,
)
from maka_es.wire.run_header import RunHeader

__all__ = [
    "EventLink",
    "EventRow",
    "LANES",
    "LaneColumn",
    "LineageEdgeRow",
    "OperationRow",
    "PageView",
    "PlanFailure",
    "PlanRow",
    "ReasonRow",
    "ReportData",
    "ReportKind",
    "RunData",
    "RunView",
    "build_page",
    "event_anchor",
    "event_row",
    "format_ms",
]


# ----------------------------------------------------------------------------------------------
# What the templates see: plain, frozen rows with every string already decided.
#
# Why rows and not the store's models: the templates stay free of logic (no lane rules, no
# resolver lookups, no formatting), so what a page shows is decided in Python, tested without a
# browser, and deterministic; the templates only lay the rows out and escape them (ADR 0030).


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


# ----------------------------------------------------------------------------------------------
# What a run report is made of: the store's answers, read once, before anything is rendered.
#
# Why a separate, frozen record: the report must be a pure function of the store (the same store
# renders byte-identical HTML, ADR 0030). Everything the page shows is read into these records
# by one small function (``report/read.py``); the view and the templates only ever see them, so
# no rendering step can read the clock, the environment or the store on its own.

ReportKind = Literal["run", "session"]


@dataclass(frozen=True, slots=True)
class PlanFailure:
    """A planner that refused with a typed error instead of returning a plan."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class RunData:
    """One run as the store answers for it: header, committed events, journal, decisions."""

    header: RunHeader
    events: tuple[RuntimeEvent, ...]
    operations: tuple[ToolOperationState, ...]
    resolution: Resolution
    resume_plan: ResumePlan | PlanFailure
    continuation_plan: ContinuationPlan | PlanFailure
    #: The provenance an operator fork recorded (ADR 0022), as the fork service reports it.
    fork: ForkOutcome | None = None


@dataclass(frozen=True, slots=True)
class ReportData:
    """A page's input: the runs it shows in full (``focus``) and the related runs of their
    lineage, all in store order."""

    kind: ReportKind
    session_id: str
    focus: tuple[str, ...]
    runs: tuple[RunData, ...]


# ----------------------------------------------------------------------------------------------
# One committed event as a timeline row: its lane, a one-line summary, and its exact wire.
#
# Why the lane comes from ``wire/events.py``: the report must classify an event exactly as the
# store and the resolver do (docs/reference/wire.md#lanes), so a lane conflict the store would
# refuse or the resolver would call corruption shows as one here too. Event text is hostile
# input: it is kept as plain strings, and the templates escape it (ADR 0030).

#: Timeline columns, left to right in the order a tool call crosses them.
LANES: tuple[LaneColumn, ...] = (
    LaneColumn("ordinary", "conversation"),
    LaneColumn("function_call", "call"),
    LaneColumn("tool_dispatch", "T1 dispatch"),
    LaneColumn("function_response", "T2 response"),
    LaneColumn("reconcile_result", "reconcile"),
    LaneColumn("recovery_decision", "recovery decision"),
)
_LANE_INDEX = {column.lane: index for index, column in enumerate(LANES)}
SUMMARY_LIMIT = 240
_MAX_MS = 10**14  # beyond year 5000: not a Unix time in milliseconds, shown as the number


def event_anchor(run_anchor: str, seq: int) -> str:
    """An element id made of safe characters only: event ids are arbitrary strings."""
    return f"{run_anchor}-e{seq}"


def format_ms(value: float) -> str:
    """Unix milliseconds as UTC ISO-8601 (a pure conversion, never the clock)."""
    if isinstance(value, bool) or not 0 <= value < _MAX_MS:
        return str(value)
    stamp = datetime.fromtimestamp(value / 1000, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _clip(text: str) -> str:
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _content_summary(event: RuntimeEvent) -> str | None:
    content = event.content
    if isinstance(content, TextContent | ThinkingContent):
        prefix = "thinking: " if isinstance(content, ThinkingContent) else ""
        return prefix + content.text
    if isinstance(content, FunctionCallContent):
        return f"{content.name}({_compact(content.args)}) call {content.id}"
    if isinstance(content, FunctionResponseContent):
        error = " error" if content.is_error else ""
        return f"{content.name}{error} -> {_compact(content.result)}"
    if isinstance(content, ErrorContent):
        return f"error {content.code or ''}: {content.message}".replace("  ", " ")
    return None


def _actions_summary(event: RuntimeEvent) -> str | None:
    actions = event.actions
    if actions is None:
        return None
    if actions.tool_dispatch is not None:
        d = actions.tool_dispatch
        return f"T1 {d.tool_name} {d.operation_id} ({d.recovery_mode})"
    if actions.tool_recovery is not None:
        payload = actions.tool_recovery.payload.to_wire()
        detail = payload.get("observation") or payload.get("disposition")
        reason = payload.get("reasonCode")
        return " ".join(str(p) for p in (actions.tool_recovery.kind, detail, reason) if p)
    if actions.continuation_start is not None:
        source = actions.continuation_start.immediate_source
        return f"continues {source.run_id} at high-water {source.high_water}"
    return None


def _summary(event: RuntimeEvent) -> str:
    parts = [p for p in (_content_summary(event), _actions_summary(event)) if p]
    if event.status is not None:
        parts.append(f"status {event.status}")
    return _clip(" | ".join(parts) if parts else "(no content)")


def _operation_id(event: RuntimeEvent) -> str | None:
    if event.refs is not None and event.refs.operation_id is not None:
        return event.refs.operation_id
    actions = event.actions
    if actions is not None and actions.tool_dispatch is not None:
        return actions.tool_dispatch.operation_id
    return None


def event_row(run_anchor: str, seq: int, event: RuntimeEvent) -> EventRow:
    """The timeline row of the ``seq``-th committed event (1-based, the ledger's order)."""
    lane = classify_lane(event)
    return EventRow(
        seq=seq,
        anchor=event_anchor(run_anchor, seq),
        event_id=event.id,
        lane=lane.lane,
        lane_index=_LANE_INDEX[lane.lane],
        conflict=lane.conflict,
        role=event.role,
        author=event.author,
        time=format_ms(event.ts),
        summary=_summary(event),
        operation_id=_operation_id(event),
        status=event.status,
        wire_json=json.dumps(event.to_wire(), sort_keys=True, ensure_ascii=False, indent=2),
    )


_ATTENTION = frozenset({"indeterminate", "parked", "corruption"})

#: event id -> element id, per run (event ids are unique within a run, not across runs).
_Anchors = Mapping[str, str]


def build_page(data: ReportData) -> PageView:
    """Every run of ``data`` as a section; the focus runs in full, their neighbours as cards."""
    run_anchors = {run.header.run_id: f"run-{index + 1}" for index, run in enumerate(data.runs)}
    edges = tuple(edge for run in data.runs if (edge := _edge(run, run_anchors)) is not None)
    runs = tuple(
        _run_view(run, run_anchors, edges, full=run.header.run_id in data.focus)
        for run in data.runs
    )
    title = (
        f"maka_es run {data.focus[0]}"
        if data.kind == "run"
        else f"maka_es session {data.session_id}"
    )
    return PageView(data.kind, title, data.session_id, LANES, runs, edges)


def _edge(run: RunData, run_anchors: Mapping[str, str]) -> LineageEdgeRow | None:
    """The edge into ``run`` from the run it continues (a fork when its claim says so)."""
    source = run.header.continuation_source
    if source is None:
        return None
    claim_id = getattr(source, "claim_id", None)
    detail: tuple[tuple[str, str], ...] = ()
    if run.fork is not None:
        detail = (
            ("abandoned operation", run.fork.abandoned_operation_id),
            ("actor", run.fork.actor),
            ("note", run.fork.note),
            ("forked at", format_ms(run.fork.forked_at)),
        )
    return LineageEdgeRow(
        kind="fork" if run.fork is not None else "continuation",
        source_run_id=source.source_run_id,
        source_anchor=run_anchors.get(source.source_run_id),
        target_run_id=run.header.run_id,
        target_anchor=run_anchors.get(run.header.run_id),
        high_water=source.source_runtime_event_high_water,
        claim_id=claim_id,
        detail=detail,
    )


def _run_view(
    run: RunData,
    run_anchors: Mapping[str, str],
    edges: tuple[LineageEdgeRow, ...],
    *,
    full: bool,
) -> RunView:
    header = run.header
    anchor = run_anchors[header.run_id]
    rows = tuple(event_row(anchor, seq, e) for seq, e in enumerate(run.events, start=1))
    anchors = {row.event_id: row.anchor for row in reversed(rows)}  # first occurrence wins
    return RunView(
        anchor=anchor,
        run_id=header.run_id,
        full=full,
        status=header.status,
        header_facts=_header_facts(run),
        events=rows,
        operations=_operations(run, anchors),
        issues=tuple(
            ReasonRow(issue.code, "resolver issue", _link(issue.event_id, anchors), True)
            for issue in run.resolution.issues
        ),
        resume_plan=_held_back(_resume_row(run.resume_plan, anchors), run.continuation_plan),
        continuation_plan=_continuation_row(run, anchors),
        edges_in=tuple(e for e in edges if e.target_run_id == header.run_id),
        edges_out=tuple(e for e in edges if e.source_run_id == header.run_id),
    )


def _header_facts(run: RunData) -> tuple[tuple[str, str], ...]:
    h = run.header
    facts = [
        ("session", h.session_id),
        ("invocation", h.invocation_id or ""),
        ("turn", h.turn_id),
        ("status", h.status),
        ("model", h.model_id),
        ("cwd", h.cwd),
        ("created", format_ms(h.created_at)),
        ("updated", format_ms(h.updated_at)),
        ("committed events", str(len(run.events))),
    ]
    optional = (
        ("completed", None if h.completed_at is None else format_ms(h.completed_at)),
        ("failure class", h.failure_class),
        ("failure message", h.failure_message),
        ("workspace identity", h.workspace_identity),
    )
    facts.extend((label, value) for label, value in optional if value is not None)
    return tuple(facts)


def _link(event_id: str | None, anchors: _Anchors) -> EventLink | None:
    return None if event_id is None else EventLink(event_id, anchors.get(event_id))


def _bundle(
    operation_id: str, events: tuple[RuntimeEvent, ...], anchors: _Anchors
) -> tuple[tuple[str, EventLink], ...]:
    """The operation's recovery facts (reconcile result, decision) in ledger order."""
    facts = []
    for event in events:
        recovery = event.actions.tool_recovery if event.actions is not None else None
        if recovery is not None and recovery.payload.operation_id == operation_id:
            label = recovery.kind.rsplit(".", 1)[-1].replace("_", " ")
            facts.append((label, EventLink(event.id, anchors.get(event.id))))
    return tuple(facts)


def _operations(run: RunData, anchors: _Anchors) -> tuple[OperationRow, ...]:
    decisions = {d.operation_id: d for d in run.resolution.decisions if d.operation_id}
    return tuple(
        _operation(op, decisions.get(op.operation_id), run, anchors) for op in run.operations
    )


def _operation(
    op: ToolOperationState, decision: ToolDecision | None, run: RunData, anchors: _Anchors
) -> OperationRow:
    status = decision.status if decision is not None else "no decision"
    return OperationRow(
        operation_id=op.operation_id,
        tool_name=op.tool_name,
        tool_call_id=op.tool_call_id,
        recovery_mode=op.recovery_mode,
        journal_state=op.state,
        t1=EventLink(op.dispatch_event_id, anchors.get(op.dispatch_event_id)),
        t2=_link(op.result_event_id, anchors),
        bundle=_bundle(op.operation_id, run.events, anchors),
        observation=op.observation,
        decision_status=status,
        decision_reason=decision.reason if decision is not None else "",
        settlement_origin=decision.settlement_origin if decision is not None else None,
        attention=status in _ATTENTION or decision is None,
    )


def _reasons(
    blocking: tuple[str, ...], diagnostics: tuple[Diagnostic, ...], anchors: _Anchors
) -> tuple[ReasonRow, ...]:
    """Blocking reasons first (with the message of their diagnostic), then the rest."""
    by_code = {d.code: d for d in reversed(diagnostics)}
    rows = [
        ReasonRow(
            code,
            by_code[code].message if code in by_code else "",
            _link(by_code[code].event_id, anchors) if code in by_code else None,
            True,
        )
        for code in blocking
    ]
    rows.extend(
        ReasonRow(d.code, d.message, _link(d.event_id, anchors), False)
        for d in diagnostics
        if d.code not in blocking
    )
    return tuple(rows)


def _known(facts: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Facts with a value: an absent directive or claim is left out, not shown empty."""
    return tuple((label, value) for label, value in facts if value)


def _failure_row(title: str, failure: PlanFailure) -> PlanRow:
    reason = ReasonRow(failure.code, failure.message, None, True)
    return PlanRow(title, "refused", False, (reason,), ())


def _resume_row(plan: ResumePlan | PlanFailure, anchors: _Anchors) -> PlanRow:
    title = "Phase 0 resume plan"
    if isinstance(plan, PlanFailure):
        return _failure_row(title, plan)
    facts = (
        ("committed high-water", str(plan.source_runtime_event_high_water)),
        ("requires verification", "yes" if plan.requires_verification else "no"),
        ("replayed events", str(len(plan.replay_runtime_events))),
        ("directive", plan.directive or ""),
    )
    reasons = _reasons(plan.rejection_reasons, plan.diagnostics, anchors)
    proceeds = plan.disposition == "safe_replay"
    return PlanRow(title, plan.disposition, proceeds, reasons, _known(facts))


def _held_back(row: PlanRow, continuation: ContinuationPlan | PlanFailure) -> PlanRow:
    """A Phase 0 ``safe_replay`` is never shown green while the session's continuation parks:
    the session is blocked, whatever its prefix alone would allow (issue 21)."""
    if not row.proceeds or (
        isinstance(continuation, ContinuationPlan) and continuation.disposition == "continue"
    ):
        return row
    code = (
        continuation.code
        if isinstance(continuation, PlanFailure)
        else ",".join(continuation.rejection_reasons) or continuation.disposition
    )
    held = ReasonRow(code, "not resumable: the continuation decision parks (see there)", None, True)
    return dataclasses.replace(row, proceeds=False, reasons=(held, *row.reasons))


def _next_commands(run: RunData, plan: ContinuationPlan) -> tuple[str, ...]:
    """The exact commands an operator runs next (docs/cli.md#repair), from the park reasons;
    an undecided operation's commands are spelled by ``operator_commands``, as ``resume``
    reports them."""
    session, run_id = run.header.session_id, run.header.run_id
    if plan.disposition == "continue":
        return (f"maka-es resume {session}",)
    commands: list[str] = []
    header = run.header
    if header.status == "running" and header.continuation_source and len(run.events) == 1:
        commands.append(f"maka-es end-run {run_id}")  # a start-only continuation or fork
    undecided: list[str] = []
    for diagnostic in plan.diagnostics:
        detail = diagnostic.detail or {}
        if diagnostic.code == "continuation_started_indeterminate":
            commands.append(f"maka-es end-run {detail.get('continuationRunId')}")
        elif detail.get("replayReason") == "tool_recovery_unsettled" and detail.get("operationId"):
            undecided.append(str(detail["operationId"]))
    attestable = not header.is_terminal
    commands += operator_commands(run_id, tuple(undecided), attestable=attestable)
    if commands:
        commands.append(f"maka-es resume {session}")
    return tuple(dict.fromkeys(commands))


def _continuation_row(run: RunData, anchors: _Anchors) -> PlanRow:
    """The continuation decision; the fresh target ids a plan draws are left out, since they
    change at every planning and the page must not (ADR 0030)."""
    title = "Continuation decision"
    plan = run.continuation_plan
    if isinstance(plan, PlanFailure):
        return _failure_row(title, plan)
    facts: tuple[tuple[str, str], ...] = ()
    if plan.continuation is not None:
        c = plan.continuation
        facts = (
            ("source run", c.source_run_id),
            ("source high-water", str(c.source_runtime_event_high_water)),
            ("claim", c.claim_id or ""),
            ("replayed events", str(len(c.runtime_context))),
        )
    reasons = _reasons(plan.rejection_reasons, plan.diagnostics, anchors)
    proceeds = plan.disposition == "continue"
    return PlanRow(
        title, plan.disposition, proceeds, reasons, _known(facts), _next_commands(run, plan)
    )
