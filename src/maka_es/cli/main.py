"""``maka-es``: the typer application, its global options, its commands, and the exit handler
around them (docs/cli.md#global-options, docs/cli.md#exit-codes; ADR 0029).

Why the commands are registered here and not where they are defined: the command modules
(``inspect``, ``operator``, ``data``, ``demo``) are plain functions over ``cli/store.py``, so
none of them imports this module and the order of the commands in ``--help`` is this one list.
Why a handler around typer: the documented exit codes and the one-line error format hold for
every command and for usage errors too, so no traceback or help box reaches an operator unless
``--debug`` asks for it.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Annotated

import typer

from maka_es.cli import data, demo, inspect, operator
from maka_es.cli.store import (
    DEFAULT_STORE,
    EXIT_ERROR,
    EXIT_USAGE,
    STORE_ENV,
    Settings,
    err_console,
    failure_line,
    one_line,
)

app = typer.Typer(
    name="maka-es",
    help="Inspect, plan, repair and continue crash-safe agent runs (docs/cli.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

#: Set by the global callback; the exit handler (``run``) reads it to print a traceback.
DEBUG = {"on": False}


@app.callback()
def global_options(
    ctx: typer.Context,
    store: Annotated[
        str,
        typer.Option(
            "--store",
            envvar=STORE_ENV,
            help="SQLite path or PostgreSQL URL of the store.",
            show_default=True,
        ),
    ] = DEFAULT_STORE,
    debug: Annotated[
        bool, typer.Option("--debug", help="Print the traceback of a failure.")
    ] = False,
) -> None:
    """Inspect, plan, repair and continue crash-safe agent runs (docs/cli.md)."""
    DEBUG["on"] = debug
    ctx.obj = Settings(store=store, debug=debug)


#: The commands, in the order ``maka-es --help`` lists them, with a help text of their own where
#: the docstring is not it: ``resume SESSION`` is the documented operator name of ``continue``
#: (plan, then continue the session from its last safe boundary); one command, two names.
COMMANDS: tuple[tuple[str, Callable[..., None], str | None], ...] = (
    ("import", data.import_, None),
    ("export", data.export, None),
    ("schema", data.schema, None),
    ("plan", operator.plan, None),
    ("continue", operator.continue_, None),
    ("resume", operator.continue_, "Resume SESSION: the same command as `continue`."),
    ("demo", demo.demo_command, None),
    ("sessions", inspect.sessions, None),
    ("runs", inspect.runs, None),
    ("show", inspect.show, None),
    ("ops", inspect.ops, None),
    ("crash-matrix", data.crash_matrix, None),
    ("recover", operator.recover, None),
    ("attest", operator.attest, None),
    ("fork", operator.fork, None),
    ("end-run", operator.end_run, None),
    ("report", inspect.report, None),
    ("verify", data.verify, None),
)
for _name, _command, _help in COMMANDS:
    app.command(_name, help=_help)(_command)


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
