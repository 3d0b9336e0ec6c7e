"""``maka-es``: the console script's entry point and its exit handler (ADR 0029).

Why a handler around typer: the documented exit codes and the one-line error format hold for
every command and for usage errors too, so no traceback or help box reaches an operator unless
``--debug`` asks for it (docs/cli.md#exit-codes).
"""

from __future__ import annotations

import sys
import traceback

import click
import typer

from maka_es.cli import data, decide, demo_cmd, inspect_cmds, prove, repair, verify_cmd
from maka_es.cli.output import EXIT_ERROR, EXIT_USAGE, err_console, failure_line, one_line
from maka_es.cli.root import DEBUG, app

#: The command modules, imported for their registration on ``app``.
COMMAND_MODULES = (inspect_cmds, decide, repair, verify_cmd, prove, data, demo_cmd)


def run(argv: list[str] | None = None) -> int:
    """Run one command line and return its exit code (never raises)."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="maka-es", standalone_mode=False)
    except click.UsageError as exc:
        hint = f"maka-es {exc.ctx.command_path.split(' ', 1)[-1]} --help" if exc.ctx else ""
        action = f"see {hint.strip() or 'maka-es --help'}"
        err_console.print(
            f"error [usage]: {one_line(exc.format_message())}. what to do: {action}",
            markup=False,
            highlight=False,
        )
        return EXIT_USAGE
    except click.Abort:
        err_console.print("error [aborted]: interrupted. what to do: run it again", markup=False)
        return EXIT_ERROR
    except Exception as exc:
        if DEBUG["on"]:
            traceback.print_exc()
        line, code = failure_line(exc)
        err_console.print(line, markup=False, highlight=False)
        return code
    return result if isinstance(result, int) else 0


def main() -> None:
    """The ``maka-es`` console script."""
    sys.exit(run(sys.argv[1:]))
