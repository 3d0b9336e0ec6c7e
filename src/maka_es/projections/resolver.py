"""The RecoveryResolver as a projection: ``resolve_tool_operations(events)``.

The scanner itself lives in ``maka_es.domain.tool_ledger`` because the Run aggregate keeps its
state to validate tool facts online (ADR 0007); this module is the projection-layer entry point.
"""

from maka_es.domain.tool_ledger import (
    OPERATION_ISSUE_PRIORITY,
    BundleInterpretation,
    ResolverState,
    resolve_tool_operations,
    would_introduce_issue,
)

__all__ = [
    "OPERATION_ISSUE_PRIORITY",
    "BundleInterpretation",
    "ResolverState",
    "resolve_tool_operations",
    "would_introduce_issue",
]
