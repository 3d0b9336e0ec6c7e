"""``maka-es demo``: the ``make demo`` story at any kill point (docs/cli.md#demo).

Why it delegates: ``cli/demo.py`` is the one demo; this command only exposes its kill point and
directory, so the two can never tell different stories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from maka_es.cli.demo import DEFAULT_POINT, KILL_POINTS, run_demo
from maka_es.cli.root import app
from maka_es.errors import CommandLineUsageError


@app.command()
def demo(
    crash_at: Annotated[
        str, typer.Option("--crash-at", help=f"Kill point: {', '.join(KILL_POINTS)}.")
    ] = DEFAULT_POINT,
    workspace: Annotated[
        Path, typer.Option("--workspace", help="Directory for the demo (replaced).")
    ] = Path("demo-data"),
) -> None:
    """Kill the example agent with SIGKILL inside its Write, restart it, check the result."""
    if crash_at not in KILL_POINTS:
        raise CommandLineUsageError(
            f"unknown kill point {crash_at!r}", f"one of {', '.join(KILL_POINTS)}"
        )
    code = run_demo(workspace, crash_at)
    if code != 0:
        raise typer.Exit(code)
