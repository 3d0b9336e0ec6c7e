"""maka_es: a crash-safe, event-sourced ledger for AI agent runtimes.

The stable public API (ADR 0017, ADR 0039; what it does: docs/reference/index.md): what a host
needs to run turns, define tools and providers, and inspect what happened. Everything else
(the failpoint catalogue, ``wire.lanes.classify_lane``, ``wire.codec.operation_id_for``, the
services) is importable from its module but may change between minor versions.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from maka_es.adapters.file_write import file_write_tool
from maka_es.aio import AsyncProvider, AsyncRuntimeApplication, async_tool
from maka_es.app import AppendResult, RuntimeApplication, SessionInfo
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.plan import ContinuationInputs, ContinuationPlan, build_continuation_plan
from maka_es.continuation.planner import PlannerSettings
from maka_es.continuation.provider import Provider, ProviderRequest, ProviderTurn
from maka_es.continuation.sdk_providers import (
    AnthropicMessagesProvider,
    AsyncAnthropicMessagesProvider,
    AsyncOpenAIChatProvider,
    AsyncOpenAIResponsesProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
)
from maka_es.continuation.turns import TurnResult
from maka_es.errors import MakaError
from maka_es.ledger.host_config import HostConfig
from maka_es.recovery.end_start_only import EndRunOutcome
from maka_es.recovery.fork import ForkOutcome
from maka_es.recovery.operator_actions import AttestationOutcome
from maka_es.recovery.report import StartupRecoveryOutcome
from maka_es.recovery.session_resume import ResumeResult
from maka_es.resume.models import Diagnostic, ResumePlan, ToolOperation
from maka_es.resume.plan import build_resume_plan
from maka_es.tooljournal.resolver import Resolution, ToolDecision, resolve_tool_operations
from maka_es.tooljournal.tools import Tool, ToolContext, ToolResult
from maka_es.wire.codec import canonical_args_hash, canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

try:
    __version__: str = version("maka_es")  # one source of truth: pyproject.toml
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

#: What a host imports (one tuple; tests/unit/test_public_api.py pins it).
__all__ = (
    "__version__",
    # the host object, its asyncio facade and their settings
    "RuntimeApplication",
    "AsyncRuntimeApplication",
    "HostConfig",
    "PlannerSettings",
    # tools
    "Tool",
    "ToolContext",
    "ToolResult",
    "file_write_tool",
    "async_tool",
    # providers
    "Provider",
    "ProviderRequest",
    "ProviderTurn",
    "AsyncProvider",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "AnthropicMessagesProvider",
    "AsyncOpenAIChatProvider",
    "AsyncOpenAIResponsesProvider",
    "AsyncAnthropicMessagesProvider",
    # errors
    "MakaError",
    # what a host inspects: results, reports, plans, facts
    "TurnResult",
    "ResumeResult",
    "ContinuationOutcome",
    "StartupRecoveryOutcome",
    "AttestationOutcome",
    "ForkOutcome",
    "EndRunOutcome",
    "AppendResult",
    "SessionInfo",
    "RunHeader",
    "RuntimeEvent",
    "ResumePlan",
    "Diagnostic",
    "ToolOperation",
    "ContinuationPlan",
    "ContinuationInputs",
    "Resolution",
    "ToolDecision",
    # the pure planners and the canonical encoding (for tools and tests over a ledger)
    "build_resume_plan",
    "build_continuation_plan",
    "resolve_tool_operations",
    "canonical_json",
    "canonical_args_hash",
)
