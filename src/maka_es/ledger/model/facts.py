"""Stored facts: the eventsourcing domain events of the Session, Run and Invocation streams.

Why explicit topics: eventsourcing resolves stored events by topic. A topic that is a class path
breaks every stored row when a class moves; here each fact declares a stable ``TOPIC`` string
and the mapper resolves through :data:`FACT_TYPES`, so renames never break decoding.

Why derived stream ids: "the stream of run r1" and "the claim on invocation i1" must be the same
row for every process and every machine, so that the store's ``(originator_id,
originator_version)`` uniqueness is the arbiter between concurrent writers; each id is the uuid5
of a typed name. Why checked first: the name is hashed as UTF-8, so an id that is not UTF-8 text
must be refused before any read or write derives it.

Why a trusted path to read a committed RuntimeEvent back (:func:`read_recorded_event`, ADR
0025): every event was validated strictly and canonicalised at the boundary before it was
committed (docs/reference/ledger.md#write-rules). Re-running the strict JSON checks and the
Python-hooked JSON decoder on every reload made a 100k-event run cost seconds to reopen; each
append stores ``payload_digest`` with the payload, and a row whose bytes still hash to it is the
very text that passed the boundary, so it is parsed once by pydantic's own JSON parser and its
strict-JSON after-validator is skipped (the field shapes are still validated). Never trusted over
the ledger: a row without a digest (written before ADR 0025, or by an older writer) and a row
whose bytes no longer match their digest take the strict path, exactly as every row did before.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Any, ClassVar, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    StrictInt,
    StrictStr,
    ValidationError,
)
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass

from maka_es.errors import InvalidRunHeaderError, InvalidRuntimeEventError
from maka_es.wire.base import TRUSTED_STORED, loads_js
from maka_es.wire.codec import canonical_json, has_lone_surrogate
from maka_es.wire.events import RuntimeEvent, trusted_event
from maka_es.wire.run_header import RunHeader

#: Milliseconds since the epoch. The library stamps integers (as the reference's ``Date.now()``);
#: ``float`` stays readable for facts an older version or another writer stored.
EpochMs = int | float


# --- stream ids ------------------------------------------------------------------------------

#: Namespace for every maka_es stream id. Never change it: ids are persistent.
STREAM_NAMESPACE = uuid.UUID("5b3c7d4e-0f7a-5c8e-9a51-6d2e8f1b4c90")


def checked_text(value: object, field: str) -> str:
    """``value`` when it can name a stream or be stored: a ``str`` that UTF-8 can encode.

    Why before any stream id is derived: the id is a uuid5 over UTF-8, so a lone surrogate (a
    non-UTF-8 byte of a command line) raised a raw ``UnicodeEncodeError``, and a non-``str``
    (an int, bytes) named another stream than the fact would record. ``invalid_runtime_event``
    with ``field`` naming the wire field; raised before anything is read or written.
    """
    if not isinstance(value, str):
        raise InvalidRuntimeEventError(
            f"{field} must be a string, not {type(value).__name__}",
            field=field,
            detail={"reason": "not_a_string"},
        )
    if has_lone_surrogate(value):
        raise InvalidRuntimeEventError(
            f"{field} {value!a} holds a lone surrogate: it is not UTF-8 text",
            field=field,
            detail={"reason": "lone_surrogate"},
        )
    return value


def checked_session_args(session_id: object, cwd: object, workspace_identity: object) -> None:
    """``open_session``'s arguments, each a ``str`` (the identity may be ``None``), the session id
    also UTF-8 text:
    pydantic alone would store ``b"x"`` as ``"x"`` under the stream id of ``"b'x'"``."""
    checked_text(session_id, "sessionId")
    _checked_str(cwd, "cwd")
    if workspace_identity is not None:
        _checked_str(workspace_identity, "workspaceIdentity")


def _checked_str(value: object, field: str) -> None:
    """A stored field that names no stream: only its type is checked here; a lone surrogate
    in it is the fact's own ``non_strict_json`` refusal, before the write."""
    if not isinstance(value, str):
        raise InvalidRuntimeEventError(
            f"{field} must be a string, not {type(value).__name__}",
            field=field,
            detail={"reason": "not_a_string"},
        )


def run_stream_id(run_id: str) -> uuid.UUID:
    """The run's stream id (``invalid_runtime_event`` for an id no stream can have)."""
    return _run_stream_id(checked_text(run_id, "runId"))


@lru_cache(maxsize=4096)
def _run_stream_id(run_id: str) -> uuid.UUID:
    """Remembered, since every command of a run asks for it (uuid5 hashes with SHA-1 each
    time) and the answer never changes (ADR 0033)."""
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/run/{run_id}")


def session_stream_id(session_id: str) -> uuid.UUID:
    return _named_stream("session", session_id, "sessionId")


def invocation_stream_id(invocation_id: str) -> uuid.UUID:
    return _named_stream("invocation", invocation_id, "invocationId")


def claim_stream_id(claim_id: str) -> uuid.UUID:
    return _named_stream("claim", claim_id, "claimId")


def fork_stream_id(claim_id: str) -> uuid.UUID:
    return _named_stream("fork", claim_id, "claimId")


def host_stream_id(host_id: str) -> uuid.UUID:
    return _named_stream("host", host_id, "hostId")


def trace_stream_id(run_id: str) -> uuid.UUID:
    """The stream of a run's trace context (ADR 0043): apart from the run's own stream, so
    recording it never moves the run's version, its snapshots or its digests."""
    return _named_stream("trace", run_id, "runId")


def _named_stream(kind: str, name: str, field: str) -> uuid.UUID:
    """The one spelling of a stream id: ``maka_es/<kind>/<name>`` under the namespace, the
    name checked as wire text first (``invalid_runtime_event`` naming ``field``)."""
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/{kind}/{checked_text(name, field)}")


class StoredFact(BaseModel):
    """Base of every stored fact: frozen, exact, with the eventsourcing identity fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    TOPIC: ClassVar[str]

    originator_id: uuid.UUID
    originator_version: int = Field(ge=1)

    def state(self) -> dict[str, Any]:
        """The stored state (everything but the stream identity), JSON-ready.

        Python mode on purpose: pydantic's JSON mode rewrites an object key holding a lone
        surrogate to U+FFFD, which could merge two keys and lose a value; here every key
        reaches the strict transcoder as it is, and anything it cannot encode is refused."""
        return self.model_dump(mode="python", exclude={"originator_id", "originator_version"})


# --- session stream --------------------------------------------------------------------------


class SessionOpened(StoredFact):
    TOPIC = "maka_es.session.opened.v1"

    session_id: str
    cwd: str
    workspace_identity: str | None
    opened_at: EpochMs


class RunRegistered(StoredFact):
    """The session knows the run (listing order, continuation lineage later)."""

    TOPIC = "maka_es.session.run_registered.v1"

    run_id: str
    created_at: EpochMs


# --- invocation stream (spine uniqueness) ----------------------------------------------------


class InvocationBound(StoredFact):
    """An invocation id belongs to exactly one run. Version 1 of the invocation's stream, so a
    second run with the same invocation id loses on the store's uniqueness."""

    TOPIC = "maka_es.invocation.bound.v1"

    invocation_id: str
    session_id: str
    run_id: str
    turn_id: str


def bind_invocation(header: RunHeader) -> InvocationBound:
    """Version 1 of the invocation's stream: one run per invocation, enforced by the store.
    Saved with every fact that creates a run."""
    if header.invocation_id is None:
        raise InvalidRunHeaderError(
            "a run created through the store needs its invocationId", field="invocationId"
        )
    return InvocationBound(
        originator_id=invocation_stream_id(header.invocation_id),
        originator_version=1,
        invocation_id=header.invocation_id,
        session_id=header.session_id,
        run_id=header.run_id,
        turn_id=header.turn_id,
    )


# --- run stream ------------------------------------------------------------------------------


class RunCreated(StoredFact):
    """Version 1 of a run stream. ``owner`` (``{"hostId", "epoch"}``, ADR 0021) is the host
    that created the run; rows written before run ownership lack the key and read as
    ownerless, and an ownerless fact stores no key, so its bytes are what they always were."""

    TOPIC = "maka_es.run.created.v1"

    header: dict[str, JsonValue]
    created_at: EpochMs
    owner: dict[str, JsonValue] | None = None

    def state(self) -> dict[str, Any]:
        state = super().state()
        if state.get("owner") is None:
            state.pop("owner", None)
        return state


def is_exact_create_retry(
    first: StoredFact | None, header: RunHeader, clock_fields: Collection[str] = ()
) -> bool:
    """Whether creating a run with ``header`` repeats the creation ``first`` recorded (the
    run stream's version 1): the same header, field for field in canonical JSON, as the run
    was created with, whatever happened to the run since. ``clock_fields`` are fields the
    caller itself filled from the clock (``start_run``'s ``createdAt``/``updatedAt``), which
    a retry cannot repeat; they are left out of the comparison. A different header for the
    same run id is not a retry (``run_already_exists``)."""
    if not isinstance(first, RunCreated):
        return False

    def compared(wire: Mapping[str, Any]) -> str:
        return canonical_json({k: v for k, v in wire.items() if k not in clock_fields})

    return compared(first.header) == compared(header.to_wire())


class RuntimeEventRecorded(StoredFact):
    """One committed RuntimeEvent. ``payload`` is its canonical JSON: the stored bytes are the
    stable JSON of docs/reference/wire.md#canonical-json, so the ledger can be exported
    byte-identically.

    ``payload_digest`` (``sha256:<hex>`` of the payload's UTF-8 bytes) is written with every
    append since ADR 0025: it vouches that these bytes passed the strict boundary checks and
    were canonicalised when written, so a reload whose bytes still match may skip re-running
    those checks. Rows written before it lack the key (and keep their bytes) and are read
    the strict way."""

    TOPIC = "maka_es.run.runtime_event_recorded.v1"

    event_seq: int = Field(ge=1)
    event_id: str
    payload: str
    committed_at: EpochMs
    payload_digest: str | None = None

    def state(self) -> dict[str, Any]:
        """The generic ``model_dump`` of these five plain fields, built directly: it runs
        twice per tool step (ADR 0033); every value is a ``str``, ``int`` or ``float`` that
        the dump would return as it is, so the stored bytes are the same (a test compares)."""
        state: dict[str, Any] = {
            "event_seq": self.event_seq,
            "event_id": self.event_id,
            "payload": self.payload,
            "committed_at": self.committed_at,
        }
        if self.payload_digest is not None:
            state["payload_digest"] = self.payload_digest
        return state

    @classmethod
    def decided(
        cls,
        originator_id: uuid.UUID,
        originator_version: int,
        event_seq: int,
        event_id: str,
        payload: str,
        committed_at: float,
        payload_digest: str,
    ) -> RuntimeEventRecorded:
        """The fact a command decides, built without running the validator over values the
        command computed itself (a step builds three, ADR 0046). Each value is checked to be
        of the exact type validation would keep as it is (a UUID, positive ints, strings, an
        int or float time); anything else is validated as ``cls(...)`` would, so the fact is
        the same either way (a test compares)."""
        values = {
            "originator_id": originator_id,
            "originator_version": originator_version,
            "event_seq": event_seq,
            "event_id": event_id,
            "payload": payload,
            "committed_at": committed_at,
            "payload_digest": payload_digest,
        }
        if not (
            type(originator_id) is uuid.UUID
            and type(originator_version) is int
            and originator_version >= 1
            and type(event_seq) is int
            and event_seq >= 1
            and type(event_id) is str
            and type(payload) is str
            and type(committed_at) in _EXACT_TIMES
            and type(payload_digest) is str
        ):
            return cls(**values)
        fact = cls.__new__(cls)
        object.__setattr__(fact, "__dict__", values)
        object.__setattr__(fact, "__pydantic_fields_set__", set(_DECIDED_FIELDS))
        object.__setattr__(fact, "__pydantic_extra__", None)
        private = {name: attr.get_default() for name, attr in cls.__private_attributes__.items()}
        object.__setattr__(fact, "__pydantic_private__", private)
        return fact

    #: The validated event this fact was decided from, when reading ``payload`` back is known
    #: to give the same model (ADR 0026); never stored, so a fact read from the store has none.
    _decided_event: RuntimeEvent | None = PrivateAttr(default=None)

    def with_decided_event(self, event: RuntimeEvent) -> RuntimeEventRecorded:
        """This fact, remembering ``event`` (whose plain canonical JSON is ``payload``) so the
        writer's fold need not parse it again (ADR 0026)."""
        self._decided_event = event
        return self

    #: Set by the plain loader (ADR 0037, fast paths off): read ``payload`` strictly, as a row
    #: without a digest is read, even when it matches its digest. Never stored.
    _strict: bool = PrivateAttr(default=False)

    def read_strictly(self) -> RuntimeEventRecorded:
        """This fact, to be read by the strict path only (the plain loader's reads)."""
        self._strict = True
        return self

    @property
    def decided_event(self) -> RuntimeEvent | None:
        # read the private slot directly: attribute access goes through pydantic's
        # ``__getattr__``, a measurable cost when a reload asks it of every row
        private = self.__pydantic_private__
        return None if private is None else private.get("_decided_event")


_EXACT_TIMES: Final = (int, float)
_DECIDED_FIELDS: Final = frozenset(
    {
        "originator_id",
        "originator_version",
        "event_seq",
        "event_id",
        "payload",
        "committed_at",
        "payload_digest",
    }
)


def payload_digest_of(payload: str) -> str:
    """The ``payload_digest`` of a committed event's canonical JSON (ADR 0025)."""
    return "sha256:" + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


#: An integer literal of 16+ digits may lie beyond 2**53, where the reference's JavaScript
#: number semantics read it as a double (``loads_js``); such payloads keep that decoder.
_LONG_NUMBER = re.compile(r"[0-9]{16}")


def decode_recorded_event(fact: RuntimeEventRecorded) -> RuntimeEvent:
    """The committed event of ``fact``: trusted when its digest matches, strict otherwise."""
    return read_recorded_event(fact)[0]


def read_recorded_event(fact: RuntimeEventRecorded) -> tuple[RuntimeEvent, bool]:
    """The committed event of ``fact`` and whether its row was verified against its digest.

    A verified row is the very text that passed the write-time checks, so the resolver may
    skip re-deriving what those checks derived from it (the call's args hash, ADR 0025)."""
    digest = fact.payload_digest
    matches = digest is not None and payload_digest_of(fact.payload) == digest
    if matches and not (fact.__pydantic_private__ or {}).get("_strict"):
        trusted = _decode_trusted(fact.payload)
        if trusted is not None:
            return trusted, True
    return RuntimeEvent.model_validate_json(fact.payload), False  # exactly as before ADR 0025


def _decode_trusted(payload: str) -> RuntimeEvent | None:
    """Parse verified canonical bytes once; ``None`` sends them to the strict path. The
    plain shapes are assembled without validating them again (ADR 0045), the others are
    parsed by pydantic without the strict-JSON after-validator (ADR 0025)."""
    fast = trusted_event(payload)
    if fast is not None:
        return fast
    try:
        if _LONG_NUMBER.search(payload) is not None:
            return RuntimeEvent.model_validate(loads_js(payload), context=TRUSTED_STORED)
        return RuntimeEvent.__pydantic_validator__.validate_json(payload, context=TRUSTED_STORED)  # type: ignore[no-any-return]
    except (ValidationError, ValueError):
        return None


class RunHeaderUpdated(StoredFact):
    TOPIC = "maka_es.run.header_updated.v1"

    patch: dict[str, JsonValue]
    updated_at: EpochMs


class ToolMetadataRecorded(StoredFact):
    """T1 metadata a tool records for its reconciler (e.g. expected/prior content digests).
    Saved in the same transaction as the dispatch fact; never part of the RuntimeEvent ledger."""

    TOPIC = "maka_es.run.tool_metadata_recorded.v1"

    operation_id: str
    metadata: dict[str, JsonValue]


class OperationAttested(StoredFact):
    """An operator's attestation of an indeterminate operation (ADR 0022): who, when, why and
    whether it took effect. Saved in the same transaction as the T2 response that carries the
    attested outcome; never part of the RuntimeEvent ledger, so the reference never reads it."""

    TOPIC = "maka_es.run.operation_attested.v1"

    operation_id: str
    applied: bool
    result: JsonValue
    actor: str
    note: str
    attested_at: EpochMs
    response_event_id: str


class RunForked(StoredFact):
    """An operator forked ``source_run_id`` before ``abandoned_operation_id`` as
    ``fork_run_id`` (ADR 0022): who, when, why, and the kept prefix's high-water. Version 1 of
    its own stream, saved in the fork's claim transaction; outside the RuntimeEvent ledger."""

    TOPIC = "maka_es.fork.recorded.v1"

    claim_id: str
    source_run_id: str
    fork_run_id: str
    high_water: int
    abandoned_operation_id: str
    actor: str
    note: str
    forked_at: EpochMs


class RunSealed(StoredFact):
    """The run is a continuation source: no new immutable events, ever. Saved at the source's
    expected version in the claim's transaction, so a source that changed after planning makes
    the whole claim fail (fencing by the store's version uniqueness)."""

    TOPIC = "maka_es.run.sealed.v1"

    claim_id: str
    sealed_at: EpochMs


class RunOwnerTaken(StoredFact):
    """Another host took the run over (its owner's lease had expired): the run's owner epoch
    becomes ``epoch`` = ``previous_epoch + 1``. Saved at the run's next version, so two hosts
    taking it over at once cannot both win, and every later write of the former owner is
    refused ``run_owner_fenced`` (ADR 0021)."""

    TOPIC = "maka_es.run.owner_taken.v1"

    host_id: str
    epoch: int = Field(ge=2)
    previous_host_id: str
    previous_epoch: int = Field(ge=1)
    taken_at: EpochMs


# --- host stream (leases) --------------------------------------------------------------------


class HostLeaseRenewed(StoredFact):
    """A heartbeat: host ``host_id`` is alive and owns its runs until ``expires_at``
    (milliseconds, by the host's clock). Version n of the host's stream; the newest renewal
    is the lease (ADR 0021)."""

    TOPIC = "maka_es.host.lease_renewed.v1"

    host_id: str
    renewed_at: EpochMs
    expires_at: EpochMs


def claim_id_for(session_id: str, run_id: str, high_water: int, prefix_digest: str) -> str:
    """``claim_<32 hex>`` of sha256 over the boundary's identity, position and prefix digest."""
    material = canonical_json([session_id, run_id, high_water, prefix_digest])
    return "claim_" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


@dataclass(
    frozen=True,
    slots=True,
    config=ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    ),
)
class SourceBoundary:
    """The committed boundary a continuation starts from, with its digests
    (docs/reference/continuation.md#claims).

    Why typed here: a claim stores it (``ContinuationClaimed.boundary``) and the planner,
    revalidation and startup recovery compare it field by field; one model reads and writes
    the stored shape, which is exactly the camelCase object claims have always stored
    (``sessionId``, ``invocationId``, ``runId``, ``turnId``, ``highWater``, ``prefixDigest``,
    ``manifestDigest``, ``providerReplayDigest``), so no stored row needs an upcaster.
    """

    session_id: StrictStr
    invocation_id: StrictStr
    run_id: StrictStr
    turn_id: StrictStr
    high_water: StrictInt
    prefix_digest: StrictStr
    manifest_digest: StrictStr
    provider_replay_digest: StrictStr

    @property
    def claim_id(self) -> str:
        """Deterministic claim id: every claimer of this boundary computes the same one."""
        return claim_id_for(self.session_id, self.run_id, self.high_water, self.prefix_digest)


class ContinuationClaimed(StoredFact):
    """Version 1 of a claim stream whose id derives from the source boundary: the store lets
    exactly one writer create it.

    ``boundary`` is the claimed :class:`SourceBoundary` (stored as its camelCase object).
    ``start_event_id`` is the id the claimer planned for the target's start fact.
    ``provider_projection_version`` and ``target_run_header`` (the target's header as claimed)
    were added later: rows written before them lack the keys and read as version 1 and "no
    recorded header" (the only projection version that was ever written)."""

    TOPIC = "maka_es.claim.claimed.v1"

    claim_id: str
    boundary: SourceBoundary
    target: dict[str, JsonValue]
    start_event_id: str
    claimed_at: EpochMs
    provider_projection_version: int = 1
    target_run_header: dict[str, JsonValue] | None = None


StartKind = Literal["runtime_admission", "claim_repair"]


class ContinuationStartRecorded(StoredFact):
    """Version 2 of a claim stream: which start fact began the claimed target, and which writer
    committed it (``runtime_admission``: the executor; ``claim_repair``: startup recovery).
    Saved in the same transaction as the start fact. The claim, not the start's
    ``provenance`` mirror, is the authority on the kind; as version 2 of the claim's stream it
    can be recorded once."""

    TOPIC = "maka_es.claim.start_recorded.v1"

    claim_id: str
    start_event_id: str
    start_kind: StartKind


# --- trace stream (ADR 0043) -----------------------------------------------------------------


class TraceContextRecorded(StoredFact):
    """The W3C ``traceparent`` of the span a run was started in: version 1 of the run's trace
    stream (one per run, first writer wins), outside the RuntimeEvent ledger and the run
    header's wire shape, so recovery and continuation spans after a crash can link to the
    interrupted run's trace. Only the ids and flags of the pattern fit; never ``tracestate``
    (vendors' free text)."""

    TOPIC = "maka_es.trace.context_recorded.v1"

    run_id: str
    #: ``maka_es.telemetry.TRACEPARENT_PATTERN``, spelled here: a model imports no service
    traceparent: str = Field(pattern=r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
    recorded_at: EpochMs


FACT_TYPES: dict[str, type[StoredFact]] = {
    cls.TOPIC: cls
    for cls in (
        SessionOpened,
        RunRegistered,
        InvocationBound,
        RunCreated,
        RuntimeEventRecorded,
        RunHeaderUpdated,
        ToolMetadataRecorded,
        OperationAttested,
        RunForked,
        RunSealed,
        RunOwnerTaken,
        HostLeaseRenewed,
        ContinuationClaimed,
        ContinuationStartRecorded,
        TraceContextRecorded,
    )
}
