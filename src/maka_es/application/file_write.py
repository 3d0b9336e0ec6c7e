"""A file-write tool with a reconciler: a crashed write is settled without writing again.

Why it exists: the reference runtime declares ``reconcile`` but wires no reconciler, so every
interrupted Write parks. Here T1 records the digest of the file before the write (prior) and
of the content to be written (expected). After a crash, the reconciler reads the file:

* matches the expected digest -> the write happened: commit a completed recovery bundle with a
  synthesized outcome, without touching the file again;
* matches the prior digest -> the write did not happen: park (no automatic redo without CAS);
* anything else -> ``diverged`` (someone else changed it): park; unreadable -> park.

Writes are atomic (temp file, fsync, rename, fsync of the directory), so the file is always
either the prior or the expected content, never a torn mix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from maka_es.application.tools import ReconcileObservation, Tool, ToolContext, state_digest

FILE_WRITE_TOOL = "Write"


class FileWriteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    content: str


def _resolve(root: Path, relative: str) -> Path:
    target = (root / relative).resolve()
    if not target.is_relative_to(root.resolve()):
        raise ValueError(f"path {relative!r} escapes the workspace")
    return target


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.maka-tmp-{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class FileWriteReconciler:
    """Records prior/expected digests at T1; compares the file with them after a crash."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def prepare(self, args: FileWriteArgs) -> Mapping[str, Any]:
        path = _resolve(self.root, args.path)
        return {
            "path": args.path,
            "priorDigest": state_digest(_read(path)),
            "expectedDigest": state_digest(args.content.encode("utf-8")),
        }

    def observe(self, args: FileWriteArgs, metadata: Mapping[str, Any]) -> ReconcileObservation:
        try:
            current = state_digest(_read(_resolve(self.root, args.path)))
        except (OSError, ValueError) as exc:
            return ReconcileObservation("unreadable", state_digest(type(exc).__name__.encode()))
        if current == metadata.get("expectedDigest"):
            size = len(args.content.encode("utf-8"))
            result = {"kind": "text", "text": f"wrote {size} bytes to {args.path} (reconciled)"}
            return ReconcileObservation("matches_expected_state", current, result)
        if current == metadata.get("priorDigest"):
            return ReconcileObservation("matches_prior_state", current)
        return ReconcileObservation("diverged", current)


def file_write_tool(root: Path, *, name: str = FILE_WRITE_TOOL) -> Tool[FileWriteArgs]:
    """The ``Write`` tool over the workspace ``root``, recoverable by reconciliation."""

    def run(args: FileWriteArgs, context: ToolContext) -> dict[str, Any]:
        data = args.content.encode("utf-8")
        atomic_write(_resolve(root, args.path), data)
        return {"kind": "text", "text": f"wrote {len(data)} bytes to {args.path}"}

    return Tool(
        name=name,
        input_model=FileWriteArgs,
        run=run,
        recovery_mode="reconcile",
        reconciler=FileWriteReconciler(root),
    )
