"""The bytes of one JSONL ledger file: the torn-row read and append rules
(docs/reference/ledger.md#torn-rows).

Why a module of its own: these rules are about bytes only (what a crash in the middle of a
``write`` can leave and what a reader or appender must make of it); where the files live and
how they are opened safely is :mod:`maka_es.adapters.jsonl`.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field

from maka_es.adapters.confined_fs import read_all, write_all
from maka_es.adapters.json_prefix import JsonTextClass, classify_json_text
from maka_es.errors import InvalidRuntimeEventError, JsonlLedgerError
from maka_es.wire.base import loads_js
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = [
    "append_row",
    "classify_tail_bytes",
    "identity_mismatch",
    "scan_ledger",
    "strict_json_loads",
]

_BLANK = b" \t\r"  # JSON whitespace other than the "\n" line separator


#: Strict JSON with JavaScript number semantics; one parser for every reader of ledger bytes.
strict_json_loads = loads_js


def classify_tail_bytes(raw: bytes) -> JsonTextClass:
    """Classify the raw bytes of an unterminated last row.

    A tear can split a multi-byte UTF-8 character. The undecodable *trailing* bytes are then
    stood in for by a placeholder non-ASCII character: every non-ASCII character is valid in
    exactly the same places (inside strings), so the answer is the one the completed character
    would give. Invalid UTF-8 anywhere else is ``invalid``.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        text = decoder.decode(raw, final=False)
    except UnicodeDecodeError:
        return "invalid"
    pending, _ = decoder.getstate()
    return classify_json_text(text + "\ufffd" if pending else text)


def identity_mismatch(header: RunHeader, event: RuntimeEvent) -> str | None:
    """Why ``event`` does not belong to the run of ``header`` (None when it does)."""
    pairs = [
        ("sessionId", event.session_id, header.session_id),
        ("runId", event.run_id, header.run_id),
        ("turnId", event.turn_id, header.turn_id),
    ]
    if header.invocation_id is not None:
        pairs.append(("invocationId", event.invocation_id, header.invocation_id))
    for key, got, expected in pairs:
        if got != expected:
            return f"{key} {got!r} does not match the run header ({expected!r})"
    return None


# --- reading ---------------------------------------------------------------------------------


@dataclass
class _Scan:
    """A decoded ledger file: its committed events and where the next row must go."""

    events: list[RuntimeEvent] = field(default_factory=list)
    by_id: dict[str, tuple[int, RuntimeEvent]] = field(default_factory=dict)  # id -> (line, event)
    torn_start: int | None = None  # byte offset of a tolerated torn last row


def _line_error(run_id: str, line: int, reason: str) -> JsonlLedgerError:
    return JsonlLedgerError(
        f"Invalid RuntimeEvent JSONL line {line} for run {run_id}: {reason}",
        line=line,
        detail={"runId": run_id, "reason": reason},
    )


def scan_ledger(data: bytes, header: RunHeader) -> _Scan:
    """Apply the torn-row READ rule (docs/reference/ledger.md#torn-rows) to the bytes of one
    ledger file."""
    run_id = header.run_id
    segments = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    last_nonblank = max((i for i, s in enumerate(segments) if s.strip(_BLANK)), default=-1)
    scan = _Scan()
    offset = 0
    for index, raw in enumerate(segments):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip(_BLANK):
            continue
        line = index + 1
        try:
            value = strict_json_loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # incl. UnicodeDecodeError, JSONDecodeError
            if (
                index == last_nonblank
                and not ends_with_newline
                and classify_tail_bytes(raw) == "incomplete-prefix"
            ):
                scan.torn_start = start
                break
            raise _line_error(run_id, line, f"not strict JSON ({exc})") from None
        try:
            event = RuntimeEvent.model_validate(value)
        except InvalidRuntimeEventError as exc:
            raise _line_error(run_id, line, str(exc)) from None
        mismatch = identity_mismatch(header, event)
        if mismatch is not None:
            raise _line_error(run_id, line, mismatch)
        first = scan.by_id.get(event.id)
        if first is not None:
            raise _line_error(run_id, line, f"duplicate event id {event.id!r} (line {first[0]})")
        scan.by_id[event.id] = (line, event)
        scan.events.append(event)
    return scan


# --- appending -------------------------------------------------------------------------------


def append_row(fd: int, header: RunHeader, event: RuntimeEvent) -> bool:
    """The append rule (docs/reference/ledger.md#torn-rows) on the locked ledger file: repair the
    tail, then write."""
    row = (canonical_json(event) + "\n").encode("utf-8")
    data = read_all(fd)
    tail_start = data.rfind(b"\n") + 1
    unterminated = tail_start < len(data)
    tail_class = classify_tail_bytes(data[tail_start:]) if unterminated else None
    if tail_class == "invalid":
        raise JsonlLedgerError(
            f"run {header.run_id}: the unterminated last row is neither complete JSON "
            "nor a torn prefix; refusing to append after it",
            code="torn_tail_invalid",
            detail={"offset": tail_start},
        )
    scan = scan_ledger(data, header)
    stored = scan.by_id.get(event.id)
    if stored is not None:
        line, previous = stored
        if canonical_json(previous) != canonical_json(event):
            raise JsonlLedgerError(
                f"RuntimeEvent {event.id!r} already stored on line {line} of run "
                f"{header.run_id} with different content",
                line=line,
                code="event_id_conflict",
            )
        os.fsync(fd)
        return False
    if scan.torn_start is not None or tail_class == "incomplete-prefix":
        cut = scan.torn_start if scan.torn_start is not None else tail_start
        os.ftruncate(fd, cut)
        os.fsync(fd)
    elif tail_class == "complete":
        row = b"\n" + row
    write_all(fd, row)
    os.fsync(fd)
    return True
