"""A Run's folded state as a versioned snapshot body, and the Run restored from one (ADR 0032).

Why: reopening a run folded every committed fact, so the first command after a restart cost
time proportional to the whole history (about 0.1 ms per event). A snapshot keeps what the fold
computed (header, owner, seal, attestations, the terminal event, the ordered event ids, the
journal fold and the resolver's compact scan state) at the fact version it covers; a load
restores it and folds only the facts after that version. The events themselves are not in the
snapshot: a restored Run reads them from the ledger on first use (``Run.attach_history``).

Why never trusted over the ledger: this module only writes and reads the body. The adapter
(:mod:`maka_es.adapters.run_snapshots`) stores it with its digest and the digest of the stored
fact it covers, and uses it only when the format is :data:`SNAPSHOT_FORMAT`, the body matches
its digest and the ledger still holds that fact; anything else is a full replay. Pure.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any
from uuid import UUID

from maka_es.ledger.model.ownership import RunOwner
from maka_es.ledger.model.run import Run
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.resolver import ResolverState
from maka_es.tooljournal.model.scanner import (
    PartText,
    SnapshotIds,
    bundle_events,
    dump_scan,
    id_index,
    load_id_index,
    restore_scan,
)
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = [
    "PARTS",
    "SNAPSHOT_EVERY",
    "SNAPSHOT_FORMAT",
    "PartReader",
    "dump_run",
    "part_of",
    "restore_run",
    "split_parts",
]

#: The body's format; a snapshot of any other format is ignored (a full replay writes anew).
SNAPSHOT_FORMAT = 2

#: A load that leaves more than this many facts folded since the last snapshot writes one.
SNAPSHOT_EVERY = 1000

#: The body's lines a store may keep apart, read on first use: (name, line index).
PARTS = (("operations", 3), ("journal", 4))

#: Reads a part kept apart by its name and sha256 (the adapter verifies it, ADR 0032).
PartReader = Callable[[str, str], bytes]

_ATTESTATION_FIELDS = (
    "operation_id",
    "applied",
    "result",
    "actor",
    "note",
    "attested_at",
    "response_event_id",
)


def dump_run(run: Run) -> str:
    """The snapshot body of ``run`` at ``run.version`` (see the module docstring).

    Five lines: the values (header, owner, seal, attestations, terminal and embedded events,
    the scan's small parts), the ordered event ids, their sorted CRC-32 index (base64, see
    :mod:`maka_es.tooljournal.model.scanner`), the scan's operations and the journal fold, each
    JSON but the index. ``json.dumps`` and base64 never write a raw newline, so the lines split
    back exactly; the ids, the operations and the journal stay unparsed until a command needs
    them. The embedded events (the terminal
    one and those a recovery bundle's interpretation reads) are their canonical JSON."""
    ids = [*run._snapshot_ids, *(event.id for event in run._events)]
    terminal = run.terminal_event
    scan, operations = dump_scan(run.resolver)
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
        "embedded": [
            [p, canonical_json(event)] for p, event in sorted(bundle_events(run.resolver).items())
        ],
        "scan": scan,
    }
    lines = (_json(values), _json(ids), id_index(ids), operations, run.journal_text())
    assert not any("\n" in line for line in lines)
    return "\n".join(lines)


def split_parts(body: str) -> tuple[bytes, dict[str, bytes]]:
    """``body`` with its operations and journal lines replaced by ``@`` and their sha256, and
    those lines by digest. Why: they are most of a big run's body and a plain command reads
    neither; a JSON line never starts with ``@``."""
    lines = body.encode().split(b"\n")
    parts: dict[str, bytes] = {}
    for _, at in PARTS:
        digest = hashlib.sha256(lines[at]).hexdigest()
        parts[digest] = lines[at]
        lines[at] = b"@" + digest.encode()
    return b"\n".join(lines), parts


def part_of(run: Run, name: str) -> bytes:
    """The line ``name`` of ``run``'s body: what a replay answers for a part that is gone."""
    at = dict(PARTS)[name]
    return dump_run(run).split("\n")[at].encode()


def _part(line: bytes, name: str, parts: PartReader | None) -> PartText:
    if not line.startswith(b"@"):
        return line
    if parts is None:
        raise ValueError(f"the snapshot's {name} are kept apart and there is no reader")
    return functools.partial(parts, name, line[1:].decode())


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def restore_run(data: bytes, stream_id: UUID, parts: PartReader | None = None) -> Run:
    """The Run the body's UTF-8 ``data`` describes (its events left in the ledger until used;
    a part :func:`split_parts` kept apart is read through ``parts`` on first use).

    Raises ``ValueError``/``KeyError``/``TypeError`` on a body that does not fit; the adapter
    then falls back to a full replay."""
    values_line, ids_line, index_line, operations, journal = data.split(b"\n")
    body = json.loads(values_line)
    if body["format"] != SNAPSHOT_FORMAT or body["stream"] != str(stream_id):
        raise ValueError("not a snapshot of this run in the current format")
    run = Run(
        stream_id,
        RunHeader.model_validate(body["header"]),
        body["version"],
        RunOwner.from_json(body["owner"]),
    )
    ids = SnapshotIds(ids_line, body["scan"]["count"])
    embedded = {p: RuntimeEvent.model_validate_json(text) for p, text in body["embedded"]}
    run._snapshot_ids = ids
    run._sealed_by = body["sealedBy"]
    for row in body["attestations"]:
        attestation = OperatorAttestation(**dict(zip(_ATTESTATION_FIELDS, row, strict=True)))
        run._attestations[attestation.operation_id] = attestation
    terminal = body["terminal"]
    run._terminal = None if terminal is None else RuntimeEvent.model_validate_json(terminal)
    run._journal_text = _part(journal, "journal", parts)
    run._resolver = restore_scan(
        ResolverState,
        body["scan"],
        _part(operations, "operations", parts),
        ids,
        load_id_index(index_line),
        embedded,
    )
    run._resolver.event_at = run._event_at
    return run
