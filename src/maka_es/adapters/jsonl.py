"""The JSONL file ledger: the pre-SQLite ``FileRuntimeEventStore`` layout, its torn-row rules,
and the import of legacy ledgers into the event store and the export of runs back
(docs/reference/ledger.md#jsonl).

Why it exists: the Phase-0 crash contract was written against this layout, and runs exported
from the event store must be readable by (and byte-compatible with) the reference runtime.
Layout under ``root``::

    sessions/<sessionId>/runs/<runId>/run.json                AgentRun header (canonical JSON)
    sessions/<sessionId>/runs/<runId>/runtime-events.jsonl    one canonical RuntimeEvent per line

What makes it crash-safe:

* Every row is ``canonical_json(event) + "\\n"`` written with one ``write`` and made durable with
  ``fsync`` before ``append`` returns, so a crash can only leave a *prefix* of the last row.
* Reading drops such a torn last row only when it provably is one (unterminated, last non-blank
  line, and an incomplete prefix of JSON per :func:`classify_json_text`); anything else fails
  closed with the 1-based line number, because a torn row was never a committed fact and a
  corrupt row must never be guessed at.
* Appending repairs the tail first: a complete but unterminated row gets its ``\\n``, a torn row
  is truncated away (and the truncation fsynced), an impossible tail refuses the append.
  (These byte rules are the *rows* section below: they are about bytes only, what a crash in
  the middle of a ``write`` can leave and what a reader or appender must make of it.)

Why a hand-written tokenizer (:func:`classify_json_text`) instead of ``json.loads``: a crash
can leave the last row cut at any byte. The store must tell a *torn* row (a prefix of a valid
row: appending bytes could complete it, so it was never committed and is safely dropped) from a
*corrupt* one (no suffix can ever make it valid: something other than a torn append wrote it,
so reading must fail closed). ``json.loads`` only says "not valid"; it cannot say "valid so
far". The scanner walks the text once and reports where it stopped:

* ``"complete"`` - exactly one JSON value, optionally surrounded by JSON whitespace;
* ``"incomplete-prefix"`` - the input ran out while the text was still a prefix of some valid
  value (inside a string, escape, ``\\u`` escape, literal or number, after ``{``, ``[``, ``,`` or
  ``:``, or before any value at all - the empty text is a prefix of every value);
* ``"invalid"`` - no continuation can make it valid (impossible character, trailing comma,
  raw control character in a string, bad escape, leading zero, nesting deeper than
  :data:`MAX_DEPTH`, anything after a complete top-level value).

A number at the very end of the text counts as ``"complete"`` at top level (``12`` is a whole
document) even though more digits could follow; inside a container the container is still
open, so the text is an incomplete prefix.

Not implemented: the mutable ``runtime-partials/`` snapshots, AgentRun operational events and
message proofs. Partial events are refused instead of being written to the immutable ledger.

Confinement: every path below ``root`` is walked without following symlinks (see
``confined_fs``); a symlink in the layout (``sessions``, a session or run directory, ``runs``,
``run.json``, ``runtime-events.jsonl``, a temp file) is refused with ``ledger_symlink_refused``
by writers *and* readers, and an entry of the wrong kind (a FIFO for ``run.json``) with
``ledger_path_invalid``. Listing refuses too instead of skipping such an entry, so an import
fails closed before anything is imported. The root itself may be a symlink (the host's choice).
An append writes into the existing ``runtime-events.jsonl``, so a ledger file with another hard
link (whose other name may be outside the root) is refused with ``ledger_path_invalid`` before a
byte is written; ``run.json`` and an export replace their files (a new inode renamed over the
name), which leaves any other name of the old file unchanged.

Concurrency: appends to one run are serialised with an exclusive ``flock`` on the ledger file
(POSIX), which also excludes other ledger instances and processes. Readers take no lock: a row
being written is indistinguishable from a torn tail and is simply not visible yet.

Import and export go both ways: hosts migrating from the reference runtime's file store keep
their history (:func:`import_jsonl_ledgers` is idempotent, so it can run at every start), and
any run in the store can be handed back to tools that read the reference layout,
byte-compatibly (:func:`export_jsonl_run`, canonical JSON rows). Neither direction goes through
a symlink below the ledger root (``ledger_symlink_refused``). On import such a link is refused,
not read through and not skipped: the listing sees it before the first run is imported, so a
refused import leaves the store as it was, and a run that is only a link away is never
reported as imported or silently left out.
"""

from __future__ import annotations

import codecs
import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from maka_es.adapters.confined_fs import (
    Violation,
    child_directories,
    ensure_replaceable,
    entry_kind,
    fsync_directory,
    open_directory,
    open_file,
    open_subdirectory,
    read_all,
    read_file,
    replace_file,
    write_all,
)
from maka_es.errors import InvalidRunHeaderError, InvalidRuntimeEventError, JsonlLedgerError
from maka_es.ledger.service import AppendResult
from maka_es.wire.base import loads_js
from maka_es.wire.codec import canonical_json, js_sort_key
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = [
    "JsonTextClass",
    "MAX_DEPTH",
    "classify_json_text",
    "append_row",
    "classify_tail_bytes",
    "identity_mismatch",
    "scan_ledger",
    "strict_json_loads",
    "RUNTIME_EVENTS_FILE",
    "RUN_HEADER_FILE",
    "JsonlLedger",
    "validate_safe_id",
    "LedgerIo",
    "ImportOutcome",
    "import_jsonl_ledgers",
    "export_jsonl_run",
]


# === the torn-row classifier: complete, incomplete prefix or invalid JSON text ====================

JsonTextClass = Literal["complete", "incomplete-prefix", "invalid"]

#: Deepest container nesting accepted (matches the reference classifier).
MAX_DEPTH: Final = 512

_WHITESPACE: Final = frozenset(" \t\n\r")
_DIGITS: Final = frozenset("0123456789")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES: Final = frozenset('"\\/bfnrt')
_LITERALS: Final = {"t": "true", "f": "false", "n": "null"}

# Scanner outcomes for one scalar: a new position, or "ran out" / "impossible".
_EOF: Final = -1
_BAD: Final = -2


def _scan_string(text: str, pos: int) -> int:
    """Scan a string whose opening quote is at ``pos``; return the index after the closing
    quote, or ``_EOF`` / ``_BAD``."""
    end = len(text)
    i = pos + 1
    while i < end:
        char = text[i]
        if char == '"':
            return i + 1
        if char < " ":
            return _BAD  # raw control characters must be escaped
        if char == "\\":
            i += 1
            if i == end:
                return _EOF
            escape = text[i]
            if escape == "u":
                for _ in range(4):
                    i += 1
                    if i == end:
                        return _EOF
                    if text[i] not in _HEX:
                        return _BAD
            elif escape not in _SIMPLE_ESCAPES:
                return _BAD
        i += 1
    return _EOF


def _scan_digits(text: str, i: int) -> int:
    while i < len(text) and text[i] in _DIGITS:
        i += 1
    return i


def _scan_number(text: str, pos: int) -> tuple[int, bool]:
    """Scan a number starting at ``pos`` (a ``-`` or a digit).

    Returns ``(next_index, finished)``: ``finished`` is False when the text ends where more
    characters are *required* (``-``, ``1.``, ``1e``, ``1e+``); ``next_index`` is ``_BAD``
    when a required digit is replaced by something else. A number that ends at the end of the
    text but could be extended (``12``) is finished: whoever called decides what EOF means.
    """
    end = len(text)
    i = pos
    if text[i] == "-":
        i += 1
        if i == end:
            return i, False
    if text[i] == "0":
        i += 1
        if i < end and text[i] in _DIGITS:
            return _BAD, False  # leading zero
    elif text[i] in _DIGITS:
        i = _scan_digits(text, i)
    else:
        return _BAD, False
    if i < end and text[i] == ".":
        i += 1
        if i == end:
            return i, False
        if text[i] not in _DIGITS:
            return _BAD, False
        i = _scan_digits(text, i)
    if i < end and text[i] in "eE":
        i += 1
        if i < end and text[i] in "+-":
            i += 1
        if i == end:
            return i, False
        if text[i] not in _DIGITS:
            return _BAD, False
        i = _scan_digits(text, i)
    return i, True


def _scan_literal(text: str, pos: int) -> int:
    """Scan ``true`` / ``false`` / ``null`` starting at ``pos``."""
    word = _LITERALS[text[pos]]
    available = text[pos : pos + len(word)]
    if not word.startswith(available):
        return _BAD
    if len(available) < len(word):
        return _EOF
    return pos + len(word)


def classify_json_text(text: str) -> JsonTextClass:
    """Classify ``text`` as one complete JSON value, an incomplete prefix of one, or invalid.

    See the module docstring for the exact contract. The scan is iterative (an explicit stack
    of open containers), so deep nesting cannot exhaust the Python stack.
    """
    return _Scanner(text).run()


class _Scanner:
    """One pass over ``text``: the position, the open containers and what may come next.

    ``expect`` is what the grammar allows at the next non-whitespace character:

    * ``"value"``      a value (start of text, after ``:`` or after ``,`` in an array)
    * ``"value_or_]"`` a value or ``]`` (right after ``[``)
    * ``"key_or_}"``   a key string or ``}`` (right after ``{``)
    * ``"key"``        a key string (after ``,`` in an object: ``}`` here is a trailing comma)
    * ``"colon"``      ``:`` after a key
    * ``"after"``      ``,`` or the closer of the innermost container, or only whitespace at top

    Each step consumes one token and returns ``None`` to go on, or the final verdict.
    """

    __slots__ = ("end", "expect", "i", "stack", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.stack: list[str] = []  # open containers: "{" or "["
        self.expect = "value"
        self.i = 0

    def run(self) -> JsonTextClass:
        text, end = self.text, self.end
        while True:
            i = self.i
            while i < end and text[i] in _WHITESPACE:
                i += 1
            self.i = i
            if i == end:
                if self.expect == "after" and not self.stack:
                    return "complete"
                return "incomplete-prefix"
            char = text[i]
            if self.expect == "after":
                verdict = self._after_value(char)
            elif self.expect == "colon":
                verdict = self._colon(char)
            elif self.expect in ("key", "key_or_}"):
                verdict = self._key(char)
            else:
                verdict = self._value(char)
            if verdict is not None:
                return verdict

    def _after_value(self, char: str) -> JsonTextClass | None:
        stack = self.stack
        if not stack:
            return "invalid"  # trailing garbage after a complete value
        closer = "}" if stack[-1] == "{" else "]"
        if char == closer:
            stack.pop()
        elif char == ",":
            self.expect = "key" if stack[-1] == "{" else "value"
        else:
            return "invalid"
        self.i += 1
        return None

    def _colon(self, char: str) -> JsonTextClass | None:
        if char != ":":
            return "invalid"
        self.expect = "value"
        self.i += 1
        return None

    def _key(self, char: str) -> JsonTextClass | None:
        if char == "}" and self.expect == "key_or_}":
            self.stack.pop()
            self.expect = "after"
            self.i += 1
            return None
        if char != '"':
            return "invalid"  # includes "}" after "," (trailing comma)
        return self._scalar_end(_scan_string(self.text, self.i), then="colon")

    def _value(self, char: str) -> JsonTextClass | None:
        if char == "]" and self.expect == "value_or_]":
            self.stack.pop()
            self.expect = "after"
            self.i += 1
            return None
        if char in "{[":
            if len(self.stack) >= MAX_DEPTH:
                return "invalid"
            self.stack.append(char)
            self.expect = "key_or_}" if char == "{" else "value_or_]"
            self.i += 1
            return None
        if char == '"':
            nxt = _scan_string(self.text, self.i)
        elif char in _LITERALS:
            nxt = _scan_literal(self.text, self.i)
        elif char == "-" or char in _DIGITS:
            nxt, finished = _scan_number(self.text, self.i)
            if nxt != _BAD and not finished:
                return "incomplete-prefix"
        else:
            return "invalid"  # includes "]" / "}" / "," where a value is required
        return self._scalar_end(nxt, then="after")

    def _scalar_end(self, nxt: int, *, then: str) -> JsonTextClass | None:
        """Move past a scanned string, literal or number, or report why the scan stopped."""
        if nxt == _BAD:
            return "invalid"
        if nxt == _EOF:
            return "incomplete-prefix"
        self.expect = then
        self.i = nxt
        return None


# === rows: the torn-row read and append rules of one ledger file ==================================

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


# === the ledger layout under a root ===============================================================

RUN_HEADER_FILE = "run.json"
RUNTIME_EVENTS_FILE = "runtime-events.jsonl"
_RUN_FILES = (RUN_HEADER_FILE, RUNTIME_EVENTS_FILE)

#: Longest id accepted, in UTF-8 bytes: a path component must fit common filesystem limits.
_MAX_ID_BYTES = 255


# --- ids and small helpers --------------------------------------------------------------------


def validate_safe_id(value: object, what: str = "id") -> str:
    """Return ``value`` if it is safe as one path component, else raise ``unsafe_id``.

    Safe: a non-empty ``str`` of at most 255 UTF-8 bytes, not ``.`` or ``..``, without ``/``,
    ``\\``, NUL or any other control character, and without lone surrogates (which cannot be
    encoded as a file name portably). A leading dot is allowed: such ids are unusual but cannot
    escape the run directory, and the reference accepts them.
    """
    if not isinstance(value, str) or not value or value in (".", ".."):
        raise JsonlLedgerError(f"unsafe {what}: {value!r}", code="unsafe_id")
    if any(ch in "/\\" or ch < " " or ch == "\x7f" for ch in value):
        raise JsonlLedgerError(f"unsafe {what}: {value!r}", code="unsafe_id")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonlLedgerError(f"unsafe {what}: {value!r}", code="unsafe_id") from None
    if len(encoded) > _MAX_ID_BYTES:
        raise JsonlLedgerError(
            f"unsafe {what}: longer than {_MAX_ID_BYTES} bytes", code="unsafe_id"
        )
    return value


def _is_safe_id(name: str) -> bool:
    try:
        validate_safe_id(name)
    except JsonlLedgerError:
        return False
    return True


def _refuse(violation: Violation) -> JsonlLedgerError:
    """The typed refusal for a path below the ledger root that is not what the layout says."""
    message, detail = (
        f"{violation.path} below the ledger root {violation.problem}",
        {"path": violation.path},
    )
    if violation.kind == "symlink":
        return JsonlLedgerError(message, code="ledger_symlink_refused", detail=detail)
    return JsonlLedgerError(message, code="ledger_path_invalid", detail=detail)


# --- the ledger files -------------------------------------------------------------------------


def _rel(parts: tuple[str, ...], name: str) -> str:
    return "/".join((*parts, name))


def _is_run(runs: int, run_id: str, rel: str) -> bool:
    """Whether ``runs/<run_id>`` is a run (has a regular ``run.json``). A symlinked ledger file
    there is refused, never followed or skipped."""
    try:
        directory = open_subdirectory(runs, run_id, rel, _refuse)
    except FileNotFoundError:
        return False  # removed since it was listed
    try:
        kinds = {name: entry_kind(directory, name) for name in _RUN_FILES}
    finally:
        os.close(directory)
    for name, kind in kinds.items():
        if kind == "symlink":
            raise _refuse(Violation("symlink", f"{rel}/{name}"))
    return kinds[RUN_HEADER_FILE] == "regular"


@contextmanager
def _locked(directory: int, rel: str) -> Iterator[int]:
    """Open (or create) the ledger file in ``directory`` without following a symlink, and hold
    an exclusive ``flock`` on it."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
    fd = open_file(directory, RUNTIME_EVENTS_FILE, flags, rel, _refuse)
    assert fd is not None  # O_CREAT: never absent
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # also releases the lock


# --- the ledger -------------------------------------------------------------------------------


class JsonlLedger:
    """File-backed ledger rooted at ``root`` (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # -- paths --

    def run_dir(self, session_id: str, run_id: str) -> Path:
        """Directory of one run; both ids are checked to be safe path components."""
        return self.root.joinpath(*self._run_parts(session_id, run_id))

    def _run_parts(self, session_id: str, run_id: str) -> tuple[str, ...]:
        validate_safe_id(session_id, "session id")
        validate_safe_id(run_id, "run id")
        return ("sessions", session_id, "runs", run_id)

    @contextmanager
    def _run_directory(self, session_id: str, run_id: str, *, create: bool) -> Iterator[int | None]:
        """Descriptor of the run directory, walked from the root without following symlinks.

        With ``create`` missing directories are made and each parent whose entries changed is
        fsynced, so a new run directory survives a power loss together with its files.
        """
        parts = self._run_parts(session_id, run_id)
        with open_directory(self.root, parts, _refuse, create=create) as directory:
            yield directory

    # -- header --

    def write_header(self, header: RunHeader) -> None:
        """Create or replace ``run.json`` atomically (canonical JSON + newline)."""
        data = (canonical_json(header) + "\n").encode("utf-8")
        parts = self._run_parts(header.session_id, header.run_id)
        with self._run_directory(header.session_id, header.run_id, create=True) as directory:
            assert directory is not None
            replace_file(directory, RUN_HEADER_FILE, data, _rel(parts, RUN_HEADER_FILE), _refuse)

    def read_header(self, session_id: str, run_id: str) -> RunHeader:
        """Decode ``run.json``; ``run_header_missing`` / ``run_header_invalid`` /
        ``run_header_mismatch`` (ids differ from the directory it was found in)."""
        with self._run_directory(session_id, run_id, create=False) as directory:
            return self._read_header_at(directory, session_id, run_id)

    def _read_header_at(self, directory: int | None, session_id: str, run_id: str) -> RunHeader:
        rel = _rel(self._run_parts(session_id, run_id), RUN_HEADER_FILE)
        raw = None if directory is None else read_file(directory, RUN_HEADER_FILE, rel, _refuse)
        if raw is None:
            raise JsonlLedgerError(
                f"run header missing for run {run_id} of session {session_id}",
                code="run_header_missing",
            )
        try:
            header = RunHeader.model_validate(strict_json_loads(raw.decode("utf-8")))
        except (ValueError, InvalidRunHeaderError) as exc:
            raise JsonlLedgerError(
                f"invalid run header for run {run_id}: {exc}", code="run_header_invalid"
            ) from None
        if (header.session_id, header.run_id) != (session_id, run_id):
            raise JsonlLedgerError(
                f"run header at {session_id}/{run_id} names session {header.session_id!r}, "
                f"run {header.run_id!r}",
                code="run_header_mismatch",
            )
        return header

    # -- events --

    def read_events(self, session_id: str, run_id: str) -> list[RuntimeEvent]:
        """The committed events of one run, in file order (torn-row READ rule,
        docs/reference/ledger.md#torn-rows)."""
        rel = _rel(self._run_parts(session_id, run_id), RUNTIME_EVENTS_FILE)
        with self._run_directory(session_id, run_id, create=False) as directory:
            header = self._read_header_at(directory, session_id, run_id)
            assert directory is not None  # the header was read from it
            data = read_file(directory, RUNTIME_EVENTS_FILE, rel, _refuse)
        return [] if data is None else scan_ledger(data, header).events

    def append(self, event: RuntimeEvent) -> bool:
        """Durably append one event; True if appended, False for an exact retry.

        Refusals (nothing written): ``unsafe_id``, ``partial_event_refused``,
        ``run_header_missing``, ``event_identity_mismatch``, ``event_id_conflict`` (same id,
        different canonical JSON), ``torn_tail_invalid``, ``ledger_symlink_refused``,
        ``ledger_path_invalid``, or a line error when the existing ledger is unreadable. An
        exact retry still fsyncs the file, so a True or False answer both mean "this fact is
        on stable storage".
        """
        if event.partial:
            raise JsonlLedgerError(
                f"partial RuntimeEvent {event.id!r} is not appended to the immutable ledger",
                code="partial_event_refused",
            )
        rel = _rel(self._run_parts(event.session_id, event.run_id), RUNTIME_EVENTS_FILE)
        with self._run_directory(event.session_id, event.run_id, create=False) as directory:
            header = self._read_header_at(directory, event.session_id, event.run_id)
            assert directory is not None  # the header was read from it
            mismatch = identity_mismatch(header, event)
            if mismatch is not None:
                raise JsonlLedgerError(
                    f"RuntimeEvent {event.id!r} does not belong to run {header.run_id}: {mismatch}",
                    code="event_identity_mismatch",
                )
            created = entry_kind(directory, RUNTIME_EVENTS_FILE) == "absent"
            with _locked(directory, rel) as fd:
                appended = append_row(fd, header, event)
            if created:
                fsync_directory(directory)
        return appended

    # -- enumeration, session view, export --

    def list_runs(self) -> list[tuple[str, str]]:
        """``(session_id, run_id)`` of every run with a header, in JavaScript string order.

        Directory entries that are not safe ids (or runs without ``run.json``) are not runs of
        this ledger and are skipped. A symlink where a session, run or ledger file would be is
        refused (``ledger_symlink_refused``), so an import sees it before importing anything.
        """
        with open_directory(self.root, ("sessions",), _refuse, create=False) as sessions:
            if sessions is None:
                return []
            ids = child_directories(sessions, "sessions", _refuse, _is_safe_id)
        ordered = sorted(ids, key=js_sort_key)
        return [(sid, run_id) for sid in ordered for run_id in self._session_runs(sid)]

    def _session_runs(self, session_id: str) -> list[str]:
        parts = ("sessions", session_id, "runs")
        with open_directory(self.root, parts, _refuse, create=False) as runs:
            if runs is None:
                return []
            rel = "/".join(parts)
            candidates = child_directories(runs, rel, _refuse, _is_safe_id)
            listed = [rid for rid in candidates if _is_run(runs, rid, f"{rel}/{rid}")]
        return sorted(listed, key=js_sort_key)

    def read_session_events(self, session_id: str) -> list[RuntimeEvent]:
        """All committed events of a session's runs, ordered by ``(ts, runId, index, id)``.

        Strings compare in JavaScript default order (UTF-16 code units). One unreadable run
        makes the whole read fail: a session view with a silently missing run would lie.
        """
        validate_safe_id(session_id, "session id")
        keyed: list[tuple[float, bytes, int, bytes, RuntimeEvent]] = []
        for run_id in self._session_runs(session_id):
            for index, event in enumerate(self.read_events(session_id, run_id)):
                keyed.append((event.ts, js_sort_key(run_id), index, js_sort_key(event.id), event))
        keyed.sort(key=lambda item: item[:4])
        return [item[4] for item in keyed]

    def export_run(
        self, session_id: str, run_id: str, header: RunHeader, events: Iterable[RuntimeEvent]
    ) -> None:
        """Write a run from scratch (header + whole ledger), replacing what was there.

        Everything is validated before the first byte is written. The ledger is replaced
        atomically first and the header second, so a crash in between leaves either no run
        (``list_runs`` requires ``run.json``) or the previous header over the new ledger of the
        same run. Not meant to race :meth:`append` on the same run.
        """
        parts = self._run_parts(session_id, run_id)  # unsafe ids are refused first
        if (header.session_id, header.run_id) != (session_id, run_id):
            raise JsonlLedgerError(
                f"header names session {header.session_id!r}, run {header.run_id!r}, "
                f"not {session_id!r}/{run_id!r}",
                code="run_header_mismatch",
            )
        rows: list[str] = []
        seen: set[str] = set()
        for event in events:
            if event.partial:
                raise JsonlLedgerError(
                    f"partial RuntimeEvent {event.id!r} cannot be exported",
                    code="partial_event_refused",
                )
            mismatch = identity_mismatch(header, event)
            if mismatch is not None:
                raise JsonlLedgerError(
                    f"RuntimeEvent {event.id!r}: {mismatch}", code="event_identity_mismatch"
                )
            if event.id in seen:
                raise JsonlLedgerError(
                    f"RuntimeEvent id {event.id!r} appears twice", code="event_id_conflict"
                )
            seen.add(event.id)
            rows.append(canonical_json(event) + "\n")
        header_bytes = (canonical_json(header) + "\n").encode("utf-8")
        with self._run_directory(session_id, run_id, create=True) as directory:
            assert directory is not None
            for name in (RUNTIME_EVENTS_FILE, RUN_HEADER_FILE):  # both, before the first byte
                ensure_replaceable(directory, name, _rel(parts, name), _refuse)
            ledger = "".join(rows).encode("utf-8")
            replace_file(
                directory, RUNTIME_EVENTS_FILE, ledger, _rel(parts, RUNTIME_EVENTS_FILE), _refuse
            )
            replace_file(
                directory, RUN_HEADER_FILE, header_bytes, _rel(parts, RUN_HEADER_FILE), _refuse
            )


# === import into the event store, export back =====================================================


class LedgerIo(Protocol):
    """The ledger commands and reads import and export use (``RuntimeApplication`` has them)."""

    def import_run(
        self,
        header: RunHeader | Mapping[str, Any],
        events: Sequence[RuntimeEvent | Mapping[str, Any]],
    ) -> AppendResult: ...

    def get_run_header(self, run_id: str) -> RunHeader: ...

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]: ...


@dataclass(frozen=True)
class ImportOutcome:
    runs: int
    appended: int
    retried: int


def import_jsonl_ledgers(app: LedgerIo, ledger: JsonlLedger) -> ImportOutcome:
    """Import every run found under the ledger root (sorted order). Each run is one save; a run
    that fails its gates raises and the runs after it are not imported. A symlink in the layout
    is refused while listing, before any run is imported."""
    runs = appended = retried = 0
    for session_id, run_id in ledger.list_runs():
        header = ledger.read_header(session_id, run_id)
        events = ledger.read_events(session_id, run_id)
        result = app.import_run(header, events)
        runs += 1
        appended += result.appended
        retried += result.retried
    return ImportOutcome(runs, appended, retried)


def export_jsonl_run(app: LedgerIo, ledger: JsonlLedger, run_id: str) -> None:
    """Write one run's header and committed ledger in the reference JSONL layout."""
    header = app.get_run_header(run_id)
    ledger.export_run(header.session_id, run_id, header, app.read_run_events(run_id))
