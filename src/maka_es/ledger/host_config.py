"""A host's constant run-header fields (docs/reference/ledger.md#run-header).

Why a model of its own: every run a host creates carries the same backend kind, connection
slug, model id and permission mode; spelling a whole header per run is ceremony that invites
drift. :class:`HostConfig` holds those fields once (frozen, validated), and
:func:`header_for_run` combines them with a run's spine and the session's cwd and workspace
identity into the admission header ``create_run`` already accepts. Pure: the timestamp and
the ids are passed in by the application edge (its clock and id factory).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, StrictStr

from maka_es.wire.run_header import RunHeader

__all__ = ["HostConfig", "header_for_run"]


class HostConfig(BaseModel):
    """The run-header fields that are constant for a host; ``cwd`` (optional) is the workspace
    the host works in: ``open_session`` defaults to it and ``start_run`` uses it when set,
    else the session's cwd."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend_kind: Literal["ai-sdk", "fake"]
    llm_connection_slug: StrictStr
    model_id: StrictStr
    permission_mode: StrictStr
    cwd: StrictStr | None = None


def header_for_run(
    config: HostConfig,
    *,
    session_id: str,
    session_cwd: str,
    workspace_identity: str | None,
    run_id: str,
    invocation_id: str,
    turn_id: str,
    now_ms: int,
) -> RunHeader:
    """The admission header (status ``running``) of a new run of this host."""
    header: dict[str, object] = {
        "runId": run_id,
        "sessionId": session_id,
        "turnId": turn_id,
        "invocationId": invocation_id,
        "status": "running",
        "backendKind": config.backend_kind,
        "llmConnectionSlug": config.llm_connection_slug,
        "modelId": config.model_id,
        "permissionMode": config.permission_mode,
        "cwd": config.cwd if config.cwd is not None else session_cwd,
        "createdAt": now_ms,
        "updatedAt": now_ms,
    }
    if workspace_identity is not None:  # absent, never null, on the wire
        header["workspaceIdentity"] = workspace_identity
    return RunHeader.decode(header)
