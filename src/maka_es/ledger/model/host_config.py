"""A host's constant run-header fields (docs/reference/ledger.md#run-header).

Why a model of its own: every run a host creates carries the same backend kind, connection
slug, model id and permission mode; spelling a whole header per run is ceremony that invites
drift. :class:`HostConfig` holds those fields once (frozen, validated), and
:func:`header_for_run` combines them with a run's spine and the session's cwd and workspace
identity into the admission header ``create_run`` already accepts. Pure: the timestamp and
the ids are passed in by the application edge (its clock and id factory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from maka_es.errors import InvalidHostConfigError
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

    if not TYPE_CHECKING:  # the pydantic mypy plugin keeps the typed keyword signature

        def __init__(self, **data: Any) -> None:
            try:
                super().__init__(**data)
            except ValidationError as exc:
                raise _invalid(exc) from None

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """Validate a mapping (or an instance); ``invalid_host_config`` when it does not fit."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise _invalid(exc) from None

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """Validate a JSON document; ``invalid_host_config`` when it does not fit."""
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            raise _invalid(exc) from None


def _invalid(exc: ValidationError) -> InvalidHostConfigError:
    """The typed refusal for ``exc``: each bad field and pydantic's error type, no values
    (a host config may be built from secrets in the environment). pydantic validates a
    mapping through ``__init__``, so the refusal it raised there may come back wrapped."""
    for error in exc.errors(include_url=False, include_input=False):
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, InvalidHostConfigError):
            return cause
    errors = [
        {"field": ".".join(str(part) for part in error["loc"]) or "<root>", "type": error["type"]}
        for error in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    named = ", ".join(f"{error['field']} ({error['type']})" for error in errors)
    return InvalidHostConfigError(f"HostConfig: invalid {named}", detail={"errors": errors})


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
