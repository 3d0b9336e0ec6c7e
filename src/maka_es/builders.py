"""Deterministic builders of wire-shaped RuntimeEvents and run headers.

Why: tests (ours and hosts') need many small, *valid* ledgers. Building them by hand invites
typos that silently make an example test something else; these builders produce exactly the
shapes of spec §1.6 with deterministic ids and timestamps (no clock, no randomness).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maka_es.wire.events import RuntimeEvent


@dataclass(frozen=True)
class Spine:
    """The identity every event of one run carries."""

    session_id: str = "s1"
    invocation_id: str = "i1"
    run_id: str = "r1"
    turn_id: str = "t1"

    def envelope(self, event_id: str, ts: float, role: str, author: str) -> dict[str, Any]:
        return {
            "id": event_id,
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "ts": ts,
            "partial": False,
            "role": role,
            "author": author,
        }


@dataclass
class LedgerBuilder:
    """Appends wire dicts with ids ``<prefix><n>`` and ``ts = base_ts + n``."""

    spine: Spine = field(default_factory=Spine)
    prefix: str = "e"
    base_ts: int = 1000
    events: list[dict[str, Any]] = field(default_factory=list)

    def _next(self, role: str, author: str, event_id: str | None = None) -> dict[str, Any]:
        n = len(self.events) + 1
        return self.spine.envelope(event_id or f"{self.prefix}{n}", self.base_ts + n, role, author)

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return event

    def user(
        self, text: str = "fix the port", *, marker: bool = False, **kw: Any
    ) -> dict[str, Any]:
        event = self._next("user", "user", kw.pop("event_id", None))
        event["content"] = {"kind": "text", "text": text}
        if marker:
            event["actions"] = {"runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}}
        return self.add({**event, **kw})

    def model_text(self, text: str = "working on it", **kw: Any) -> dict[str, Any]:
        event = self._next("model", "agent", kw.pop("event_id", None))
        event["content"] = {"kind": "text", "text": text}
        return self.add({**event, **kw})

    def call(
        self, call_id: str = "tool-1", name: str = "Bash", args: Any = None, **kw: Any
    ) -> dict[str, Any]:
        event = self._next("model", "agent", kw.pop("event_id", None))
        event["content"] = {
            "kind": "function_call",
            "id": call_id,
            "name": name,
            "args": {"command": "do-it"} if args is None else args,
        }
        return self.add({**event, **kw})

    def response(
        self,
        call_id: str = "tool-1",
        name: str = "Bash",
        result: Any = None,
        *,
        is_error: bool | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        event = self._next("tool", "tool", kw.pop("event_id", None))
        content: dict[str, Any] = {
            "kind": "function_response",
            "id": call_id,
            "name": name,
            "result": {"kind": "text", "text": "ok"} if result is None else result,
        }
        if is_error is not None:
            content["isError"] = is_error
        event["content"] = content
        return self.add({**event, **kw})

    def terminal(self, status: str = "completed", **kw: Any) -> dict[str, Any]:
        event = self._next("system", "system", kw.pop("event_id", None))
        event["status"] = status
        event["actions"] = {"endInvocation": True}
        if status == "failed":
            event["content"] = {
                "kind": "error",
                "code": "provider_error",
                "reason": "provider_error",
                "message": "provider failed",
            }
        return self.add({**event, **kw})

    def decoded(self) -> list[RuntimeEvent]:
        return [RuntimeEvent.model_validate(event) for event in self.events]


def run_header(spine: Spine | None = None, **overrides: Any) -> dict[str, Any]:
    """A minimal valid AgentRun header (status ``running``) for ``spine``."""
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
