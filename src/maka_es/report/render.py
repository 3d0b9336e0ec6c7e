"""HTML from a ``PageView``: jinja2 templates shipped as package data, autoescaped.

Why jinja2 with autoescape and a strict undefined: event text is hostile input (a user message
may hold ``<script>``), so every value is escaped by default and a template that names a
missing field fails instead of printing nothing. The page is self-contained: its one stylesheet
and one script are inlined, and a Content-Security-Policy that allows only those two (by hash)
forbids every network load, so even markup that slipped through could neither run nor fetch
(ADR 0030). The public ``render_*`` / ``write_*`` functions live here too (issue 22, part 1).
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from maka_es.adapters.confined_fs import refuse_unusable_output
from maka_es.app import RuntimeApplication
from maka_es.errors import ReportOutputError
from maka_es.report.read import read_run_report, read_session_report
from maka_es.report.view import PageView, build_page

__all__ = [
    "render_page",
    "render_run_report",
    "render_session_report",
    "write_run_report",
    "write_session_report",
]


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("maka_es.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


@cache
def _asset(name: str) -> str:
    return (resources.files("maka_es.report") / "templates" / name).read_text(encoding="utf-8")


def _csp_source(text: str) -> str:
    """The CSP hash source of an inline ``<style>`` or ``<script>`` body."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_page(page: PageView) -> str:
    """The page as one HTML document; the same view always gives the same string."""
    css, js = _asset("report.css"), _asset("report.js")
    template = _environment().get_template("page.html.j2")
    return template.render(
        page=page, css=css, js=js, style_hash=_csp_source(css), script_hash=_csp_source(js)
    )


# ----------------------------------------------------------------------------------------------
# The report's public functions: read the store once, build the view, render, write.
#
# Why four functions: a host or the CLI either wants the HTML (``render_*``) or a file
# (``write_*``); in both, reading happens first and only in ``report/read.py``, and the file is
# written whole or not at all (ADR 0030).


def render_run_report(app: RuntimeApplication, run_id: str) -> str:
    """One run as a self-contained HTML page, with the runs of its lineage as neighbours."""
    return render_page(build_page(read_run_report(app, run_id)))


def render_session_report(app: RuntimeApplication, session_id: str) -> str:
    """Every run of a session on one self-contained HTML page."""
    return render_page(build_page(read_session_report(app, session_id)))


def write_run_report(app: RuntimeApplication, run_id: str, path: str | os.PathLike[str]) -> Path:
    """Render the run's report, then write it to ``path`` (see :func:`write_html`)."""
    return write_html(render_run_report(app, run_id), path)


def write_session_report(
    app: RuntimeApplication, session_id: str, path: str | os.PathLike[str]
) -> Path:
    """Render the session's report, then write it to ``path`` (see :func:`write_html`)."""
    return write_html(render_session_report(app, session_id), path)


def write_html(html: str, path: str | os.PathLike[str]) -> Path:
    """Write ``html`` to ``path`` whole or not at all: a temporary file beside it, flushed,
    then renamed over it. A directory, a missing or unwritable parent (the check ``export -o``
    shares) or an I/O failure raises ``ReportOutputError`` (``report_output_invalid``) and
    leaves no file behind."""
    target = Path(path)
    refuse_unusable_output(target, kind="file", what="a report")
    temporary: str | None = None
    try:
        fd, temporary = tempfile.mkstemp(prefix=".maka-report-", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(html)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        raise ReportOutputError(
            f"cannot write a report to {str(target)!r}: {exc.strerror or exc}",
            detail={"path": str(target)},
        ) from None
    return target
