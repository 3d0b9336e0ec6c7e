"""Providers for ``maka-es continue``: loading ``module:factory`` and the default scripted one.

Why a scripted default: the CLI ships no model client (the SDKs are an extra), and an operator
proving a continuation end to end needs one that answers deterministically; a host passes its
own factory with ``--provider my_host.providers:make`` (docs/cli.md#continue).
"""

from __future__ import annotations

import importlib

from maka_es.continuation.provider import Provider, ProviderTurn, ScriptedProvider
from maka_es.errors import CommandLineUsageError

DEFAULT_PROVIDER = "maka_es.cli.providers:scripted_provider"
#: What the default provider answers: one text turn, no tool call, so the loop ends.
SCRIPTED_ANSWER = "continued by maka-es (scripted provider)"


def scripted_provider() -> Provider:
    """One turn with one text output (the default of ``--provider``)."""
    return ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": SCRIPTED_ANSWER},))])


def load_provider(spec: str) -> Provider:
    """Call the factory named ``module:factory`` and check it returned a provider."""
    module_name, _, factory_name = spec.partition(":")
    if not module_name or not factory_name:
        raise CommandLineUsageError(
            f"--provider {spec!r} is not module:factory", "pass e.g. my_host.providers:make"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandLineUsageError(
            f"--provider module {module_name!r} cannot be imported ({exc})",
            "install it or put it on PYTHONPATH",
        ) from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise CommandLineUsageError(
            f"--provider {spec!r}: {module_name} has no callable {factory_name!r}",
            "name a function that returns a provider",
        )
    provider = factory()
    if not callable(getattr(provider, "complete", None)):
        raise CommandLineUsageError(
            f"--provider {spec!r} returned {type(provider).__name__}, which has no complete()",
            "return an object with complete(ProviderRequest) -> ProviderTurn",
        )
    return provider  # type: ignore[no-any-return]
