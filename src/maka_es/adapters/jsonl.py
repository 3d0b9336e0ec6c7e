"""JSONL file ledger: the pre-SQLite ``FileRuntimeEventStore`` layout
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
  (These byte rules live in :mod:`maka_es.adapters.jsonl_rows`.)

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
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from maka_es.adapters.confined_fs import (
    Violation,
    child_directories,
    ensure_replaceable,
    entry_kind,
    fsync_directory,
    open_directory,
    open_file,
    open_subdirectory,
    read_file,
    replace_file,
)
from maka_es.adapters.json_prefix import JsonTextClass, classify_json_text
from maka_es.adapters.jsonl_rows import (
    append_row,
    classify_tail_bytes,
    identity_mismatch,
    scan_ledger,
    strict_json_loads,
)
from maka_es.errors import InvalidRunHeaderError, JsonlLedgerError
from maka_es.wire.codec import canonical_json, js_sort_key
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

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
