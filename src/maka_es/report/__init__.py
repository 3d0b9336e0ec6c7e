"""The HTML run report: one self-contained page per run or per session (ADR 0030).

Above ``app`` and below ``cli`` in the layers: it reads through the application's public
surface and never writes to the store.
"""

from __future__ import annotations

from maka_es.report.pages import (
    render_run_report,
    render_session_report,
    write_run_report,
    write_session_report,
)

__all__ = ["render_run_report", "render_session_report", "write_run_report", "write_session_report"]
