"""The host inspector of a local agent host: the workspace marker, a background registry, tools.

Why an adapter: the continuation planner depends on the :class:`HostInspector` protocol
(docs/reference/continuation.md#host-facts); this implementation reads the facts from the file
system (the ``.maka-workspace.json`` marker, created on first use) and from this process's own
registries, at every inspection, and raises a typed ``WorkspaceIdentityError`` instead of
guessing a path-based identity.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from maka_es.adapters.workspace_marker import resolve_workspace_identity
from maka_es.continuation.host import BackgroundOperationRegistry, CheckpointReader, HostObservation
from maka_es.tooljournal.runtime import ToolRuntime

__all__ = ["LocalHostInspector"]


class LocalHostInspector:
    """Host facts from this process's authoritative state, read at every :meth:`inspect`.

    * identity and path from the workspace marker (created on first use,
      docs/reference/continuation.md#workspace-identity);
    * background settlement from ``background`` (no registry: nothing runs in background);
    * the tool catalog from ``tool_names`` - a callable is called on every inspection (live
      catalog); a plain iterable is snapshotted once at construction;
    * the optional checkpoint fact from ``checkpoint(session_id)``.
    """

    def __init__(
        self,
        tool_names: Callable[[], Iterable[str]] | Iterable[str],
        background: BackgroundOperationRegistry | None = None,
        checkpoint: CheckpointReader | None = None,
        uuid_factory: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        if isinstance(tool_names, str):
            raise TypeError("tool_names must be tool names or a callable, not one string")
        if callable(tool_names):
            self._tool_names: Callable[[], Iterable[str]] = tool_names
        else:
            fixed = tuple(tool_names)
            self._tool_names = lambda: fixed
        self._background = background
        self._checkpoint = checkpoint
        self._uuid_factory = uuid_factory

    @classmethod
    def from_tool_runtime(
        cls,
        runtime: ToolRuntime,
        background: BackgroundOperationRegistry | None = None,
        checkpoint: CheckpointReader | None = None,
        uuid_factory: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> LocalHostInspector:
        """Inspector whose catalog is the runtime's registered tools at inspection time."""
        return cls(
            lambda: tuple(runtime.tools),
            background=background,
            checkpoint=checkpoint,
            uuid_factory=uuid_factory,
        )

    def inspect(self, session_id: str, cwd: str | Path) -> HostObservation:
        """Current facts for ``session_id`` running in ``cwd``.

        Raises the marker's typed ``WorkspaceIdentityError`` when the workspace identity cannot
        be established; a host never substitutes a path-based identity.
        """
        workspace = resolve_workspace_identity(cwd, uuid_factory=self._uuid_factory)
        settled = True if self._background is None else self._background.settled_for(session_id)
        checkpoint = None if self._checkpoint is None else self._checkpoint(session_id)
        names = self._tool_names()
        if isinstance(names, str):
            raise TypeError("tool_names must yield tool names, not one string")
        return HostObservation(
            workspace_identity=workspace.identity,
            workspace_path=workspace.path,
            background_operations_settled=settled,
            available_tool_names=tuple(names),
            workspace_checkpoint=checkpoint,
        )
