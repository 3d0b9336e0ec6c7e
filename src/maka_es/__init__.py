"""maka_es: a crash-safe, event-sourced ledger for AI agent runtimes.

The stable public API (ADR 0017; what it does: docs/reference/index.md). Everything else is
importable from its module but may change between minor versions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from maka_es.app import AppendResult, RuntimeApplication, SessionInfo
    from maka_es.continuation.plan import (
        ContinuationFacts,
        ContinuationPlan,
        build_continuation_plan,
    )
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

#: Where each public name lives. Imported on first use (PEP 562), so ``import maka_es``, and the
#: pytest plugin under it, loads no store, eventsourcing or pydantic model (ADR 0040). Keep it
#: equal to the imports above (tests/test_extras.py checks it).
_EXPORTS: dict[str, str] = {
    "AppendResult": "maka_es.app",
    "RuntimeApplication": "maka_es.app",
    "SessionInfo": "maka_es.app",
    "ContinuationFacts": "maka_es.continuation.plan",
    "ContinuationPlan": "maka_es.continuation.plan",
    "build_continuation_plan": "maka_es.continuation.plan",
    "AnthropicMessagesProvider": "maka_es.continuation.sdk_providers",
    "AsyncAnthropicMessagesProvider": "maka_es.continuation.sdk_providers",
    "AsyncOpenAIChatProvider": "maka_es.continuation.sdk_providers",
    "AsyncOpenAIResponsesProvider": "maka_es.continuation.sdk_providers",
    "OpenAIChatProvider": "maka_es.continuation.sdk_providers",
    "OpenAIResponsesProvider": "maka_es.continuation.sdk_providers",
    "TurnResult": "maka_es.continuation.turns",
    "HostConfig": "maka_es.ledger.host_config",
    "ResumeResult": "maka_es.recovery.session_resume",
    "RUNTIME_RESUME_FAILPOINTS": "maka_es.resume.failpoint_catalog",
    "Failpoint": "maka_es.resume.failpoint_catalog",
    "Diagnostic": "maka_es.resume.models",
    "ResumePlan": "maka_es.resume.models",
    "ToolOperation": "maka_es.resume.models",
    "build_resume_plan": "maka_es.resume.plan",
    "Resolution": "maka_es.tooljournal.resolver",
    "ToolDecision": "maka_es.tooljournal.resolver",
    "resolve_tool_operations": "maka_es.tooljournal.resolver",
    "canonical_args_hash": "maka_es.wire.codec",
    "canonical_json": "maka_es.wire.codec",
    "operation_id_for": "maka_es.wire.codec",
    "RuntimeEvent": "maka_es.wire.events",
    "classify_lane": "maka_es.wire.lanes",
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
