"""Stream ids: the uuid5 of a typed name, the same for every process and machine.

Why derived: "the stream of run r1" and "the claim on invocation i1" must be the same row for
every process and every machine, so that the store's ``(originator_id, originator_version)``
uniqueness is the arbiter between concurrent writers. Why checked first: the name is hashed as
UTF-8, so an id that is not UTF-8 text must be refused before any read or write derives it.
"""

from __future__ import annotations

import uuid
from functools import lru_cache

from maka_es.errors import InvalidRuntimeEventError
from maka_es.wire.codec import has_lone_surrogate

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
    name = checked_text(session_id, "sessionId")
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/session/{name}")


def invocation_stream_id(invocation_id: str) -> uuid.UUID:
    name = checked_text(invocation_id, "invocationId")
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/invocation/{name}")


def claim_stream_id(claim_id: str) -> uuid.UUID:
    name = checked_text(claim_id, "claimId")
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/claim/{name}")


def fork_stream_id(claim_id: str) -> uuid.UUID:
    name = checked_text(claim_id, "claimId")
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/fork/{name}")


def host_stream_id(host_id: str) -> uuid.UUID:
    name = checked_text(host_id, "hostId")
    return uuid.uuid5(STREAM_NAMESPACE, f"maka_es/host/{name}")
