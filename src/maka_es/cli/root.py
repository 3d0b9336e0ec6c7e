"""The ``maka-es`` typer application and its global options (docs/cli.md#global-options).

Why a module of its own: the command modules register themselves on this one application, and
``main`` (``cli/main.py``) imports them all; neither imports the other's internals.
"""

from __future__ import annotations

from typing import Annotated

import typer

from maka_es.cli.output import Settings
from maka_es.cli.store import DEFAULT_STORE, STORE_ENV

app = typer.Typer(
    name="maka-es",
    help="Inspect, plan, repair and continue crash-safe agent runs (docs/cli.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

#: Set by the global callback; the exit handler in ``main`` reads it to print a traceback.
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


def settings(ctx: typer.Context) -> Settings:
    """The global options of this invocation."""
    found = ctx.find_object(Settings)
    if found is None:  # a command invoked without the group: defaults
        return Settings(store=DEFAULT_STORE)
    return found


#: The ``--json`` option every read command takes.
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/cli.md).")]
#: ``--tool NAME`` (repeat): a tool name this host offers, for the host inspector.
ToolNamesOption = Annotated[
    list[str] | None,
    typer.Option("--tool", help="A tool name this host offers (repeat)."),
]
#: ``--tools module:factory``: the host's tool catalogue (the agent loop runs them).
ToolsFactoryOption = Annotated[
    str | None, typer.Option("--tools", help="module:factory returning the host's tools.")
]
