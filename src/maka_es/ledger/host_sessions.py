"""Sessions and runs with less ceremony for a host (docs/reference/ledger.md#run-header).

Why a service over :class:`~maka_es.ledger.service.Ledger`: a host that follows the README
should neither spell a whole header per run nor learn only at continuation time
(``workspace_identity_missing``) that its sessions carry no workspace identity. This service
fills both in from what the application was configured with: the :class:`HostConfig`, a
:class:`WorkspaceResolver` port (the marker adapter in production, so this module does no
I/O), the application's clock and id factory. The Ledger's own commands stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from maka_es.errors import InvalidRunHeaderError, InvalidRuntimeEventError
from maka_es.ledger.model.facts import checked_session_args
from maka_es.ledger.model.host_config import HostConfig, header_for_run
from maka_es.ledger.service import Ledger, SessionInfo
from maka_es.wire.run_header import RunHeader

#: The header fields ``start_run`` fills from the clock: its retry cannot repeat them, so an
#: exact retry of ``start_run`` is the same session, ids and config (``is_exact_create_retry``).
CLOCK_FIELDS = frozenset({"createdAt", "updatedAt"})

__all__ = ["HostSessions", "WorkspaceResolver"]


class WorkspaceResolver(Protocol):
    """The workspace identity of ``cwd`` (``workspace:v1:<uuid>``), the same one at every call
    for the same workspace; raises a typed ``WorkspaceIdentityError`` when none can be
    established (docs/reference/continuation.md#workspace-identity)."""

    def __call__(self, cwd: str) -> str: ...


class HostSessions:
    """``open_session`` with the identity resolved, ``start_run`` from the host config."""

    def __init__(
        self,
        ledger: Ledger,
        config: HostConfig | None,
        resolver: WorkspaceResolver | None,
        new_id: Callable[[], str],
        now_ms: Callable[[], int],
    ) -> None:
        self._ledger = ledger
        self.config = config
        self.resolver = resolver
        self._new_id = new_id
        self._now_ms = now_ms

    def open_session(
        self, session_id: str, cwd: str | None = None, workspace_identity: str | None = None
    ) -> SessionInfo:
        """Open (or reopen, idempotently) a session. ``cwd`` defaults to the host config's;
        without an explicit identity the resolver's identity of ``cwd`` is recorded - the same
        marker is read at every start, so repeating the call returns the same session. A
        resolver failure, and an argument that is not UTF-8 text (``invalid_runtime_event``),
        raise their typed error before anything is written."""
        chosen_cwd = cwd if cwd is not None else (self.config.cwd if self.config else None)
        if chosen_cwd is None:
            raise InvalidRuntimeEventError(
                "open_session needs a cwd (no host config with a cwd)",
                field="cwd",
                detail={"reason": "cwd_missing"},
            )
        # Checked before the resolver, which may publish a workspace marker in ``cwd``.
        checked_session_args(session_id, chosen_cwd, workspace_identity)
        if workspace_identity is None and self.resolver is not None:
            workspace_identity = self.resolver(chosen_cwd)
        return self._ledger.open_session(session_id, chosen_cwd, workspace_identity)

    def start_run(
        self,
        session_id: str,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        config: HostConfig | None = None,
    ) -> RunHeader:
        """Create a run in ``session_id`` from the host config (or ``config``); the ids default
        to fresh ones from the application's id factory, the timestamps to its clock. Without
        any config there are no header fields to fill: ``invalid_run_header``, nothing written.
        A retry with the same ids and config (after an unknown outcome, or a restart) answers
        the run it created: the timestamps are this call's own readings, not compared."""
        header = self.header_for(
            session_id, run_id=run_id, invocation_id=invocation_id, turn_id=turn_id, config=config
        )
        return self._ledger.create_run(header, clock_fields=CLOCK_FIELDS)

    def header_for(
        self,
        session_id: str,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        config: HostConfig | None = None,
    ) -> RunHeader:
        """The header ``start_run`` would create (nothing written): what a turn creates
        together with its user message (``RunStarts.create_run_with_events``)."""
        chosen = config if config is not None else self.config
        if chosen is None:
            raise InvalidRunHeaderError(
                "start_run needs a HostConfig (host_config= on the application, or config=)",
                field="backendKind",
                detail={"sessionId": session_id},
            )
        session = self._ledger.get_session(session_id)
        return header_for_run(
            chosen,
            session_id=session_id,
            session_cwd=session.cwd,
            workspace_identity=session.workspace_identity,
            run_id=run_id if run_id is not None else self._new_id(),
            invocation_id=invocation_id if invocation_id is not None else self._new_id(),
            turn_id=turn_id if turn_id is not None else self._new_id(),
            now_ms=self._now_ms(),
        )
