"""What the SQL recovery-status stores share: the schema version, the row's columns, how a
row becomes statement parameters and back, and the position check inside a commit.

Why one module: the SQLite and PostgreSQL stores persist the same rows under the same
``SCHEMA_VERSION`` (docs/adr/0012-startup-recovery-and-read-model.md); only their SQL differs.
Keeping the column order and the row encoding here means the two can never drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from maka_es.recovery.status_store import RunRecoveryStatus, check_position

__all__ = [
    "SCHEMA_VERSION",
    "STATUS_COLUMNS",
    "check_fetched_position",
    "row_from_values",
    "row_values",
    "stream_link_values",
]

#: Bump when the tables change shape or a row's meaning changes: the read model is then dropped
#: and rebuilt from scratch. 2: a terminal header without a terminal event needs attention.
SCHEMA_VERSION = 2

#: The row's columns, in table order (``run_id`` first: it is the upsert's conflict key).
STATUS_COLUMNS = (
    "run_id",
    "session_id",
    "header_status",
    "terminal_event",
    "header_matches_terminal",
    "resume_disposition",
    "resume_reasons",
    "unsettled_operations",
    "claim_state",
    "claim_id",
    "sealed_by",
    "high_water",
    "needs_attention",
)


def row_values(row: RunRecoveryStatus) -> tuple[Any, ...]:
    """The row as statement parameters in ``STATUS_COLUMNS`` order (reasons as compact JSON;
    both drivers bind a ``bool`` natively, SQLite as the integer 0/1)."""
    reasons = json.dumps(list(row.resume_reasons), separators=(",", ":"))
    return tuple(
        reasons if column == "resume_reasons" else getattr(row, column) for column in STATUS_COLUMNS
    )


def row_from_values(values: Sequence[Any]) -> RunRecoveryStatus:
    """Inverse of :func:`row_values` for a fetched tuple."""
    data = dict(zip(STATUS_COLUMNS, values, strict=True))
    data["resume_reasons"] = json.loads(data["resume_reasons"])
    return RunRecoveryStatus.from_json(data)


def stream_link_values(additions: Mapping[UUID, str]) -> list[tuple[str, str]]:
    """New stream→run links as ``(stream_id, run_id)`` parameters."""
    return [(str(stream_id), run_id) for stream_id, run_id in additions.items()]


def check_fetched_position(
    found: Sequence[Any] | None, position: int, expected_position: int | None
) -> None:
    """:func:`check_position` against the tracking row a commit just read (none: position 0)."""
    check_position(0 if found is None else int(found[0]), position, expected_position)
