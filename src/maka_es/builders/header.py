"""``run_header``: a valid AgentRun header with defaults, so a test states only what matters."""

from __future__ import annotations

from typing import Any

from maka_es.builders.spine import Spine


def run_header(spine: Spine | None = None, **overrides: Any) -> dict[str, Any]:
    """A minimal valid header (status ``running``) for ``spine``; ``overrides`` are wire
    (camelCase) keys such as ``status``, ``failureClass``, ``continuationSource``
    (docs/reference/ledger.md#run-header)."""
    spine = spine or Spine()
    header: dict[str, Any] = {
        "runId": spine.run_id,
        "sessionId": spine.session_id,
        "turnId": spine.turn_id,
        "invocationId": spine.invocation_id,
        "status": "running",
        "backendKind": "fake",
        "llmConnectionSlug": "test-connection",
        "modelId": "test-model",
        "cwd": "/workspace",
        "permissionMode": "ask",
        "createdAt": 1000,
        "updatedAt": 1000,
    }
    header.update(overrides)
    return header
