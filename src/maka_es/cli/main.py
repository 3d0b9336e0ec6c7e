"""``maka-es``: the console script's entry point and its exit handler (ADR 0029).

Why a handler around typer: the documented exit codes and the one-line error format hold for
every command and for usage errors too, so no traceback or help box reaches an operator unless
``--debug`` asks for it (docs/cli.md#exit-codes).
"""

from __future__ import annotations

import sys
import traceback

import typer

from maka_es.cli import (
    data,
    decide,
    demo_cmd,
    inspect_cmds,
    prove,
    repair,
    report_cmd,
    verify_cmd,
)
from maka_es.cli.output import EXIT_ERROR, EXIT_USAGE, err_console, failure_line, one_line
from maka_es.cli.root import DEBUG, app

#: The command modules, imported for their registration on ``app``.
COMMAND_MODULES = (inspect_cmds, decide, repair, verify_cmd, prove, data, demo_cmd, report_cmd)


def run(argv: list[str] | None = None) -> int:
    """Run one command line and return its exit code (never raises)."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="maka-es", standalone_mode=False)
    except typer.Abort:
        err_console.print("error [aborted]: interrupted. what to do: run it again", markup=False)
        return EXIT_ERROR
    except typer.TyperException as exc:  # click's exceptions, vendored by typer
        return _command_line_error(exc)
    except Exception as exc:
        if DEBUG["on"]:
            traceback.print_exc()
        line, code = failure_line(exc)
        err_console.print(line, markup=False, highlight=False)
        return code
    return result if isinstance(result, int) else 0


def _command_line_error(exc: typer.TyperException) -> int:
    """A usage error (exit 2) or another command-line failure, as one line."""
    context = getattr(exc, "ctx", None)
    path = getattr(context, "command_path", "maka-es")
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    code = getattr(exc, "exit_code", EXIT_ERROR)
    kind = "usage" if code == EXIT_USAGE else "command_line"
    err_console.print(
        f"error [{kind}]: {one_line(message)}. what to do: see {path} --help",
        markup=False,
        highlight=False,
    )
    return int(code)


def main() -> None:
    """The ``maka-es`` console script."""
    sys.exit(run(sys.argv[1:]))
