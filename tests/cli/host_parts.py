"""A host's parts for the CLI's ``--provider`` / ``--tools`` options (docs/cli.md#decide): a
scripted provider that records every call it answers, and the Send tool.

Why a file of calls: the one-winner tests must see how many times a provider was asked, across
processes; ``MAKA_TEST_PROVIDER_LOG`` names the file, one line per call, appended.
"""

from __future__ import annotations

import os
import time
from typing import Any

from maka_es.providers.protocol import Provider, ProviderRequest, ProviderTurn
from maka_es.tooljournal.model.tools import Tool
from tests.support.send_tool import send_tool

LOG_ENV = "MAKA_TEST_PROVIDER_LOG"
ANSWER = "continued by the test host"


class LoggingProvider:
    """One text answer per call, after ``delay`` seconds (so two processes overlap)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        log = os.environ.get(LOG_ENV)
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{request.run_id}\n")
        time.sleep(self.delay)
        return ProviderTurn(outputs=({"kind": "text", "text": ANSWER},))


def provider() -> Provider:
    return LoggingProvider(0.0)


def slow_provider() -> Provider:
    return LoggingProvider(1.5)


def tools() -> list[Tool[Any]]:
    return [send_tool(False)]


def not_a_provider() -> object:
    return object()
