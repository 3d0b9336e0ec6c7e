"""The raw floor: plain ``sqlite3`` on WAL with ``synchronous=FULL``, committing the same rows
(the same bytes) in the same number of transactions as a maka_es tool step.

Why this is the floor: a durable tool step must make T1 durable before the tool runs and T2
durable before the result is returned; two fsynced commits of those bytes is what any design
pays, so maka_es's overhead is its ratio to this.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

Row = tuple[str, int, str, bytes]

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stored_events (notification_id INTEGER PRIMARY KEY, "
    "originator_id TEXT NOT NULL, originator_version INTEGER NOT NULL, topic TEXT, "
    "state BLOB, UNIQUE (originator_id, originator_version))"
)


class RawFloor:
    """One connection; :meth:`step` commits each group of rows in its own transaction."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute(SCHEMA)
        self.version = 0

    def step(self, commits: Sequence[Sequence[Row]]) -> None:
        for rows in commits:
            self.conn.execute("BEGIN")
            for originator, _, topic, state in rows:
                self.version += 1
                self.conn.execute(
                    "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                    "VALUES (?, ?, ?, ?)",
                    (originator, self.version, topic, state),
                )
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()
