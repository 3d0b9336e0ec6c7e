"""Pure projections over committed RuntimeEvents: tool-operation resolution and resume plans.

Everything here is a deterministic function of its input events (no I/O, clock or randomness)
and never mutates its input; see ``resolver`` for the incremental ``ResolverState``.
"""

from maka_es.projections.continuation import (
    ContinuationBoundary,
    ContinuationFacts,
    ContinuationIdentity,
    ContinuationPlan,
    ContinuationSafetySnapshot,
    RuntimeContinuation,
    WorkspaceCheckpointFact,
    build_continuation_plan,
    normalize_cwd,
    terminal_boundary_consistent,
)
from maka_es.projections.continuation_replay import (
    CompositeReplay,
    ReplayDiagnostic,
    ReplaySegment,
    build_composite_replay,
)
from maka_es.projections.failpoints import (
    FAILPOINT_PREFIXES,
    RUNTIME_RESUME_FAILPOINTS,
    CommittedPrefix,
    Failpoint,
    committed_event_count,
    harness_ledger,
)
from maka_es.projections.models import (
    Diagnostic,
    Resolution,
    ResolverIssue,
    ResumePlan,
    RuntimeEventInput,
    ToolDecision,
    ToolOperation,
    decode_events,
)
from maka_es.projections.replay import paired_call_ids, provider_replay_subset
from maka_es.projections.resolver import (
    OPERATION_ISSUE_PRIORITY,
    BundleInterpretation,
    ResolverState,
    resolve_tool_operations,
    would_introduce_issue,
)
from maka_es.projections.resume_plan import (
    RESUME_DIRECTIVE,
    build_resume_plan,
    project_tool_operations,
)

__all__ = [
    "FAILPOINT_PREFIXES",
    "OPERATION_ISSUE_PRIORITY",
    "RESUME_DIRECTIVE",
    "RUNTIME_RESUME_FAILPOINTS",
    "BundleInterpretation",
    "CommittedPrefix",
    "Diagnostic",
    "Failpoint",
    "Resolution",
    "ResolverIssue",
    "ResolverState",
    "ResumePlan",
    "RuntimeEventInput",
    "ToolDecision",
    "ToolOperation",
    "build_resume_plan",
    "committed_event_count",
    "decode_events",
    "harness_ledger",
    "paired_call_ids",
    "project_tool_operations",
    "provider_replay_subset",
    "resolve_tool_operations",
    "would_introduce_issue",
    "CompositeReplay",
    "ContinuationBoundary",
    "ContinuationFacts",
    "ContinuationIdentity",
    "ContinuationPlan",
    "ContinuationSafetySnapshot",
    "ReplayDiagnostic",
    "ReplaySegment",
    "RuntimeContinuation",
    "WorkspaceCheckpointFact",
    "build_composite_replay",
    "build_continuation_plan",
    "normalize_cwd",
    "terminal_boundary_consistent",
]
