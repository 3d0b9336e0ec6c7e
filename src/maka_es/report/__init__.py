"""The HTML run report: one self-contained page per run or per session (ADR 0030).

Above ``app`` and below ``cli`` in the layers: it reads through the application's public
surface and never writes to the store. It is part of the ``cli`` extra (ADR 0040): imported
without jinja2 it raises ``MissingExtraError`` (``extra_missing``) naming
``pip install 'maka_es[cli]'``.
"""

from __future__ import annotations

from maka_es.extras import REPORT_MODULES, require_extra

require_extra("cli", "the HTML run report (maka_es.report)", REPORT_MODULES)

from maka_es.report.render import (  # noqa: E402 - after the extra's check
    render_run_report,
    render_session_report,
    write_run_report,
    write_session_report,
)

__all__ = ["render_run_report", "render_session_report", "write_run_report", "write_session_report"]
