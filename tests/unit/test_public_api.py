"""Every public name of the package still imports from ``maka_es`` itself.

Why: the redesign moved every module (ADR 0017); hosts import from ``maka_es``, not from the
modules, and this list is the contract. A name removed from ``__all__``, or an import that no
longer resolves, fails here with its name.
"""

from __future__ import annotations

import importlib

import pytest

import maka_es

#: The public API, unchanged by the redesign (plus ``__version__``, added by issue 9, and the
#: turn results and SDK providers of issue 21, ADR 0036).
PUBLIC = [
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
    "RUNTIME_RESUME_FAILPOINTS",
    "Resolution",
    "ResumePlan",
    "RunHeader",
    "RuntimeApplication",
    "RuntimeEvent",
    "SessionInfo",
    "ToolDecision",
    "ToolOperation",
    "__version__",
    "build_continuation_plan",
    "build_resume_plan",
    "canonical_args_hash",
    "canonical_json",
    "classify_lane",
    "operation_id_for",
    "resolve_tool_operations",
]


def test_all_is_exactly_the_public_list() -> None:
    assert sorted(maka_es.__all__) == sorted(PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_imports_from_the_package(name: str) -> None:
    module = importlib.import_module("maka_es")
    assert getattr(module, name) is not None
    namespace: dict[str, object] = {}
    exec(f"from maka_es import {name}", namespace)  # the statement a host writes
    assert namespace[name] is getattr(maka_es, name)
