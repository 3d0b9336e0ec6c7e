"""The three-tool agent of the liveness test: read a file, ``Write`` a file, send an email.

Why here: tests/crash/test_live_agent.py kills this host at random points and restarts it; the
host code must be what a host writes (``recover``, ``resume``, ``run_turn``), with the probes
beside it: every request the scripted model receives is appended to ``requests.jsonl``, every
landed workspace write to ``writes.log``, every email to ``outbox.txt`` (all fsynced), so the
parent can count side effects and check requests across SIGKILLs. Two user turns: the first
reads the config and writes ``port.txt``; the second sends one email (``never_auto_retry``).
``cli_provider`` / ``cli_tools`` are the same model and tools for ``maka-es fork --execute``
(the operator's fork, run as its own process and killed there too, ``LIVE_AGENT_*`` env).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel

from maka_es import HostConfig, OpenAIChatProvider, RuntimeApplication, failpoints
from maka_es.adapters import file_write
from maka_es.adapters.file_write import file_write_tool, read_workspace_file
from maka_es.providers.protocol import Provider
from maka_es.tooljournal.runtime import Tool, ToolContext

SESSION = "s1"
#: The two user turns, in order: (run id, prompt, final answer).
TURNS = (
    ("r1", "write the port from config.json into port.txt", "Done: port.txt holds the port."),
    ("r2", "email ops that port.txt is written", "Done: ops were told."),
)
REQUESTS, WRITES, OUTBOX, OUTCOME = "requests.jsonl", "writes.log", "outbox.txt", "outcome.json"
#: What ``maka-es fork --execute`` reads: the seed's directory, and a kill (``name:hits``)
#: announced on the file descriptor ``LIVE_AGENT_KILL_FD``.
ROOT_ENV, KILL_ENV, KILL_FD_ENV = "LIVE_AGENT_ROOT", "LIVE_AGENT_KILL", "LIVE_AGENT_KILL_FD"
#: Host failpoints: inside a model call (request recorded, no answer yet), and inside the
#: email tool after its line landed (T2 not written).
MODEL_CALL = "live.model.call"
AFTER_EMAIL = "live.email.after_append"
BEFORE_EMAIL = "live.email.before_append"
HOST: dict[str, Any] = {
    "backend_kind": "ai-sdk",
    "llm_connection_slug": "main",
    "model_id": "scripted",
    "permission_mode": "ask",
}


def append_line(path: Path, line: str) -> None:
    """Append one line and fsync it: the parent reads it after a SIGKILL."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class ReadArgs(BaseModel):
    path: str


class EmailArgs(BaseModel):
    to: str
    body: str


def read_tool(workspace: Path) -> Tool[ReadArgs]:
    def run(args: ReadArgs, context: ToolContext) -> dict[str, Any]:
        data = read_workspace_file(workspace, args.path) or b""
        return {"kind": "text", "text": data.decode("utf-8")}

    return Tool("ReadConfig", ReadArgs, run, recovery_mode="replay_safe")


def email_tool(root: Path) -> Tool[EmailArgs]:
    """Appends ``to: body (operation)`` to the outbox: a side effect nothing can check."""

    def run(args: EmailArgs, context: ToolContext) -> dict[str, Any]:
        failpoints.hit(BEFORE_EMAIL)
        append_line(root / OUTBOX, f"{args.to}: {args.body}")
        failpoints.hit(AFTER_EMAIL)
        return {"kind": "text", "text": "sent"}

    return Tool("SendEmail", EmailArgs, run, recovery_mode="never_auto_retry")


def _completion(
    n: int, content: str | None, call: tuple[str, dict[str, Any]] | None, sdk: bool = True
) -> Any:
    """The SDK's ``ChatCompletion``, or with ``sdk=False`` its JSON (which the provider takes
    as well: the fork's CLI process then needs no ``openai`` import, a second of its start)."""
    calls: list[dict[str, Any]] = []
    if call is not None:
        function = {"name": call[0], "arguments": json.dumps(call[1])}
        call_id = f"call_{uuid.uuid4().hex[:12]}"  # unique, as a real provider's are
        calls.append({"id": call_id, "type": "function", "function": function})
    message = {"role": "assistant", "content": content, "tool_calls": calls or None}
    data = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}
        ],
    }
    if not sdk:
        return data
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(data)


#: Prompts of another session (the two-host test): one read, then the port as the answer.
LOOKUP = "which port is configured"


def lookup_answer(port: int) -> str:
    return f"The port is {port}."


def _not_applied(text: str) -> bool:
    return "not_applied" in text or "not applied" in text


class ScriptedClient:
    """``chat.completions.create`` whose next step follows from the request alone (so a
    restarted process picks up where it was); records every request first (to ``requests``,
    and takes ``delay`` seconds: the two-host test's other conversation is slow)."""

    def __init__(
        self, root: Path, requests: str = REQUESTS, delay: float = 0.0, *, sdk: bool = True
    ) -> None:
        self.root = root
        self.sdk = sdk
        self.requests = requests
        self.delay = delay
        self.chat = SimpleNamespace(completions=self)
        self.n = 0

    def create(self, *, messages: list[dict[str, Any]], **_: Any) -> Any:
        append_line(self.root / self.requests, json.dumps(messages, default=str))
        failpoints.hit(MODEL_CALL)
        time.sleep(self.delay)
        self.n += 1
        n = self.n
        # this turn: its prompt is the last user message (the session history, ADR 0038,
        # holds the earlier turns before it), its results the tool messages after it
        last = max(n for n, m in enumerate(messages) if m["role"] == "user")
        prompt = str(messages[last]["content"])
        results = [str(m["content"]) for m in messages[last:] if m["role"] == "tool"]
        if prompt.startswith(LOOKUP):  # the two-host test's other session: read, then answer
            if not results:
                return _completion(n, None, ("ReadConfig", {"path": "config.json"}), sdk=self.sdk)
            return _completion(n, lookup_answer(json.loads(results[0])["port"]), None, sdk=self.sdk)
        if prompt == TURNS[0][1]:
            if not results:
                return _completion(n, None, ("ReadConfig", {"path": "config.json"}), sdk=self.sdk)
            if len(results) == 1 or _not_applied(results[-1]):
                port = json.loads(results[0])["port"]
                args = {"path": "port.txt", "content": f"{port}\n"}
                return _completion(n, None, ("Write", args), sdk=self.sdk)
            return _completion(n, TURNS[0][2], None, sdk=self.sdk)
        if not results or _not_applied(results[-1]):
            return _completion(
                n, None, ("SendEmail", {"to": "ops", "body": "port.txt written"}), sdk=self.sdk
            )
        return _completion(n, TURNS[1][2], None, sdk=self.sdk)


def instrument_writes(root: Path) -> None:
    """Every landed workspace write appends its path to ``writes.log``."""
    original = file_write.write_workspace_file

    def write(workspace: Path, relative: str, data: bytes) -> None:
        original(workspace, relative, data)
        append_line(root / WRITES, relative)

    setattr(file_write, "write_workspace_file", write)  # noqa: B010 - the tool reads it late


def tools_for(root: Path) -> list[Tool[Any]]:
    workspace = root / "workspace"
    return [read_tool(workspace), file_write_tool(workspace), email_tool(root)]


def open_app(root: Path, store: str, **host: Any) -> RuntimeApplication:
    """The host's application (``host``: its ``host_id`` / ``lease_ms`` when several hosts
    share the store)."""
    config = HostConfig(**HOST, cwd=str(root / "workspace"))
    return RuntimeApplication.open(
        store, tools=tools_for(root), host_config=config, safe_boundary_resume=True, **host
    )


def finish_session(
    app: RuntimeApplication, model: Provider, session: str = SESSION
) -> dict[str, Any]:
    """Resume the session, then each turn it has not had (what a host does at every start,
    and what a sweeping host does for a session whose run it took over)."""
    resumed = app.resume(session, model)
    outcome: dict[str, Any] = {"resume": resumed.status, "runId": resumed.run_id}
    if resumed.status == "parked":
        return outcome | {
            "reasons": list(resumed.reasons),
            "commands": list(resumed.operator_commands),
        }
    known = {header.run_id for header in app.list_runs(session)}
    for run_id, prompt, _ in TURNS:
        runs = app.list_runs(session)
        if runs and runs[-1].status != "completed":
            outcome["unfinished"] = [runs[-1].run_id, runs[-1].status]
            break
        if run_id not in known:
            turn = app.run_turn(session, prompt, model, run_id=run_id)
            outcome[run_id] = [turn.status, turn.answer]
            if turn.status != "completed":
                break
    return outcome


def main(root: Path, store: str) -> dict[str, Any]:
    """The host at every start: recover, resume, then each turn the session has not had.
    Writes what it did to ``outcome.json`` (the parent reads it)."""
    model = OpenAIChatProvider(ScriptedClient(root), model="scripted")
    with open_app(root, store) as app:
        app.recover()
        app.open_session(SESSION)
        outcome = finish_session(app, model)
    (root / OUTCOME).write_text(json.dumps(outcome))
    return outcome


def arm_kill(kill: tuple[str, int], announce: Callable[[], None]) -> None:
    """Block for good at the ``kill[1]``-th hit of failpoint ``kill[0]``, after ``announce``
    (the parent then SIGKILLs this process there)."""
    hits = 0

    def block(_: str) -> None:
        nonlocal hits
        hits += 1
        if hits == kill[1]:
            announce()
            time.sleep(3600)

    failpoints.arm(kill[0], block)


def cli_provider() -> Provider:
    """``--provider`` of ``maka-es fork --execute``: the scripted model of ``LIVE_AGENT_ROOT``;
    arms the kill named by ``LIVE_AGENT_KILL`` (the CLI loads it before it opens the store)."""
    root = Path(os.environ[ROOT_ENV])
    kill = os.environ.get(KILL_ENV)
    if kill:
        name, hits = kill.rsplit(":", 1)
        fd = int(os.environ[KILL_FD_ENV])

        def announce() -> None:
            os.write(fd, b"INSIDE\n")

        arm_kill((name, int(hits)), announce)
    return OpenAIChatProvider(ScriptedClient(root, sdk=False), model="scripted")


def cli_tools() -> list[Tool[Any]]:
    """``--tools`` of ``maka-es fork --execute``: the agent's tools, writes probed."""
    root = Path(os.environ[ROOT_ENV])
    instrument_writes(root)
    return tools_for(root)
