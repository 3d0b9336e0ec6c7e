"""What a run report is made of: the store's answers, read once, before anything is rendered.

Why a separate, frozen record: the report must be a pure function of the store (the same store
renders byte-identical HTML, ADR 0030). Everything the page shows is read into these records
by one small function (``report/read.py``); the view and the templates only ever see them, so
no rendering step can read the clock, the environment or the store on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from maka_es.continuation.plan import ContinuationPlan
from maka_es.recovery.operator_actions import ForkOutcome
from maka_es.resume.models import ResumePlan
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.resolver import Resolution
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = ["PlanFailure", "ReportData", "ReportKind", "RunData"]

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
