"""maka_es: a crash-safe, event-sourced ledger for AI agent runtimes.

The stable public API (ADR 0017; what it does: docs/reference/index.md). Everything else is
importable from its module but may change between minor versions.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from maka_es.app import AppendResult, RuntimeApplication, SessionInfo
from maka_es.continuation.plan import ContinuationFacts, ContinuationPlan, build_continuation_plan
from maka_es.continuation.sdk_providers import (
    AnthropicMessagesProvider,
    AsyncAnthropicMessagesProvider,
    AsyncOpenAIChatProvider,
    AsyncOpenAIResponsesProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
)
from maka_es.continuation.turns import TurnResult
from maka_es.ledger.host_config import HostConfig
from maka_es.recovery.session_resume import ResumeResult
from maka_es.resume.failpoint_catalog import RUNTIME_RESUME_FAILPOINTS, Failpoint
from maka_es.resume.models import Diagnostic, ResumePlan, ToolOperation
from maka_es.resume.plan import build_resume_plan
from maka_es.tooljournal.resolver import Resolution, ToolDecision, resolve_tool_operations
from maka_es.wire.codec import canonical_args_hash, canonical_json, operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.lanes import classify_lane
from maka_es.wire.run_header import RunHeader

try:
    __version__: str = version("maka_es")  # one source of truth: pyproject.toml
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "RUNTIME_RESUME_FAILPOINTS",
    "__version__",
    "AnthropicMessagesProvider",
    "AppendResult",
    "AsyncAnthropicMessagesProvider",
    "AsyncOpenAIChatProvider",
    "AsyncOpenAIResponsesProvider",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "ResumeResult",
    "TurnResult",
    "ContinuationFacts",
    "ContinuationPlan",
    "Diagnostic",
    "Failpoint",
    "HostConfig",
    "Resolution",
    "ResumePlan",
    "ToolDecision",
    "ToolOperation",
    "build_continuation_plan",
    "build_resume_plan",
    "resolve_tool_operations",
    "RunHeader",
    "RuntimeApplication",
    "RuntimeEvent",
    "SessionInfo",
    "canonical_args_hash",
    "canonical_json",
    "classify_lane",
    "operation_id_for",
]
