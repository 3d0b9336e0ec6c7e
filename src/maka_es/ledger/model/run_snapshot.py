"""A Run's folded state as a versioned snapshot: a small body naming a chain of segments, each
the change since the one before, and the Run restored from them (ADR 0032, ADR 0044).

Why: reopening a run folded every committed fact, so the first command after a restart cost
time proportional to the whole history (about 0.1 ms per event). A snapshot keeps what the fold
computed (header, owner, seal, attestations, the terminal event, the ordered event ids, the
journal fold and the resolver's compact scan state) at the fact version it covers; a load
restores it and folds only the facts after that version. The events themselves are not in the
snapshot: a restored Run reads them from the ledger on first use (``Run.attach_history``).

Why segments (ADR 0044): a body holding the whole state was rebuilt and rewritten inside a
command every 1,000 facts (about 21 MB, 1.5 s at 100k events). A segment holds only what
changed since the previous one: the new event ids and their CRC-32 index, the new spines and
issues, the scan's operations and the journal's operations that changed (a later row of the
same key replaces the earlier one in place, so the order stays the fold's), and the bundle
events of changed operations with recovery facts. So a write costs the change, never the run.
Each segment is three parts named by their sha256 (``summary``: values, ids, index; ``operations``;
``journal``); the body is the values and the list of segment digests.

Why never trusted over the ledger: this module only writes and reads the body and its parts.
The adapter (:mod:`maka_es.adapters.run_snapshots`) stores them with their digests and the
digest of the stored fact the body covers, and uses them only when the format is
:data:`SNAPSHOT_FORMAT`, every byte matches its digest, the segments join up and the ledger
still holds that fact; anything else is a full replay. Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from maka_es.ledger.model.ownership import RunOwner
from maka_es.ledger.model.run import EventReader, HistoryReader, Run
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.operation import (
    RestoredJournal,
    dump_journal,
    dump_journal_segment,
    journal_indexes,
    journal_written,
)
from maka_es.tooljournal.model.resolver import ResolverState
from maka_es.tooljournal.model.scanner import (
    EventRef,
    ScannedOperation,
    SnapshotIds,
    forget_event,
    id_index,
    merge_id_indexes,
)
from maka_es.tooljournal.model.segments import dump_scan_segment, mark_written, restore_scan
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = [
    "KINDS",
    "SNAPSHOT_EVERY",
    "OnePart",
    "SNAPSHOT_FORMAT",
    "PartReader",
    "RunSnapshot",
    "SnapshotLog",
    "dump_run",
    "release_events",
    "restore_run",
]

#: The body's format; a snapshot of any other format is ignored (a full replay writes anew).
#: 3: a chain of segments (ADR 0044); 2 was one body with the whole state (ADR 0032).
SNAPSHOT_FORMAT = 3

#: A load that leaves more than this many facts folded since the last snapshot writes one.
SNAPSHOT_EVERY = 1000

#: The parts of one segment, in the order the body names their digests.
KINDS = ("summary", "operations", "journal")

#: Reads the parts of one kind by their sha256, in order (the adapter verifies them, and
#: recomputes one that is missing or changed from the ledger).
PartReader = Callable[[str, Sequence[str]], Sequence[bytes]]

#: Reads one part of a kind by its sha256 as stored (``None``: missing or changed).
OnePart = Callable[[str, str], bytes | None]

_ATTESTATION_FIELDS = (
    "operation_id",
    "applied",
    "result",
    "actor",
    "note",
    "attested_at",
    "response_event_id",
)


@dataclass(frozen=True, slots=True)
class SnapshotLog:
    """What the last snapshot stored of one in-memory Run (kept on its scan state): the
    segments' digests (``[summary, operations, journal]`` each) and the events they cover. The
    next snapshot of that Run appends one segment for the change since."""

    version: int
    high_water: int
    segments: tuple[tuple[str, str, str], ...]


@dataclass(slots=True)
class RunSnapshot:
    """A snapshot to store: the body, the parts it adds (by sha256) and every part it names.
    :meth:`stored` tells the Run once the store committed it."""

    run: Run
    body: bytes
    parts: dict[str, bytes]
    log: SnapshotLog
    names: list[str] = field(default_factory=list)
    #: The operations the snapshot wrote (set by :meth:`stored`), whose refs may hold events.
    changed: Sequence[ScannedOperation] = ()

    def parts_of(self, kind: str) -> bytes:
        """The newest segment's part of ``kind`` (one of :data:`KINDS`)."""
        return self.parts[self.log.segments[-1][KINDS.index(kind)]]

    def stored(self) -> None:
        """The store committed the snapshot: the Run's next one appends to it."""
        resolver = self.run.resolver
        touched = resolver.touched
        self.changed = resolver._operations if touched is None else list(touched.values())
        mark_written(resolver)
        if self.run._journal_pending is None:
            journal_written(self.run._journal)
        self.run.resolver.snapshot_log = self.log


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _ids_between(run: Run, low: int, high: int) -> list[str]:
    older, held = run._snapshot_ids, len(run._snapshot_ids)
    front = list(older[low:high]) if low < held else []
    tail = run._events[max(low - held, 0) : high - held]
    return [*front, *(event.id for event in tail)]


def _journal_segment(run: Run, log: SnapshotLog | None) -> dict[str, Any]:
    if log is None:
        journal = run._journal_fold()
        segment = dump_journal(journal)
        journal_written(journal)  # track the change from here (a failed write: all again)
        return segment
    if run._journal_pending is not None:  # never read since the restore: nothing changed
        return {"operations": [], "calls": [], "metadata": []}
    return dump_journal_segment(run._journal)


def dump_run(run: Run, *, full: bool = False) -> RunSnapshot:
    """The snapshot of ``run`` at ``run.version``: the chain of its last stored snapshot plus
    one segment of the change since (``full``, or no earlier snapshot of this Run: one
    segment of everything). Nothing of the Run changes until :meth:`RunSnapshot.stored`."""
    log: SnapshotLog | None = run.resolver.snapshot_log
    if full or log is None or log.high_water > run.high_water or log.version > run.version:
        log = None
    low = 0 if log is None else log.high_water
    ids = _ids_between(run, low, run.high_water)
    scan, operations = dump_scan_segment(run.resolver, full=log is None)
    journal_values = _journal_segment(run, log)
    summary_values = {"from": low, "to": run.high_water, **scan, **journal_indexes(journal_values)}
    summary = "\n".join((_json(summary_values), _json(ids), id_index(ids))).encode()
    journal = _json(journal_values).encode()
    texts = (summary, operations.encode(), journal)
    digests = (_digest(summary), _digest(texts[1]), _digest(journal))
    chain = (*(() if log is None else log.segments), digests)
    terminal = run.terminal_event
    values = {
        "format": SNAPSHOT_FORMAT,
        "stream": str(run.id),
        "version": run.version,
        "header": run.header.to_wire(),
        "owner": None if run.owner is None else run.owner.to_json(),
        "sealedBy": run.sealed_by,
        "attestations": [
            [getattr(a, name) for name in _ATTESTATION_FIELDS] for a in run.attestations
        ],
        "terminal": None if terminal is None else canonical_json(terminal),
        "count": run.resolver._count,
        "protocol": run.resolver._protocol,
        "highWater": run.high_water,
    }
    body = "\n".join((_json(values), _json(chain))).encode()
    new_log = SnapshotLog(run.version, run.high_water, chain)
    names = [digest for segment in chain for digest in segment]
    return RunSnapshot(run, body, dict(zip(digests, texts, strict=True)), new_log, names)


def restore_run(data: bytes, stream_id: UUID, parts: PartReader, one: OnePart | None = None) -> Run:
    """The Run the body's UTF-8 ``data`` describes (its events left in the ledger until used;
    its summaries read through ``parts`` now, its operations and journal when looked up: one
    segment's part through ``one``, all of them through ``parts``). Without ``one``, a single
    part is read through ``parts`` (for a reader that never recomputes one, as in tests).

    Raises ``ValueError``/``KeyError``/``TypeError``/``LookupError`` on a body or part that
    does not fit; the adapter then falls back to a full replay."""
    values_line, chain_line = data.split(b"\n")
    body = json.loads(values_line)
    if body["format"] != SNAPSHOT_FORMAT or body["stream"] != str(stream_id):
        raise ValueError("not a snapshot of this run in the current format")
    chain = [tuple(segment) for segment in json.loads(chain_line)]
    summaries = [_summary(text) for text in parts("summary", [segment[0] for segment in chain])]
    _check_joined(summaries, body["highWater"])
    run = Run(
        stream_id,
        RunHeader.model_validate(body["header"]),
        body["version"],
        RunOwner.from_json(body["owner"]),
    )
    ids = SnapshotIds(
        [ids for _, ids, _ in summaries],
        body["highWater"],
        [values["from"] for values, _, _ in summaries],
    )
    run._snapshot_ids = ids
    run._sealed_by = body["sealedBy"]
    for row in body["attestations"]:
        attestation = OperatorAttestation(**dict(zip(_ATTESTATION_FIELDS, row, strict=True)))
        run._attestations[attestation.operation_id] = attestation
    terminal = body["terminal"]
    run._terminal = None if terminal is None else RuntimeEvent.model_validate_json(terminal)
    single = one or (lambda kind, digest: parts(kind, [digest])[0])
    journals = [segment[2] for segment in chain]
    run._journal_pending = lambda: (
        RestoredJournal(
            [values for values, _, _ in summaries],
            lambda: parts("journal", journals),
            lambda at: single("journal", journals[at]),
        ).journal
    )
    operations = [segment[1] for segment in chain]
    run._resolver = restore_scan(
        ResolverState,
        body,
        [values for values, _, _ in summaries],
        (lambda: parts("operations", operations), lambda at: single("operations", operations[at])),
        ids,
        merge_id_indexes(index for _, _, index in summaries),
    )
    run._resolver.event_at = lambda position: run._committed(position)[0]
    run._resolver.snapshot_log = SnapshotLog(body["version"], body["highWater"], tuple(chain))
    return run


def _summary(text: bytes) -> tuple[dict[str, Any], bytes, bytes]:
    values, ids, index = text.split(b"\n")
    return json.loads(values), ids, index


def _check_joined(summaries: Sequence[tuple[dict[str, Any], bytes, bytes]], count: int) -> None:
    """Each segment starts where the one before ended, the first at 0, the last at ``count``."""
    at = 0
    for values, _, _ in summaries:
        if values["from"] != at:
            raise ValueError("the snapshot's segments do not join up")
        at = values["to"]
    if at != count:
        raise ValueError("the snapshot's segments do not reach its events")


class _HeldIds(Sequence[str]):
    """The ids of a Run's events that are in the ledger only: the older ones (maybe still
    unparsed, :class:`SnapshotIds`) and those released since."""

    __slots__ = ("_newer", "_older")

    def __init__(self, older: Sequence[str], newer: list[str]) -> None:
        self._older, self._newer = older, newer

    def __len__(self) -> int:
        return len(self._older) + len(self._newer)

    def __getitem__(self, index: Any) -> Any:
        held = len(self._older)
        if isinstance(index, int) and index >= 0:
            return self._older[index] if index < held else self._newer[index - held]
        return [*self._older, *self._newer][index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list | tuple | Sequence):
            return [*self._older, *self._newer] == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def release_events(snapshot: RunSnapshot, history: HistoryReader, one: EventReader) -> None:
    """After its snapshot is stored, the Run keeps only the ids of the events it covers, as
    a Run restored from it does (ADR 0044): they are read back from the ledger (all, or one)
    and checked against those ids when a command needs them. Why: a long live run held every
    event, and the cyclic GC's full collections over them stalled a warm step for ~1 s at
    100k events. The refs of the operations it wrote stop holding their events (O(change))."""
    run = snapshot.run
    held = len(run._events)
    if not held:
        return
    newer = [event.id for event in run._events]
    older = run._snapshot_ids
    run._snapshot_ids = _HeldIds(older, newer) if older else newer
    del run._events[:], run._payloads[:]
    for operation in snapshot.changed:
        for ref in _refs(operation):
            forget_event(ref)
    run.attach_history(history, one)


def _refs(operation: ScannedOperation) -> list[EventRef]:
    single = (operation.call_event, operation.dispatch_event, operation.response_event)
    return [
        *(ref for ref in single if ref is not None),
        *operation.reconcile_events,
        *operation.decision_events,
    ]
