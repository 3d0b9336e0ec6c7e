"""The minimal-journal floor: a tool journal in plain Python with maka_es's durability.

Why this floor next to the raw sqlite3 one: the raw floor replays bytes someone else built,
so its ratio says what the store costs but not what the decisions need. This journal makes
the same decisions a durable tool step must make, as cheaply as plain Python can: the
canonical args hash (sorted-key JSON, sha256), the deterministic operation id, a refusal of
an operation already dispatched, the same rows (the call and its dispatch fact, then the
bound response, each a fact row carrying the payload and its sha256 digest), in the same two
fsynced commits (WAL, ``synchronous=FULL``) before and after the tool. What it leaves out is
everything a minimal journal may leave out: validation of hostile input, replay, plans,
recovery. Its CPU per step on tmpfs is the floor issue 23's target 3 is stated against.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.floor import SCHEMA

TOPIC = "maka_es.run.runtime_event_recorded.v1"


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class MinimalJournal:
    """T1 (call + dispatch) committed, the tool run, T2 (bound response) committed."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute(SCHEMA)
        self.seq: dict[str, int] = {}
        self.dispatched: set[str] = set()

    def _row(self, run_id: str, event: Mapping[str, Any]) -> tuple[str, int, str, bytes]:
        seq = self.seq.get(run_id, 0) + 1
        self.seq[run_id] = seq
        payload = _canonical(event)
        fact = {
            "committed_at": int(time.time() * 1000),
            "event_id": event["id"],
            "event_seq": seq,
            "payload": payload,
            "payload_digest": _sha(payload),
        }
        return run_id, seq, TOPIC, _canonical(fact).encode()

    def _commit(self, rows: list[tuple[str, int, str, bytes]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(
            "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)",
            rows,
        )
        self.conn.execute("COMMIT")

    def execute(self, run_id: str, call: Mapping[str, Any]) -> dict[str, Any]:
        content = call["content"]
        name, args, call_id = content["name"], content["args"], content["id"]
        op = (
            "toolop_"
            + hashlib.sha256(
                json.dumps([call["invocationId"], call_id], separators=(",", ":")).encode()
            ).hexdigest()[:32]
        )
        if op in self.dispatched:
            raise RuntimeError(f"operation {op} was already dispatched")
        spine = {k: call[k] for k in ("sessionId", "invocationId", "runId", "turnId")}
        dispatch = {
            **spine,
            "id": f"{op}_dispatch",
            "author": "system",
            "partial": False,
            "ts": call["ts"],
            "refs": {"operationId": op, "toolCallId": call_id},
            "actions": {
                "toolDispatch": {
                    "canonicalArgsHash": _sha(_canonical({"args": args, "toolName": name})),
                    "operationId": op,
                    "protocol": "t1_after_preflight_v1",
                    "providerToolCallId": call_id,
                    "recoveryMode": "never_auto_retry",
                    "toolName": name,
                }
            },
        }
        self._commit([self._row(run_id, call), self._row(run_id, dispatch)])
        self.dispatched.add(op)
        started = time.perf_counter()
        result = {"kind": "text", "text": args["text"]}  # the echo tool
        response = {
            **spine,
            "id": f"{op}_response",
            "author": "tool",
            "role": "tool",
            "partial": False,
            "ts": int(time.time() * 1000),
            "refs": {"operationId": op, "toolCallId": call_id},
            "actions": {"stateDelta": {"durationMs": int((time.perf_counter() - started) * 1e3)}},
            "content": {"id": call_id, "kind": "function_response", "name": name, "result": result},
        }
        self._commit([self._row(run_id, response)])
        return result

    def close(self) -> None:
        self.conn.close()
