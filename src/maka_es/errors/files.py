"""Errors of the JSONL ledger, the workspace identity and workspace paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maka_es.errors.base import MakaError

# --- JSONL ledger, workspace identity and workspace paths ----------------------------------


class JsonlLedgerError(MakaError):
    """A JSONL ledger line is not a valid committed RuntimeEvent (nor a torn tail), or another
    refusal of the JSONL ledger named by ``code`` (``ledger_symlink_refused``, ...)."""

    default_code = "invalid_jsonl_line"

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        code: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        at_line = {} if line is None else {"line": line}
        super().__init__(message, code=code, detail={**(detail or {}), **at_line})
        self.line = line


class WorkspaceIdentityError(MakaError):
    """The workspace identity could not be resolved; nothing else about the workspace is
    trusted. Catch this base to treat every workspace refusal alike (a resume parks)."""

    default_code = "workspace_identity_error"


class WorkspaceNotFoundError(WorkspaceIdentityError, LookupError):
    """The workspace path does not exist (or a component of it is not a directory)."""

    default_code = "workspace_not_found"


class InvalidWorkspaceError(WorkspaceIdentityError, ValueError):
    """The workspace path exists but is not a directory."""

    default_code = "invalid_workspace"


class InvalidWorkspaceMarkerError(WorkspaceIdentityError, ValueError):
    """``.maka-workspace.json`` exists but is not one bounded regular file with the exact
    marker shape. Never repaired or replaced: an existing marker is authoritative."""

    default_code = "invalid_workspace_marker"


class WorkspaceIdentityChangedError(WorkspaceIdentityError):
    """The workspace directory was replaced (device/inode changed) while its marker was being
    published: the marker cannot be attributed to the resolved directory."""

    default_code = "workspace_identity_changed"


class WorkspaceIoFailedError(WorkspaceIdentityError):
    """Any other I/O failure (permissions, a malformed enclosing Git repository, a full Git
    exclude file, a filesystem without hard links ...). No marker was published by us."""

    default_code = "workspace_io_failed"


class WorkspacePathRefusedError(MakaError, ValueError):
    """A path a tool (``Write``) was given could reach outside its workspace, so nothing was
    read or written there. ``code``: ``workspace_path_escape``, ``workspace_symlink_refused``
    or ``workspace_path_invalid`` (see :mod:`maka_es.codes`)."""

    default_code = "workspace_path_refused"


class ReportOutputError(MakaError, OSError):
    """A run report cannot be written where asked (a directory, a missing parent, an I/O
    failure); no file is left behind (ADR 0030)."""

    default_code = "report_output_invalid"
