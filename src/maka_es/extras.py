"""The optional parts of maka_es and the extra each one needs (ADR 0040).

Why: the core (``maka_es``, ``RuntimeApplication``, the providers, the test kit's plugin) runs
on eventsourcing and pydantic alone; the command line and the HTML report are rings around it
whose libraries come with ``pip install 'maka_es[cli]'``. A ring imported without its extra
says so in one typed error naming that line, never a bare ``ModuleNotFoundError`` from deep
inside it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from maka_es.errors import MissingExtraError

#: What ``maka_es.cli`` imports beyond the core: typer and rich for the command, jinja2 for
#: ``maka-es report``.
CLI_MODULES = ("typer", "rich", "jinja2")
#: What ``maka_es.report`` imports beyond the core: its templates.
REPORT_MODULES = ("jinja2",)


def require_extra(extra: str, part: str, modules: Sequence[str]) -> None:
    """Import each of ``modules``, or raise :class:`MissingExtraError` for ``part`` naming
    ``pip install 'maka_es[extra]'`` and the first module (or dependency of one) missing."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            raise MissingExtraError(extra, exc.name or name, part) from exc
