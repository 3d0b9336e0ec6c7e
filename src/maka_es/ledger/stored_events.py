"""Reading a committed RuntimeEvent back from its stored fact, trusting what was verified.

Why a trusted path: every event was validated strictly and canonicalised at the boundary
before it was committed (docs/reference/ledger.md#write-rules). Re-running the strict JSON
checks and the Python-hooked JSON decoder on every reload made a 100k-event run cost seconds to
reopen. Since ADR 0025 each append stores ``payload_digest`` with the payload; a row whose bytes
still hash to it is the very text that passed the boundary, so it is parsed once by pydantic's
own JSON parser and its strict-JSON after-validator is skipped. The field shapes (types,
literals, ids, digests) are still validated.

Why never trusted over the ledger: a row without a digest (written before ADR 0025, or by an
older writer) and a row whose bytes no longer match their digest take the strict path, exactly
as every row did before: bytes that are not a valid event raise the same typed error, and bytes
that are a valid event are read as before (the continuation's prefix digests, which are
computed from the bytes, then see the change as before).
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from maka_es.ledger.facts import RuntimeEventRecorded, payload_digest_of
from maka_es.wire.base import TRUSTED_STORED, loads_js
from maka_es.wire.events import RuntimeEvent

__all__ = ["decode_recorded_event", "read_recorded_event"]

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
    if matches:
        trusted = _decode_trusted(fact.payload)
        if trusted is not None:
            return trusted, True
    return RuntimeEvent.model_validate_json(fact.payload), False  # exactly as before ADR 0025


def _decode_trusted(payload: str) -> RuntimeEvent | None:
    """Parse verified canonical bytes once; ``None`` sends them to the strict path."""
    try:
        if _LONG_NUMBER.search(payload) is not None:
            return RuntimeEvent.model_validate(loads_js(payload), context=TRUSTED_STORED)
        return RuntimeEvent.__pydantic_validator__.validate_json(payload, context=TRUSTED_STORED)  # type: ignore[no-any-return]
    except (ValidationError, ValueError):
        return None
