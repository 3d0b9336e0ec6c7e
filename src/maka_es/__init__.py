"""maka_es: a crash-safe, event-sourced ledger for AI agent runtimes.

The stable public API (ADR 0017, ADR 0039; what it does: docs/reference/index.md): what a host
needs to run turns, define tools and providers, and inspect what happened. Everything else
(the failpoint catalogue, ``wire.events.classify_lane``, ``wire.codec.operation_id_for``, the
services) is importable from its module but may change between minor versions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from maka_es.adapters.file_write import file_write_tool
    from maka_es.aio import AsyncProvider, AsyncRuntimeApplication, async_tool
    from maka_es.app import AppendResult, RuntimeApplication, SessionInfo
    from maka_es.continuation.executor import ContinuationOutcome
    from maka_es.continuation.model.plan import (
        ContinuationInputs,
        ContinuationPlan,
        build_continuation_plan,
    )
    from maka_es.continuation.service import PlannerSettings
    from maka_es.continuation.turns import TurnResult
    from maka_es.errors import MakaError
    from maka_es.ledger.model.host_config import HostConfig
    from maka_es.providers.protocol import Provider, ProviderRequest, ProviderTurn
    from maka_es.providers.sdk import (
        AnthropicMessagesProvider,
        AsyncAnthropicMessagesProvider,
        AsyncOpenAIChatProvider,
        AsyncOpenAIResponsesProvider,
        OpenAIChatProvider,
        OpenAIResponsesProvider,
    )
    from maka_es.recovery.operator_actions import AttestationOutcome, EndRunOutcome, ForkOutcome
    from maka_es.recovery.session_resume import ResumeResult
    from maka_es.recovery.startup import StartupRecoveryOutcome
    from maka_es.resume.models import Diagnostic, ResumePlan, ToolOperation
    from maka_es.resume.plan import build_resume_plan
    from maka_es.tooljournal.model.resolver import Resolution, ToolDecision, resolve_tool_operations
    from maka_es.tooljournal.model.tools import Tool, ToolContext, ToolResult
    from maka_es.wire.codec import canonical_args_hash, canonical_json
    from maka_es.wire.events import RuntimeEvent
    from maka_es.wire.run_header import RunHeader

#: Where each public name lives. Imported on first use (PEP 562), so ``import maka_es``, and the
#: pytest plugin under it, loads no store, eventsourcing or pydantic model (ADR 0040). Keep it
#: equal to the imports above (tests/test_extras.py checks it).
_EXPORTS: dict[str, str] = {
    "file_write_tool": "maka_es.adapters.file_write",
    "AsyncProvider": "maka_es.aio",
    "AsyncRuntimeApplication": "maka_es.aio",
    "async_tool": "maka_es.aio",
    "AppendResult": "maka_es.app",
    "RuntimeApplication": "maka_es.app",
    "SessionInfo": "maka_es.app",
    "ContinuationOutcome": "maka_es.continuation.executor",
    "ContinuationInputs": "maka_es.continuation.model.plan",
    "ContinuationPlan": "maka_es.continuation.model.plan",
    "build_continuation_plan": "maka_es.continuation.model.plan",
    "PlannerSettings": "maka_es.continuation.service",
    "Provider": "maka_es.providers.protocol",
    "ProviderRequest": "maka_es.providers.protocol",
    "ProviderTurn": "maka_es.providers.protocol",
    "AnthropicMessagesProvider": "maka_es.providers.sdk",
    "AsyncAnthropicMessagesProvider": "maka_es.providers.sdk",
    "AsyncOpenAIChatProvider": "maka_es.providers.sdk",
    "AsyncOpenAIResponsesProvider": "maka_es.providers.sdk",
    "OpenAIChatProvider": "maka_es.providers.sdk",
    "OpenAIResponsesProvider": "maka_es.providers.sdk",
    "TurnResult": "maka_es.continuation.turns",
    "MakaError": "maka_es.errors",
    "HostConfig": "maka_es.ledger.model.host_config",
    "EndRunOutcome": "maka_es.recovery.operator_actions",
    "ForkOutcome": "maka_es.recovery.operator_actions",
    "AttestationOutcome": "maka_es.recovery.operator_actions",
    "StartupRecoveryOutcome": "maka_es.recovery.startup",
    "ResumeResult": "maka_es.recovery.session_resume",
    "Diagnostic": "maka_es.resume.models",
    "ResumePlan": "maka_es.resume.models",
    "ToolOperation": "maka_es.resume.models",
    "build_resume_plan": "maka_es.resume.plan",
    "Resolution": "maka_es.tooljournal.model.resolver",
    "ToolDecision": "maka_es.tooljournal.model.resolver",
    "resolve_tool_operations": "maka_es.tooljournal.model.resolver",
    "Tool": "maka_es.tooljournal.model.tools",
    "ToolContext": "maka_es.tooljournal.model.tools",
    "ToolResult": "maka_es.tooljournal.model.tools",
    "canonical_args_hash": "maka_es.wire.codec",
    "canonical_json": "maka_es.wire.codec",
    "RuntimeEvent": "maka_es.wire.events",
    "RunHeader": "maka_es.wire.run_header",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name == "__version__":
        value: Any = _version()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'maka_es' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("maka_es")  # one source of truth: pyproject.toml
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


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
