"""What the CLI prints and how it exits (docs/cli.md#exit-codes; ADR 0029).

Why here: every command reports the same way. Success prints a rich table or, with ``--json``,
one JSON document on stdout; a failure prints ONE line on stderr, ``error [code]: what
happened. what to do: ...``, whose action comes from the code registry (docs/exceptions.md),
and exits with a documented code. A traceback is printed only with ``--debug``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from maka_es.codes import REGISTRY
from maka_es.errors import CommandLineUsageError, MakaError, StoreCorruptionError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARKED = 3
EXIT_CORRUPTION = 4

#: Tables go to stdout; progress and errors to stderr. Piped output is not cut at 80 columns.
console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err_console = Console(stderr=True, soft_wrap=True)


@dataclass(frozen=True)
class Settings:
    """The global options, shared by every command through the typer context."""

    store: str
    debug: bool = False


def host_action(code: str) -> str:
    """The registry's action for ``code`` (an error or a revalidation refusal)."""
    for kind in ("error", "revalidation"):
        entry = REGISTRY.get(kind, code)
        if entry is not None:
            return entry.host_action
    return "see docs/exceptions.md"


def one_line(text: str) -> str:
    """``text`` on one line, without a trailing period (the line adds its own)."""
    return " ".join(str(text).split()).rstrip(".")


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def failure_line(exc: BaseException) -> tuple[str, int]:
    """The one line printed for ``exc`` and the exit code it maps to."""
    if isinstance(exc, CommandLineUsageError):
        message, action = one_line(str(exc.args[0])), _flat(exc.detail["action"])
        return f"error [{exc.code}]: {message}. what to do: {action}", EXIT_USAGE
    if isinstance(exc, MakaError):
        message = one_line(str(exc.args[0]) if exc.args else exc.code)
        line = f"error [{exc.code}]: {message}. what to do: {_flat(host_action(exc.code))}"
        exit_code = EXIT_CORRUPTION if isinstance(exc, StoreCorruptionError) else EXIT_ERROR
        return line, exit_code
    detail = one_line(f"{type(exc).__name__}: {exc}")
    return (
        f"error [internal]: {detail}. what to do: rerun with --debug and report the traceback",
        EXIT_ERROR,
    )


def emit_json(document: Any) -> None:
    """One JSON document on stdout (sorted keys: stable to diff and to test)."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
