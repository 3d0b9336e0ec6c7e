"""Where an operator asks for output (a run report, an exported JSONL ledger): usable or refused.

Why one check for both: ``report -o`` and ``export -o`` write what the operator names, and a
path that cannot take it (its parent missing or a file, a directory where a file belongs or the
reverse, a directory this process may not write) must be the same typed refusal,
``report_output_invalid`` with ``detail.path`` and ``detail.reason``, raised before the store is
read and before anything is created, instead of an ``OSError`` from halfway through the write.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from maka_es.errors import ReportOutputError

__all__ = ["OutputKind", "refuse_unusable_output"]

#: What the output is: one file (a report) or a directory tree (a JSONL ledger root).
OutputKind = Literal["file", "directory"]


def _problem(target: Path, kind: OutputKind) -> str | None:
    """Why nothing of ``kind`` can be written at ``target`` (``None``: it can be tried)."""
    if target.exists():
        if kind == "file" and target.is_dir():
            return "is_a_directory"
        if kind == "directory" and not target.is_dir():
            return "not_a_directory"
        where = target if kind == "directory" else target.parent
    else:
        where = target.parent
        if not where.exists():
            return "parent_missing"
        if not where.is_dir():
            return "parent_not_a_directory"
    if not os.access(where, os.W_OK | os.X_OK):  # also false for root on an immutable directory
        return "not_writable"
    return None


def refuse_unusable_output(target: Path, *, kind: OutputKind, what: str) -> None:
    """Raise ``report_output_invalid`` when ``what`` (``"a report"``, ``"a ledger"``) cannot be
    written at ``target``. A ``directory`` may exist (it is written into) or be created in an
    existing, writable parent; a ``file`` replaces a file or is created in such a parent."""
    problem = _problem(target, kind)
    if problem is not None:
        raise ReportOutputError(
            f"cannot write {what} to {str(target)!r}: {problem.replace('_', ' ')}",
            detail={"path": str(target), "reason": problem},
        )
