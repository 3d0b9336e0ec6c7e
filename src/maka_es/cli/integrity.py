"""What ``maka-es verify`` checks: the file, every stored row, every run's resolver health.

Why three levels: SQLite's own ``integrity_check`` finds a damaged file; decoding every stored
row through the fact mapper finds a row that is intact for SQLite but no longer a fact (it
fails closed with ``store_corruption``); and folding each run through the recovery resolver
finds a ledger whose tool facts contradict each other (``has_corruption``). Only these are
corruption (exit 4); a blocked plan is reported, not failed (docs/cli.md#verify).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError, StoreCorruptionError


def sqlite_integrity(path: str) -> str:
    """``ok``, or SQLite's first complaint about the file (opened read-only)."""
    uri = f"file:{Path(path).resolve()}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"
    try:
        rows = connection.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return f"unreadable: {exc}"
    finally:
        connection.close()
    answers = [str(row[0]) for row in rows]
    return "ok" if answers == ["ok"] else "; ".join(answers[:5])


def corrupt_rows(runtime: RuntimeApplication) -> list[dict[str, Any]]:
    """Every stored row the fact mapper refuses to decode."""
    found: list[dict[str, Any]] = []
    start = 1
    while True:
        page = runtime._es.recorder.select_notifications(start=start, limit=500)
        for row in page:
            try:
                runtime._es.mapper.to_domain_event(row)
            except StoreCorruptionError as exc:
                found.append(
                    {
                        "notificationId": row.id,
                        "originatorId": str(row.originator_id),
                        "topic": row.topic,
                        "error": str(exc.args[0]),
                    }
                )
        if len(page) < 500:
            return found
        start = page[-1].id + 1


def run_health(runtime: RuntimeApplication, run_id: str) -> dict[str, Any]:
    """One run: ``ok``, ``needs_attention`` (blocked plan), ``corrupt`` or ``unreadable``."""
    try:
        resolution = runtime.tool_journal.resolve_run(run_id)
        plan = runtime.plan_resume(run_id)
    except StoreCorruptionError as exc:
        return {"runId": run_id, "health": "corrupt", "issues": [exc.code], "disposition": None}
    except MakaError as exc:
        return {"runId": run_id, "health": "unreadable", "issues": [exc.code], "disposition": None}
    issues = [issue.code for issue in resolution.issues]
    if resolution.has_corruption:
        health = "corrupt"
    elif plan.disposition == "blocked":
        health = "needs_attention"
    else:
        health = "ok"
    return {"runId": run_id, "health": health, "issues": issues, "disposition": plan.disposition}
