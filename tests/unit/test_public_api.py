"""Every public name of the package still imports from ``maka_es`` itself.

Why: the redesign moved every module (ADR 0017); hosts import from ``maka_es``, not from the
modules, and this list is the contract. A name removed from ``__all__``, or an import that no
longer resolves, fails here with its name.
"""

from __future__ import annotations

import importlib

import pytest

import maka_es

#: What a host needs (issue 22, ADR 0039): the host object and its facade, tools, providers,
#: the error base and what it inspects. The failpoint catalogue, ``classify_lane`` and
#: ``operation_id_for`` left the root (they import from their modules).
PUBLIC = [
    "__version__",
    "RuntimeApplication",
    "AsyncRuntimeApplication",
    "HostConfig",
    "PlannerSettings",
    "Tool",
    "ToolContext",
    "ToolResult",
    "file_write_tool",
    "async_tool",
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
    "MakaError",
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
    "build_resume_plan",
    "build_continuation_plan",
    "resolve_tool_operations",
    "canonical_json",
    "canonical_args_hash",
]

#: Names that left the root and still import from their modules (a host that used them).
LEFT_THE_ROOT = {
    "RUNTIME_RESUME_FAILPOINTS": "maka_es.resume.failpoint_catalog",
    "Failpoint": "maka_es.resume.failpoint_catalog",
    "classify_lane": "maka_es.wire.events",
    "operation_id_for": "maka_es.wire.codec",
}


def test_all_is_exactly_the_public_list() -> None:
    assert list(maka_es.__all__) == PUBLIC
    assert len(set(PUBLIC)) == len(PUBLIC)


@pytest.mark.parametrize("name", sorted(LEFT_THE_ROOT))
def test_an_internal_name_left_the_root_and_imports_from_its_module(name: str) -> None:
    assert name not in maka_es.__all__
    assert getattr(importlib.import_module(LEFT_THE_ROOT[name]), name) is not None


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_imports_from_the_package(name: str) -> None:
    module = importlib.import_module("maka_es")
    assert getattr(module, name) is not None
    namespace: dict[str, object] = {}
    exec(f"from maka_es import {name}", namespace)  # the statement a host writes
    assert namespace[name] is getattr(maka_es, name)
