"""Pydantic mapper and transcoder for eventsourcing.

Why not eventsourcing's default mapper: it stores ``vars(event)`` with class-path topics and a
transcoder that turns tuples into lists. Our facts are pydantic models with explicit, stable
topics (see ``maka_es.ledger.facts``); decoding goes through ``model_validate`` so a stored row
that no longer matches its model fails loudly instead of producing a half-valid object.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder
from pydantic import ValidationError

from maka_es.errors import NonStrictJsonError, StoreCorruptionError
from maka_es.ledger.facts import FACT_TYPES, StoredFact


class JsonTranscoder(Transcoder):
    """Compact UTF-8 JSON; strict (NaN/Infinity refused both ways)."""

    def encode(self, obj: Any) -> bytes:
        """Strict JSON bytes, or ``non_strict_json`` (NaN, a lone surrogate, a non-JSON type):
        a fact that cannot be stored exactly is refused before anything is written."""
        try:
            return json.dumps(
                obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False
            ).encode("utf-8")
        except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
            raise NonStrictJsonError(
                f"a stored fact is not strict JSON: {type(exc).__name__}: {str(exc)!a}"
            ) from None

    def decode(self, data: bytes) -> Any:
        def refuse(constant: str) -> Any:
            raise ValueError(f"non-strict JSON constant {constant}")

        return json.loads(data.decode("utf-8"), parse_constant=refuse)


class FactMapper(Mapper[UUID]):
    """Maps :class:`StoredFact` models to stored events by their explicit ``TOPIC``."""

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        if not isinstance(domain_event, StoredFact):
            raise TypeError(f"not a maka_es fact: {type(domain_event).__name__}")
        state = self.transcoder.encode(domain_event.state())
        if self.compressor:
            state = self.compressor.compress(state)
        if self.cipher:
            state = self.cipher.encrypt(state)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=type(domain_event).TOPIC,
            state=state,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[UUID]:
        fact_type = FACT_TYPES.get(stored_event.topic)
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
        except (ValueError, ValidationError) as exc:
            raise StoreCorruptionError(
                f"stored fact {stored_event.topic} v{stored_event.originator_version} of "
                f"{stored_event.originator_id} cannot be decoded: {exc}"
            ) from exc
