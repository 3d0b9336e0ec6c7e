"""The report's public functions: read the store once, build the view, render, write.

Why four functions: a host or the CLI either wants the HTML (``render_*``) or a file
(``write_*``); in both, reading happens first and only in ``report/read.py``, and the file is
written whole or not at all (ADR 0030).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from maka_es.adapters.confined_fs import refuse_unusable_output
from maka_es.app import RuntimeApplication
from maka_es.errors import ReportOutputError
from maka_es.report.read import read_run_report, read_session_report
from maka_es.report.render import render_page
from maka_es.report.view import build_page

__all__ = ["render_run_report", "render_session_report", "write_run_report", "write_session_report"]


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
