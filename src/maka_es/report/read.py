"""The one place a report reads the store (ADR 0030).

Why one small reader: the renderer must be a pure function of what the store holds, so every
question the page answers (header, committed events, tool journal, resolver, the Phase 0 plan,
the continuation decision, fork provenance, lineage) is asked here, through the application's
public reads, and frozen into :mod:`maka_es.report.view`. Nothing here writes: both planners
only read (docs/reference/phase0.md#resume-plan, docs/reference/continuation.md#plan).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.ledger.ports import STORE_FAULTS
from maka_es.recovery.operator_actions import ForkOutcome
from maka_es.report.view import PlanFailure, ReportData, RunData
from maka_es.wire.run_header import ContinuationSourceV2, RunHeader

__all__ = ["read_run_report", "read_session_report"]

_Plan = TypeVar("_Plan")


def read_run_report(app: RuntimeApplication, run_id: str) -> ReportData:
    """One run in full, with every run of its lineage tree (continuations and forks, both
    ways) as its neighbours; an unknown run raises the ledger's typed error."""
    header = app.get_run_header(run_id)
    session_runs = app.list_runs(header.session_id)
    related = _lineage_tree(run_id, session_runs)
    runs = tuple(_read_run(app, h) for h in session_runs if h.run_id in related)
    return ReportData("run", header.session_id, (run_id,), runs)


def read_session_report(app: RuntimeApplication, session_id: str) -> ReportData:
    """Every run of the session, in creation order, each in full."""
    session_runs = app.list_runs(session_id)
    runs = tuple(_read_run(app, header) for header in session_runs)
    return ReportData("session", session_id, tuple(h.run_id for h in session_runs), runs)


def _lineage_tree(run_id: str, headers: list[RunHeader]) -> set[str]:
    """The runs connected to ``run_id`` by continuation edges, in either direction."""
    neighbours: dict[str, set[str]] = {h.run_id: set() for h in headers}
    for header in headers:
        edge = header.continuation_source
        if edge is not None and edge.source_run_id in neighbours:
            neighbours[header.run_id].add(edge.source_run_id)
            neighbours[edge.source_run_id].add(header.run_id)
    tree, todo = {run_id}, [run_id]
    while todo:
        for other in neighbours.get(todo.pop(), set()) - tree:
            tree.add(other)
            todo.append(other)
    return tree


def _read_run(app: RuntimeApplication, header: RunHeader) -> RunData:
    run_id = header.run_id
    return RunData(
        header=header,
        events=tuple(app.read_run_events(run_id)),
        operations=app.tool_journal.tool_operations(run_id),
        resolution=app.tool_journal.resolve_run(run_id),
        resume_plan=_plan(lambda: app.plan_resume(run_id)),
        continuation_plan=_plan(lambda: app.plan_continuation(header.session_id, run_id)),
        fork=_fork(app, header),
    )


def _plan(planner: Callable[[], _Plan]) -> _Plan | PlanFailure:
    """A plan, or the planner's typed refusal shown as such; a store fault is no verdict about
    the run and propagates (docs/reference/continuation.md#plan)."""
    try:
        return planner()
    except STORE_FAULTS:
        raise
    except MakaError as exc:
        return PlanFailure(exc.code, str(exc))


def _fork(app: RuntimeApplication, header: RunHeader) -> ForkOutcome | None:
    """Only a V2 edge can name a fork claim; an ordinary continuation has no provenance."""
    edge = header.continuation_source
    if not isinstance(edge, ContinuationSourceV2):
        return None
    return app.run_forks.provenance(edge.claim_id)
