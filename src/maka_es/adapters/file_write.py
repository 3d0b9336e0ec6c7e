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

Writes never leave the workspace: the path must be relative without ``..``, every directory
below the workspace root is opened without following symlinks and the file is replaced through
the descriptor of its directory (see ``adapters.confined_fs``), and the temporary file is
created exclusively under a random name. A symlink at the target or on the way to it is refused
with a typed :class:`~maka_es.errors.WorkspacePathRefusedError`; the reconciler's ``prepare``
runs the same checks, so through ``ToolRuntime`` such a call is refused before T1. The
workspace root itself may be a symlink: where it lives is the host's choice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from maka_es.adapters.confined_fs import Violation, open_directory, read_file, replace_file
from maka_es.errors import MakaError, WorkspacePathRefusedError
from maka_es.tooljournal.runtime import ReconcileObservation, Tool, ToolContext, state_digest

FILE_WRITE_TOOL = "Write"


class FileWriteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    content: str


def _encodable(relative: str) -> bool:
    """False for strings no file name can hold (NUL, a lone surrogate)."""
    try:
        os.fsencode(relative)
    except UnicodeEncodeError:
        return False
    return "\0" not in relative


def workspace_parts(relative: str) -> tuple[str, ...]:
    """The components of a workspace-relative file path, refused when it could leave the
    workspace (absolute, ``..``) or does not name a file (empty, ends in ``/`` or ``.``).

    ``..`` is refused even where it would stay inside: below a symlinked directory it would
    not mean "the parent I see", and a tool never needs it.
    """
    if not _encodable(relative):
        raise WorkspacePathRefusedError(
            f"path {relative!r} cannot name a file", code="workspace_path_invalid"
        )
    raw = relative.split("/")
    if relative.startswith("/") or ".." in raw:
        raise WorkspacePathRefusedError(
            f"path {relative!r} escapes the workspace",
            code="workspace_path_escape",
            detail={"path": relative},
        )
    if raw[-1] in ("", "."):
        raise WorkspacePathRefusedError(
            f"path {relative!r} does not name a file",
            code="workspace_path_invalid",
            detail={"path": relative},
        )
    return tuple(part for part in raw if part not in ("", "."))


def _refuse(violation: Violation) -> WorkspacePathRefusedError:
    message, detail = (
        f"{violation.path} in the workspace {violation.problem}",
        {"path": violation.path},
    )
    if violation.kind == "symlink":
        return WorkspacePathRefusedError(message, code="workspace_symlink_refused", detail=detail)
    return WorkspacePathRefusedError(message, code="workspace_path_invalid", detail=detail)


def read_workspace_file(root: Path, relative: str) -> bytes | None:
    """The bytes of the file at ``relative`` below ``root``; ``None`` when it does not exist."""
    parts = workspace_parts(relative)
    with open_directory(root, parts[:-1], _refuse, create=False) as directory:
        if directory is None:
            return None
        return read_file(directory, parts[-1], "/".join(parts), _refuse)


def write_workspace_file(root: Path, relative: str, data: bytes) -> None:
    """Replace the file at ``relative`` below ``root`` with ``data`` atomically and durably,
    creating missing directories below the root."""
    parts = workspace_parts(relative)
    with open_directory(root, parts[:-1], _refuse, create=True) as directory:
        assert directory is not None
        replace_file(directory, parts[-1], data, "/".join(parts), _refuse)


class FileWriteReconciler:
    """Records prior/expected digests at T1; compares the file with them after a crash."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def prepare(self, args: FileWriteArgs) -> Mapping[str, Any]:
        prior = read_workspace_file(self.root, args.path)  # refuses hostile paths before T1
        return {
            "path": args.path,
            "priorDigest": state_digest(prior),
            "expectedDigest": state_digest(args.content.encode("utf-8")),
        }

    def observe(self, args: FileWriteArgs, metadata: Mapping[str, Any]) -> ReconcileObservation:
        try:
            current = state_digest(read_workspace_file(self.root, args.path))
        except (OSError, ValueError, MakaError) as exc:
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
        write_workspace_file(root, args.path, data)
        return {"kind": "text", "text": f"wrote {len(data)} bytes to {args.path}"}

    return Tool(
        name=name,
        input_model=FileWriteArgs,
        run=run,
        recovery_mode="reconcile",
        reconciler=FileWriteReconciler(root),
    )
