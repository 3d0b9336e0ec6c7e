"""``maka-es report``: the HTML run report of one run, or of a session (docs/cli.md#report).

Why it only delegates: ``maka_es.report`` reads the store once and renders one self-contained
page (ADR 0030); the command opens the store read-only and names the file it wrote. It opens it
with the host context ``continue`` uses (the host inspector of ``--tool``/``--tools`` and the
safe-boundary flag on), so the continuation decision on the page is the one the host would get.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from maka_es.adapters.workspace import LocalHostInspector
from maka_es.cli.output import console
from maka_es.cli.providers import host_tool_names, load_tools
from maka_es.cli.root import ToolNamesOption, ToolsFactoryOption, app, settings
from maka_es.cli.store import open_store
from maka_es.report import write_run_report, write_session_report


@app.command()
def report(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Argument(help="The run to report.")] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    session: Annotated[
        str | None, typer.Option("--session", help="Report every run of this session instead.")
    ] = None,
    tool: ToolNamesOption = None,
    tools: ToolsFactoryOption = None,
) -> None:
    """Write a self-contained HTML page: timeline, tool operations, plans, lineage."""
    if (run is None) == (session is None):
        raise typer.BadParameter("name a RUN, or --session SESSION (not both)")
    names = host_tool_names(tool, load_tools(tools))
    with open_store(
        settings(ctx).store,
        read_only=True,
        host_inspector=LocalHostInspector(tool_names=names),
        safe_boundary_resume=True,
    ) as runtime:
        if session is not None:
            written = write_session_report(runtime, session, output)
        else:
            assert run is not None
            written = write_run_report(runtime, run, output)
    console.print(str(written), highlight=False)
