"""HTML from a ``PageView``: jinja2 templates shipped as package data, autoescaped.

Why jinja2 with autoescape and a strict undefined: event text is hostile input (a user message
may hold ``<script>``), so every value is escaped by default and a template that names a
missing field fails instead of printing nothing. The page is self-contained: its one stylesheet
and one script are inlined, and a Content-Security-Policy that allows only those two (by hash)
forbids every network load, so even markup that slipped through could neither run nor fetch
(ADR 0030).
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined

from maka_es.report.view_models import PageView

__all__ = ["render_page"]


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
