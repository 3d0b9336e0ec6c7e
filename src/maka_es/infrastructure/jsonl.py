"""JSONL file ledger: the pre-SQLite ``FileRuntimeEventStore`` layout (spec §1.8).

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

Not implemented: the mutable ``runtime-partials/`` snapshots, AgentRun operational events and
message proofs. Partial events are refused instead of being written to the immutable ledger.

Concurrency: appends to one run are serialised with an exclusive ``flock`` on the ledger file
(POSIX), which also excludes other ledger instances and processes. Readers take no lock: a row
being written is indistinguishable from a torn tail and is simply not visible yet.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from maka_es.domain.codec import canonical_json, js_sort_key
from maka_es.domain.events import RuntimeEvent
from maka_es.domain.run_header import RunHeader
from maka_es.domain.wire import loads_js
from maka_es.errors import InvalidRunHeaderError, InvalidRuntimeEventError, JsonlLedgerError
from maka_es.infrastructure.json_prefix import JsonTextClass, classify_json_text

__all__ = [
    "RUNTIME_EVENTS_FILE",
    "RUN_HEADER_FILE",
    "JsonlLedger",
    "JsonTextClass",
    "classify_json_text",
    "classify_tail_bytes",
    "strict_json_loads",
    "validate_safe_id",
]

RUN_HEADER_FILE = "run.json"
RUNTIME_EVENTS_FILE = "runtime-events.jsonl"

#: Longest id accepted, in UTF-8 bytes: a path component must fit common filesystem limits.
_MAX_ID_BYTES = 255
_BLANK = b" \t\r"  # JSON whitespace other than the "\n" line separator


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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """One ``write`` in the normal case; loops only if the kernel reports a short write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _identity_mismatch(header: RunHeader, event: RuntimeEvent) -> str | None:
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


def _child_ids(directory: Path) -> list[str]:
    """Names of the sub-directories of ``directory`` that are safe ids, in JS string order."""
    try:
        entries = list(directory.iterdir())
    except FileNotFoundError:
        return []
    ids: list[str] = []
    for entry in entries:
        try:
            validate_safe_id(entry.name)
        except JsonlLedgerError:
            continue
        if entry.is_dir():
            ids.append(entry.name)
    return sorted(ids, key=js_sort_key)


# --- parsing a ledger file --------------------------------------------------------------------


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


def _scan_ledger(data: bytes, header: RunHeader) -> _Scan:
    """Apply the torn-row READ rule (spec §1.8) to the bytes of one ledger file."""
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
        mismatch = _identity_mismatch(header, event)
        if mismatch is not None:
            raise _line_error(run_id, line, mismatch)
        first = scan.by_id.get(event.id)
        if first is not None:
            raise _line_error(run_id, line, f"duplicate event id {event.id!r} (line {first[0]})")
        scan.by_id[event.id] = (line, event)
        scan.events.append(event)
    return scan


# --- the ledger -------------------------------------------------------------------------------


class JsonlLedger:
    """File-backed ledger rooted at ``root`` (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # -- paths --

    def run_dir(self, session_id: str, run_id: str) -> Path:
        """Directory of one run; both ids are checked to be safe path components."""
        validate_safe_id(session_id, "session id")
        validate_safe_id(run_id, "run id")
        return self.root / "sessions" / session_id / "runs" / run_id

    def _ensure_dir(self, path: Path) -> None:
        """Create ``path`` below the root, fsyncing each parent whose entries changed, so a
        new run directory survives a power loss together with the file written into it."""
        self.root.mkdir(parents=True, exist_ok=True)
        current = self.root
        for part in path.relative_to(self.root).parts:
            child = current / part
            try:
                child.mkdir()
            except FileExistsError:
                pass
            else:
                _fsync_dir(current)
            current = child

    def _atomic_write(self, path: Path, data: bytes) -> None:
        """Write a whole file via temp file + fsync + ``os.replace`` + directory fsync: readers
        see either the old or the new content, never a mix."""
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)

    # -- header --

    def write_header(self, header: RunHeader) -> None:
        """Create or replace ``run.json`` atomically (canonical JSON + newline)."""
        directory = self.run_dir(header.session_id, header.run_id)
        data = (canonical_json(header) + "\n").encode("utf-8")
        self._ensure_dir(directory)
        self._atomic_write(directory / RUN_HEADER_FILE, data)

    def read_header(self, session_id: str, run_id: str) -> RunHeader:
        """Decode ``run.json``; ``run_header_missing`` / ``run_header_invalid`` /
        ``run_header_mismatch`` (ids differ from the directory it was found in)."""
        path = self.run_dir(session_id, run_id) / RUN_HEADER_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise JsonlLedgerError(
                f"run header missing for run {run_id} of session {session_id}",
                code="run_header_missing",
            ) from None
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
        """The committed events of one run, in file order (torn-row READ rule, spec §1.8)."""
        header = self.read_header(session_id, run_id)
        path = self.run_dir(session_id, run_id) / RUNTIME_EVENTS_FILE
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        return _scan_ledger(data, header).events

    def append(self, event: RuntimeEvent) -> bool:
        """Durably append one event; True if appended, False for an exact retry.

        Refusals (nothing written): ``unsafe_id``, ``partial_event_refused``,
        ``run_header_missing``, ``event_identity_mismatch``, ``event_id_conflict`` (same id,
        different canonical JSON), ``torn_tail_invalid``, or a line error when the existing
        ledger is unreadable. An exact retry still fsyncs the file, so a True or False answer
        both mean "this fact is on stable storage".
        """
        if event.partial:
            raise JsonlLedgerError(
                f"partial RuntimeEvent {event.id!r} is not appended to the immutable ledger",
                code="partial_event_refused",
            )
        directory = self.run_dir(event.session_id, event.run_id)
        header = self.read_header(event.session_id, event.run_id)
        mismatch = _identity_mismatch(header, event)
        if mismatch is not None:
            raise JsonlLedgerError(
                f"RuntimeEvent {event.id!r} does not belong to run {header.run_id}: {mismatch}",
                code="event_identity_mismatch",
            )
        row = (canonical_json(event) + "\n").encode("utf-8")
        path = directory / RUNTIME_EVENTS_FILE
        created = not path.exists()
        with self._locked(path) as fd:
            data = _read_all(fd)
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
            scan = _scan_ledger(data, header)
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
            _write_all(fd, row)
            os.fsync(fd)
        if created:
            _fsync_dir(directory)
        return True

    @contextmanager
    def _locked(self, path: Path) -> Iterator[int]:
        """Open the ledger for appending and hold an exclusive ``flock`` on it."""
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # also releases the lock

    # -- enumeration, session view, export --

    def list_runs(self) -> list[tuple[str, str]]:
        """``(session_id, run_id)`` of every run with a header, in JavaScript string order.

        Directory entries that are not safe ids (or runs without ``run.json``) are not runs of
        this ledger and are skipped.
        """
        sessions = _child_ids(self.root / "sessions")
        return [(sid, run_id) for sid in sessions for run_id in self._session_runs(sid)]

    def _session_runs(self, session_id: str) -> list[str]:
        runs = self.root / "sessions" / session_id / "runs"
        return [
            run_id for run_id in _child_ids(runs) if (runs / run_id / RUN_HEADER_FILE).is_file()
        ]

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
        directory = self.run_dir(session_id, run_id)
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
            mismatch = _identity_mismatch(header, event)
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
        self._ensure_dir(directory)
        self._atomic_write(directory / RUNTIME_EVENTS_FILE, "".join(rows).encode("utf-8"))
        self._atomic_write(directory / RUN_HEADER_FILE, header_bytes)
