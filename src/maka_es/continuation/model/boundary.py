"""Boundary digests: prefix digest, segment, manifest and provider-replay digest.

The framing and the test vectors: docs/reference/wire.md#boundary-digests and
docs/reference/wire.md#vectors.

Why a module of its own: these are the identities a continuation claim is bound to. They must
be byte-identical to the reference runtime's, so each is a framed SHA-256 over canonical JSON
(see ``codec``), and each input is validated before hashing (a forged or gapped prefix is an
error, not a different digest).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import Final

from maka_es.wire.codec import (
    MAX_SAFE_INTEGER,
    CodecInputError,
    JsonValue,
    as_wire,
    canonical_json,
    is_sha256_digest,
    sha256_digest,
)

PROVIDER_REPLAY_PROJECTION_VERSION: Final = 1

_PREFIX_DOMAIN: Final = b"maka.runtime-prefix.v1"
_MANIFEST_DOMAIN: Final = b"maka.runtime-boundary-manifest.v1"
_IDENTITY_KEYS: Final = ("sessionId", "invocationId", "runId", "turnId")
_SEGMENT_KEYS: Final = frozenset({"protocol", "identity", "position", "prefixDigest"})
_POSITION_KEYS: Final = frozenset({"lastEventSeq", "eventCount", "lastEventId"})


# --------------------------------------------------------------------------------------------
# Immutable prefix / boundary digests
# --------------------------------------------------------------------------------------------


def _u64be(value: int) -> bytes:
    if value < 0 or value > MAX_SAFE_INTEGER:
        raise CodecInputError("boundary length is not a safe integer", code="prefix_invalid")
    return struct.pack(">Q", value)


def _length_prefixed(data: bytes) -> bytes:
    return _u64be(len(data)) + data


def _checked_identity(identity: object, code: str) -> dict[str, str]:
    if not isinstance(identity, Mapping) or set(identity) != set(_IDENTITY_KEYS):
        raise CodecInputError(
            "prefix identity must have exactly sessionId, invocationId, runId, turnId", code=code
        )
    checked: dict[str, str] = {}
    for key in _IDENTITY_KEYS:
        item = identity[key]
        if not isinstance(item, str) or not item:
            raise CodecInputError(f"prefix identity {key} must be a non-empty string", code=code)
        checked[key] = item
    return checked


def prefix_event_wire(event: Mapping[str, object]) -> Mapping[str, object]:
    """The event as it is hashed into ``maka.runtime-prefix.v1``.

    Why: the reference decoder reads a released Automation turn origin
    ``{"kind": "automation", "automationId": ...}`` as ``{"kind": "legacy_automation", ...}``,
    but prefix digests were frozen over the bytes released writers produced. So a text
    event whose ``content.origin.kind`` is ``legacy_automation`` is hashed with the origin
    written back as ``{"kind": "automation", "automationId": ...}``. Every other event (including
    one already carrying ``kind: "automation"``) is returned unchanged. Never mutates the input.
    """
    content = event.get("content")
    if not isinstance(content, Mapping) or content.get("kind") != "text":
        return event
    origin = content.get("origin")
    if not isinstance(origin, Mapping) or origin.get("kind") != "legacy_automation":
        return event
    released_origin = {"kind": "automation", "automationId": origin.get("automationId")}
    return {**event, "content": {**content, "origin": released_origin}}


def _checked_rows(
    identity: Mapping[str, str], rows: Sequence[tuple[int, object]]
) -> list[tuple[int, Mapping[str, object]]]:
    checked: list[tuple[int, Mapping[str, object]]] = []
    for index, row in enumerate(rows):
        seq, raw_event = row
        expected = index + 1
        if type(seq) is not int or seq != expected:
            raise CodecInputError(
                f"immutable RuntimeEvent event_seq gap: expected {expected}, received {seq!r}",
                code="prefix_invalid",
                detail={"expected": expected},
            )
        event = as_wire(raw_event)
        if not isinstance(event, Mapping):
            raise CodecInputError(
                f"prefix row {expected} is not a RuntimeEvent wire object", code="prefix_invalid"
            )
        event_id = event.get("id")
        if event.get("partial") is True:
            raise CodecInputError(
                f"immutable RuntimeEvent prefix contains partial snapshot {event_id}",
                code="prefix_invalid",
                detail={"eventId": event_id},
            )
        if any(event.get(key) != identity[key] for key in _IDENTITY_KEYS):
            raise CodecInputError(
                f"immutable RuntimeEvent identity mismatch for {event_id}",
                code="prefix_invalid",
                detail={"eventId": event_id},
            )
        checked.append((seq, event))
    return checked


def _digest_rows(identity: dict[str, str], rows: list[tuple[int, Mapping[str, object]]]) -> str:
    hasher = hashlib.sha256()
    hasher.update(_length_prefixed(_PREFIX_DOMAIN))
    hasher.update(_length_prefixed(canonical_json(identity).encode("utf-8")))
    for seq, event in rows:
        hasher.update(_u64be(seq))
        hasher.update(_length_prefixed(canonical_json(prefix_event_wire(event)).encode("utf-8")))
    return "sha256:" + hasher.hexdigest()


def prefix_digest(
    identity: Mapping[str, str], rows: Sequence[tuple[int, Mapping[str, object]]]
) -> str:
    """``maka.runtime-prefix.v1`` digest of an immutable run prefix.

    SHA-256 over ``u64be(len)‖domain``, ``u64be(len)‖stableJSON(identity)``, then per row
    ``u64be(eventSeq)‖u64be(len)‖stable event JSON`` (see :func:`prefix_event_wire`). Rows are
    ``(eventSeq, wire event)`` and must be the contiguous sequence ``1..n``, non-partial and of
    exactly ``identity``; events must already be in canonical wire form (the RuntimeEvent
    decoder's job). Raises :class:`CodecInputError` (``prefix_invalid``) otherwise.
    """
    checked_identity = _checked_identity(identity, "prefix_invalid")
    return _digest_rows(checked_identity, _checked_rows(checked_identity, rows))


def build_segment(
    identity: Mapping[str, str], rows: Sequence[tuple[int, Mapping[str, object]]]
) -> dict[str, JsonValue]:
    """``runtime_prefix_segment_v1`` for a non-empty immutable prefix (what a boundary cursor
    and its manifest digest are built from)."""
    checked_identity = _checked_identity(identity, "prefix_invalid")
    checked_rows = _checked_rows(checked_identity, rows)
    if not checked_rows:
        raise CodecInputError("immutable RuntimeEvent prefix is empty", code="prefix_invalid")
    last_seq, last_event = checked_rows[-1]
    last_id = last_event.get("id")
    if not isinstance(last_id, str) or not last_id:
        raise CodecInputError("last prefix event has no id", code="prefix_invalid")
    return {
        "protocol": "runtime_prefix_segment_v1",
        "identity": dict(checked_identity),
        "position": {
            "lastEventSeq": last_seq,
            "eventCount": len(checked_rows),
            "lastEventId": last_id,
        },
        "prefixDigest": _digest_rows(checked_identity, checked_rows),
    }


def validate_segment(segment: object) -> dict[str, JsonValue]:
    """Decode a ``runtime_prefix_segment_v1`` with its exact key sets; returns a plain copy."""
    if (
        not isinstance(segment, Mapping)
        or set(segment) != _SEGMENT_KEYS
        or segment.get("protocol") != "runtime_prefix_segment_v1"
    ):
        raise CodecInputError("invalid RuntimeEvent prefix segment", code="boundary_invalid")
    identity = _checked_identity(segment["identity"], "boundary_invalid")
    position = segment["position"]
    if (
        not isinstance(position, Mapping)
        or set(position) != _POSITION_KEYS
        or type(position["lastEventSeq"]) is not int
        or not 0 < position["lastEventSeq"] <= MAX_SAFE_INTEGER
        or type(position["eventCount"]) is not int
        or position["eventCount"] != position["lastEventSeq"]
        or not isinstance(position["lastEventId"], str)
        or not position["lastEventId"]
    ):
        raise CodecInputError("invalid RuntimeEvent prefix position", code="boundary_invalid")
    digest = segment["prefixDigest"]
    if not is_sha256_digest(digest):
        raise CodecInputError("invalid RuntimeEvent boundary digest", code="boundary_invalid")
    return {
        "protocol": "runtime_prefix_segment_v1",
        "identity": dict(identity),
        "position": {
            "lastEventSeq": position["lastEventSeq"],
            "eventCount": position["eventCount"],
            "lastEventId": position["lastEventId"],
        },
        "prefixDigest": digest,
    }


def manifest_digest(segments: Sequence[Mapping[str, object]]) -> str:
    """``maka.runtime-boundary-manifest.v1`` digest of ordered (oldest → source) segments.

    SHA-256 of ``u64be(len)‖domain‖u64be(len)‖stableJSON({protocol:
    'runtime_boundary_cursor_v1', segments})``. Segments must share one session and use
    distinct run, invocation and turn ids (``boundary_invalid`` otherwise).
    """
    if not segments:
        raise CodecInputError(
            "runtime boundary needs at least one segment", code="boundary_invalid"
        )
    decoded = [validate_segment(s) for s in segments]
    identities = [_checked_identity(s["identity"], "boundary_invalid") for s in decoded]
    session_id = identities[0]["sessionId"]
    seen: dict[str, set[str]] = {"runId": set(), "invocationId": set(), "turnId": set()}
    for ident in identities:
        if ident["sessionId"] != session_id:
            raise CodecInputError(
                "runtime boundary segments must belong to the same session", code="boundary_invalid"
            )
        for key in ("runId", "invocationId", "turnId"):
            if ident[key] in seen[key]:
                raise CodecInputError(
                    f"runtime boundary lineage contains a duplicate {key}", code="boundary_invalid"
                )
            seen[key].add(ident[key])
    body = canonical_json({"protocol": "runtime_boundary_cursor_v1", "segments": decoded})
    return sha256_digest(_length_prefixed(_MANIFEST_DOMAIN) + _length_prefixed(body.encode()))


def provider_replay_digest(
    items: Sequence[Mapping[str, object]],
    *,
    provider_projection_version: int = PROVIDER_REPLAY_PROJECTION_VERSION,
) -> str:
    """SHA-256 (no framing) of ``stableJSON({protocol: 'provider_replay_plan_v1',
    providerProjectionVersion, items})`` — binds a continuation to the exact provider history
    it will replay."""
    body = canonical_json(
        {
            "protocol": "provider_replay_plan_v1",
            "providerProjectionVersion": provider_projection_version,
            "items": list(items),
        }
    )
    return sha256_digest(body.encode("utf-8"))
