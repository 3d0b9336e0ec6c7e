"""A fact as a stored row: the pydantic mapper and transcoder that encode and decode it, and the
writers that commit a command's rows in one transaction (ADR 0033).

Why not eventsourcing's default mapper: it stores ``vars(event)`` with class-path topics and a
transcoder that turns tuples into lists. Our facts are pydantic models with explicit, stable
topics (see ``maka_es.ledger.model.facts``); decoding goes through ``model_validate`` so a
stored row that no longer matches its model fails loudly instead of producing a half-valid object.

Why not eventsourcing's ``Application.save`` to write them: every command of the library saves
facts it just decided and validated, and nothing else (no aggregates to collect, no snapshots,
no ``_notify`` subscribers, no notification ids anyone reads back). The generic path paid for
all of that on each of the two commits of a tool step (a processing event, the event store's
recordings, a deferred ``BEGIN`` and one ``INSERT`` call per row to collect ``lastrowid``):
about a third of a step's CPU. :class:`SqliteFactWriter` keeps exactly what the store promises
and drops the rest:

* the rows are the mapper's rows: same columns, same bytes (the ``FactMapper`` encodes them,
  so the own-facts read-back of ADR 0026 still recognises them); the notification ids are
  SQLite's rowids, assigned by the insert as before;
* one ``BEGIN IMMEDIATE`` (the write lock is taken before the first row, so a concurrent
  writer waits or is refused at ``BEGIN``), one ``executemany``, then, before ``COMMIT`` and
  in this order: the crash failpoint, the store-file identity check (ADR 0014) and the
  ``data_version`` note of the own-commit watch (ADR 0026); ``synchronous=FULL`` and WAL are
  the connection's, set by the pool;
* a uniqueness violation is eventsourcing's ``IntegrityError`` (a lost race the caller
  classifies); every other fault is typed by the same ``typed_store_faults`` as every access.

The other stores get :class:`RecorderFactWriter`, the mapper's rows handed to the recorder.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, ClassVar, Final
from uuid import UUID

import orjson
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import (
    AggregateRecorder,
    IntegrityError,
    Mapper,
    StoredEvent,
    Transcoder,
)
from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor
from pydantic import BaseModel, ValidationError

from maka_es import failpoints
from maka_es.adapters.sqlite import (
    SQLITE_FAULTS,
    DurableSQLiteDatastore,
    FailpointSQLiteApplicationRecorder,
    store_fault,
)
from maka_es.errors import MakaError, NonStrictJsonError, StoreCorruptionError
from maka_es.ledger.model.facts import FACT_TYPES, RuntimeEventRecorded, StoredFact

# === the fact mapper and transcoder ===============================================================

#: ``json.dumps`` with these options, built once: ``dumps`` builds an encoder per call when
#: given options, a measurable share of a commit (ADR 0033). Same bytes.
_encode_fact = json.JSONEncoder(
    separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False
).encode


class JsonTranscoder(Transcoder):
    """Compact UTF-8 JSON; strict (NaN/Infinity refused both ways)."""

    def encode(self, obj: Any) -> bytes:
        """Strict JSON bytes, or ``non_strict_json`` (NaN, a lone surrogate, a non-JSON type):
        a fact that cannot be stored exactly is refused before anything is written."""
        try:
            return _encode_fact(obj).encode("utf-8")
        except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
            raise NonStrictJsonError(
                f"a stored fact is not strict JSON: {type(exc).__name__}: {str(exc)!a}"
            ) from None

    def decode(self, data: bytes) -> Any:
        def refuse(constant: str) -> Any:
            raise ValueError(f"non-strict JSON constant {constant}")

        return json.loads(data.decode("utf-8"), parse_constant=refuse)


#: Facts this mapper wrote and has not read back yet, at most (oldest forgotten first).
WRITTEN_LIMIT = 1024


class FactMapper(Mapper[UUID]):
    """Maps :class:`StoredFact` models to stored events by their explicit ``TOPIC``.

    It remembers the ``RuntimeEventRecorded`` facts it encoded that carry their decided event,
    with the exact bytes it produced: when the aggregate cache fast-forwards over a row whose
    stream, version, topic and bytes are exactly those, the remembered fact is returned instead
    of decoding and re-validating what this process validated a moment ago (ADR 0026). Any
    other row (another writer's, a changed byte) is decoded and validated as always.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._written: dict[tuple[UUID, int], tuple[StoredEvent, StoredFact]] = {}
        self._written_lock = threading.Lock()

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        if not isinstance(domain_event, StoredFact):
            raise TypeError(f"not a maka_es fact: {type(domain_event).__name__}")
        state = self.transcoder.encode(domain_event.state())
        if self.compressor:
            state = self.compressor.compress(state)
        if self.cipher:
            state = self.cipher.encrypt(state)
        stored = StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=type(domain_event).TOPIC,
            state=state,
        )
        if isinstance(domain_event, RuntimeEventRecorded) and domain_event.decided_event:
            self._remember(stored, domain_event)
        return stored

    def _remember(self, stored: StoredEvent, fact: StoredFact) -> None:
        with self._written_lock:
            self._written[(fact.originator_id, fact.originator_version)] = (stored, fact)
            if len(self._written) > WRITTEN_LIMIT:
                del self._written[next(iter(self._written))]

    def _written_fact(self, stored_event: StoredEvent) -> StoredFact | None:
        """The remembered fact of a row byte-identical to one this mapper wrote, once."""
        originator_id = stored_event.originator_id
        if not isinstance(originator_id, UUID):
            originator_id = UUID(str(originator_id))
        with self._written_lock:
            entry = self._written.pop((originator_id, stored_event.originator_version), None)
        if entry is None:
            return None
        written, fact = entry
        if written.topic != stored_event.topic or bytes(written.state) != bytes(stored_event.state):
            return None
        return fact

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[UUID]:
        written = self._written_fact(stored_event)
        if written is not None:
            return written
        fact_type = FACT_TYPES.get(stored_event.topic)
        if fact_type is RuntimeEventRecorded:
            parsed = self._recorded_in_one_parse(stored_event)
            if parsed is not None:
                return parsed
        if fact_type is None:
            raise StoreCorruptionError(f"unknown stored fact topic {stored_event.topic!r}")
        state = stored_event.state
        try:
            if self.cipher:
                state = self.cipher.decrypt(state)
            if self.compressor:
                state = self.compressor.decompress(state)
            data = self.transcoder.decode(state)
            originator_id = stored_event.originator_id
            if not isinstance(originator_id, UUID):
                originator_id = UUID(str(originator_id))
            return fact_type.model_validate(
                {
                    **data,
                    "originator_id": originator_id,
                    "originator_version": stored_event.originator_version,
                }
            )
        except (ValueError, TypeError, ValidationError) as exc:  # TypeError: not an object
            raise StoreCorruptionError(
                f"stored fact {stored_event.topic} v{stored_event.originator_version} of "
                f"{stored_event.originator_id} cannot be decoded: {exc}"
            ) from exc

    def _recorded_in_one_parse(self, stored_event: StoredEvent) -> RuntimeEventRecorded | None:
        """A ``RuntimeEventRecorded`` row validated by pydantic straight from its bytes, or
        ``None`` to take the generic path.

        Why: a reload reads one such row per event; decoding it with ``json.loads`` and then
        validating the dict costs two passes. Here the stream identity is spliced in as the
        last keys (so, as in the generic path, it wins over any stored key of that name) and
        the row is parsed and validated once. Anything this parse refuses or reads otherwise
        than the strict transcoder would (a non-finite number; cipher, compressor or another
        transcoder) goes the generic way, which then accepts or refuses it exactly as before.
        """
        if self.cipher or self.compressor or not isinstance(self.transcoder, JsonTranscoder):
            return None
        state = bytes(stored_event.state)
        if not (state.startswith(b"{") and state.endswith(b"}")) or state == b"{}":
            return None
        fast = recorded_from_row(stored_event.originator_id, stored_event.originator_version, state)
        if fast is not None:
            return fast
        identity = (
            f',"originator_id":"{stored_event.originator_id}",'
            f'"originator_version":{int(stored_event.originator_version)}}}'
        )
        try:
            fact = RuntimeEventRecorded.model_validate_json(state[:-1] + identity.encode())
        except ValidationError:
            return None
        return fact if math.isfinite(fact.committed_at) else None


#: The stored keys of a ``RuntimeEventRecorded`` row and the ``fields_set`` validation gives
#: it (one set per shape: the facts are frozen, so nothing adds to it in place).
_RECORDED_KEYS: Final = frozenset({"event_seq", "event_id", "payload", "committed_at"})
_RECORDED_SETS: Final = {
    keys: {"originator_id", "originator_version", *keys}
    for keys in (_RECORDED_KEYS, _RECORDED_KEYS | {"payload_digest"})
}
_new_recorded = RuntimeEventRecorded.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def recorded_from_row(
    originator_id: object, originator_version: object, state: bytes
) -> RuntimeEventRecorded | None:
    """A ``RuntimeEventRecorded`` row decoded by orjson and checked field by field as its
    model checks it (ADR 0045), or ``None``: the row takes pydantic's path, which accepts or
    refuses it as before.

    Why: validating a reload's rows one by one through pydantic (and building each fact's
    private attributes through its Python hook) was about a third of a cold ``plan_resume``.
    Only the plain shapes are read here: exact ``int`` sequence number and version, ``str``
    id, payload and digest, a JSON number as commit time, no other key and no ``null``;
    anything else (a string pydantic's lax mode would coerce, a float version) declines.
    """
    try:
        data = orjson.loads(state)
    except orjson.JSONDecodeError:
        return None
    keys = frozenset(data) if type(data) is dict else None
    fields_set = _RECORDED_SETS.get(keys) if keys is not None else None
    if fields_set is None or not _plain_recorded(data):
        return None
    stream = originator_id if type(originator_id) is UUID else _uuid_or_none(originator_id)
    version = originator_version
    if stream is None or type(version) is not int or version < 1:
        return None
    fact = _new_recorded(RuntimeEventRecorded)
    _set_dict(
        fact,
        {
            "originator_id": stream,
            "originator_version": version,
            "event_seq": data["event_seq"],
            "event_id": data["event_id"],
            "payload": data["payload"],
            "committed_at": data["committed_at"],
            "payload_digest": data.get("payload_digest"),
        },
    )
    _set_fields_set(fact, fields_set)
    _set_extra(fact, None)
    _set_private(fact, {"_decided_event": None, "_strict": False})
    return fact


def _plain_recorded(data: dict[str, Any]) -> bool:
    seq = data["event_seq"]
    return (
        type(seq) is int
        and seq >= 1
        and type(data["event_id"]) is str
        and type(data["payload"]) is str
        and type(data["committed_at"]) in (int, float)
        and type(data.get("payload_digest", "")) is str
    )


def _uuid_or_none(value: object) -> UUID | None:
    try:
        return UUID(str(value))
    except ValueError:
        return None


# === the fact writers =============================================================================

Row = tuple[str, int, str, bytes]


class RecorderFactWriter:
    """The other stores (PostgreSQL, eventsourcing's in-memory store): the mapper's rows
    handed straight to the recorder's ``insert_events``, which is all ``Application.save``
    did for facts (no aggregates, snapshots or subscribers). The recorder keeps its own
    transaction, locks, failpoint and fault typing (ADR 0028)."""

    def __init__(self, recorder: AggregateRecorder, mapper: Mapper[UUID]) -> None:
        self._recorder = recorder
        self._mapper = mapper

    def write(self, facts: Sequence[StoredFact]) -> None:
        """Commit ``facts`` in the recorder's one transaction, or raise with nothing written."""
        self._recorder.insert_events([self._mapper.to_stored_event(fact) for fact in facts])


class SqliteFactWriter:
    """Writes one command's facts to the recorder's SQLite file in one transaction."""

    #: The cursor class the writer uses; a test probe substitutes a counting subclass.
    cursor_factory: ClassVar[type[sqlite3.Cursor]] = sqlite3.Cursor

    def __init__(self, recorder: FailpointSQLiteApplicationRecorder, mapper: Mapper[UUID]) -> None:
        datastore = recorder.datastore
        if not isinstance(datastore, DurableSQLiteDatastore):
            raise TypeError("the fact writer needs the library's durable SQLite datastore")
        self._recorder = recorder
        self._datastore = datastore
        self._mapper = mapper
        self._insert = recorder.insert_events_statement

    def write(self, facts: Sequence[StoredFact]) -> None:
        """Commit ``facts`` durably, or raise with nothing of them written."""
        stored = [self._mapper.to_stored_event(fact) for fact in facts]
        rows: list[Row] = [
            (
                s.originator_id.hex if isinstance(s.originator_id, UUID) else s.originator_id,
                s.originator_version,
                s.topic,
                s.state,
            )
            for s in stored
        ]
        pool = self._datastore.pool
        own_commits = self._recorder.own_commits
        # ``typed_store_faults`` around ``get_connection(commit=True)``, without the two
        # generator context managers (a measurable share of a commit, issue 23): the same
        # checkout, return and typing of every fault, the checkout's own faults included.
        try:
            conn = pool.get_connection(is_writer=True)
            try:
                self._transact(conn, rows, stored)
            finally:
                pool.put_connection(conn)
        except (MakaError, IntegrityError):
            own_commits.failed()
            raise
        except SQLITE_FAULTS as exc:
            own_commits.failed()
            raise store_fault(exc, path=pool.db_path, read_only=pool.read_only) from exc
        except BaseException:
            own_commits.failed()
            raise
        own_commits.committed()

    def _transact(
        self, conn: SQLiteConnection, rows: list[Row], stored: Sequence[StoredEvent]
    ) -> None:
        """BEGIN IMMEDIATE, the rows, the checks before COMMIT, COMMIT; rolled back on any
        exception (the failpoint's included), so a refusal leaves nothing written."""
        raw: sqlite3.Connection = conn._sqlite_conn
        cursor = raw.cursor(self.cursor_factory)
        try:
            cursor.execute("BEGIN IMMEDIATE")
            cursor.executemany(self._insert, rows)
            failpoints.hit(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
            self._datastore.pool.verify_file_identity()
            self._recorder.own_commits.note_write(SQLiteCursor(cursor), stored)
            cursor.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            _roll_back(conn)
            raise IntegrityError(exc) from exc
        except BaseException:
            _roll_back(conn)
            raise
        finally:
            cursor.close()


def _roll_back(conn: SQLiteConnection) -> None:
    """Undo an open transaction; a connection that cannot roll back is closed, never reused
    (the pool forgets closed connections), so the next command never inherits its state."""
    raw: sqlite3.Connection = conn._sqlite_conn
    if not raw.in_transaction:
        return
    try:
        raw.rollback()
    except sqlite3.Error:
        with suppress(sqlite3.Error):
            conn.close()
