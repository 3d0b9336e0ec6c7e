"""The host's parts for the commands that run an agent loop (``continue``/``resume``, ``fork
--execute``): its provider and its tools, each loaded from a ``module:factory`` import path.

Why a scripted default: the CLI ships no model client (the SDKs are an extra), and an operator
proving a continuation end to end needs one that answers deterministically; a host passes its
own factory with ``--provider my_host.providers:make`` and its tools with ``--tools
my_host.tools:make`` (docs/cli.md#decide). Why factories: a provider and a tool catalogue are
objects of the host's code, not command-line values.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from maka_es.continuation.executor import ContinuationOutcome
from maka_es.errors import CommandLineUsageError
from maka_es.providers.protocol import Provider, ProviderTurn, ScriptedProvider
from maka_es.tooljournal.tools import Tool

DEFAULT_PROVIDER = "maka_es.cli.providers:scripted_provider"
#: What the default provider answers: one text turn, no tool call, so the loop ends.
SCRIPTED_ANSWER = "continued by maka-es (scripted provider)"


def scripted_provider() -> Provider:
    """One turn with one text output (the default of ``--provider``)."""
    return ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": SCRIPTED_ANSWER},))])


def _factory(option: str, spec: str) -> Callable[[], Any]:
    """The zero-argument callable named ``module:factory`` (a usage error otherwise)."""
    module_name, _, factory_name = spec.partition(":")
    if not module_name or not factory_name:
        raise CommandLineUsageError(
            f"{option} {spec!r} is not module:factory", "pass e.g. my_host.providers:make"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandLineUsageError(
            f"{option} module {module_name!r} cannot be imported ({exc})",
            "install it or put it on PYTHONPATH",
        ) from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise CommandLineUsageError(
            f"{option} {spec!r}: {module_name} has no callable {factory_name!r}",
            "name a function that takes no argument",
        )
    return factory  # type: ignore[no-any-return]


def load_provider(spec: str) -> Provider:
    """Call the factory named ``module:factory`` and check it returned a provider."""
    provider = _factory("--provider", spec)()
    if not callable(getattr(provider, "complete", None)):
        raise CommandLineUsageError(
            f"--provider {spec!r} returned {type(provider).__name__}, which has no complete()",
            "return an object with complete(ProviderRequest) -> ProviderTurn",
        )
    return provider  # type: ignore[no-any-return]


def load_tools(spec: str | None) -> tuple[Tool[Any], ...]:
    """The host's tool catalogue from ``--tools module:factory`` (none when not given): the
    agent loop runs the tools the model calls through the application's ToolRuntime."""
    if spec is None:
        return ()
    made = _factory("--tools", spec)()
    try:
        tools = tuple(made)
    except TypeError:
        tools = (made,)
    for tool in tools:
        if not isinstance(tool, Tool):
            raise CommandLineUsageError(
                f"--tools {spec!r} returned {type(tool).__name__}, which is no Tool",
                "return an iterable of maka_es Tool objects",
            )
    return tools


def outcome_document(outcome: ContinuationOutcome) -> dict[str, Any]:
    """What an executed agent loop reports (the ``outcome`` of ``--json``)."""
    return {
        "targetRunId": outcome.target_run_id,
        "status": outcome.status,
        "errorClass": outcome.error_class,
        "outputs": outcome.outputs,
        "steps": outcome.steps,
        "toolCalls": outcome.tool_calls,
    }


def host_tool_names(names: list[str] | None, catalogue: tuple[Tool[Any], ...]) -> tuple[str, ...]:
    """The tool names the host inspector reports: ``--tool`` names, then the catalogue's."""
    given = tuple(names or ())
    return given + tuple(t.name for t in catalogue if t.name not in given)
