"""Host safety facts (docs/reference/continuation.md#host-facts; runtime-continuation.test.ts item
1: "local inspector returns current authoritative facts").

The inspector must read the facts *now*: the workspace marker on disk, the operations still
registered, the tools currently available. These tests change each fact between inspections
and check the observation follows.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from maka_es.adapters.workspace import WORKSPACE_MARKER_FILE, LocalHostInspector
from maka_es.app import RuntimeApplication
from maka_es.continuation.host import (
    BackgroundOperationRegistry,
    HostInspector,
    HostObservation,
    PendingOperation,
    StaticHostInspector,
    WorkspaceCheckpoint,
)
from maka_es.errors import WorkspaceIdentityError
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime

FIXED = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")


class NoArgs(BaseModel):
    pass


def _noop(args: NoArgs, context: ToolContext) -> Any:
    return None


def tool(name: str) -> Tool[NoArgs]:
    return Tool(name, NoArgs, _noop)


# --- HostObservation -------------------------------------------------------------------------


def test_observation_dump_has_exactly_the_wire_keys() -> None:
    observation = HostObservation(
        workspace_identity=f"workspace:v1:{FIXED}",
        workspace_path="/w",
        background_operations_settled=True,
        available_tool_names=("Write", "Read", "Write", "Bash"),
        workspace_checkpoint=WorkspaceCheckpoint(
            ref="refs/maka/cp", restored=True, runtime_event_high_water=3
        ),
    )

    assert observation.model_dump(mode="json", by_alias=True) == {
        "workspaceIdentity": f"workspace:v1:{FIXED}",
        "workspacePath": "/w",
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Bash", "Read", "Write"],
        "workspaceCheckpoint": {
            "ref": "refs/maka/cp",
            "restored": True,
            "runtimeEventHighWater": 3,
        },
    }


def test_observation_absent_facts_are_null_and_round_trip_by_alias() -> None:
    wire: dict[str, Any] = {
        "workspaceIdentity": "workspace:v1:x",
        "workspacePath": None,
        "backgroundOperationsSettled": False,
        "availableToolNames": [],
        "workspaceCheckpoint": {"ref": None, "restored": False, "runtimeEventHighWater": 0},
    }
    observation = HostObservation.model_validate(wire)

    assert observation.model_dump(mode="json", by_alias=True) == wire
    minimal = HostObservation(
        workspace_identity="w", background_operations_settled=True, available_tool_names=()
    )
    assert minimal.model_dump(mode="json", by_alias=True) == {
        "workspaceIdentity": "w",
        "workspacePath": None,
        "backgroundOperationsSettled": True,
        "availableToolNames": [],
        "workspaceCheckpoint": None,
    }


def test_tool_names_sort_in_javascript_order() -> None:
    # U+FF5E sorts before U+1F600 by code point but after it by UTF-16 code unit.
    observation = HostObservation(
        workspace_identity="w",
        background_operations_settled=True,
        available_tool_names=("\U0001f600", "\uff5e", "b", "B", "b"),
    )
    assert observation.available_tool_names == ("B", "b", "\U0001f600", "\uff5e")


@pytest.mark.parametrize(
    "overrides",
    [
        {"workspaceIdentity": ""},
        {"backgroundOperationsSettled": "yes"},
        {"availableToolNames": ["Read", 1]},
        {"extra": 1},
        {"workspaceCheckpoint": {"restored": True, "runtimeEventHighWater": -1}},
        {"workspaceCheckpoint": {"restored": 1, "runtimeEventHighWater": 0}},
        {"workspaceCheckpoint": {"restored": True}},
    ],
)
def test_observation_refuses_malformed_facts(overrides: dict[str, Any]) -> None:
    wire: dict[str, Any] = {
        "workspaceIdentity": "w",
        "backgroundOperationsSettled": True,
        "availableToolNames": [],
        **overrides,
    }
    with pytest.raises(ValidationError):
        HostObservation.model_validate(wire)


def test_observation_is_frozen() -> None:
    observation = HostObservation(
        workspace_identity="w", background_operations_settled=True, available_tool_names=()
    )
    with pytest.raises(ValidationError):
        observation.workspace_identity = "other"  # type: ignore[misc]


# --- BackgroundOperationRegistry -------------------------------------------------------------


def test_registry_tracks_pending_operations() -> None:
    registry = BackgroundOperationRegistry()
    assert registry.settled
    assert registry.pending() == ()

    shell = registry.start("shell", "sh-1")
    child = registry.start("child_run", "run-9", session_id="s1")

    assert registry.pending() == (shell, child)
    assert child == PendingOperation("child_run", "run-9", "s1")
    assert not registry.settled
    assert registry.finish("sh-1") is True
    assert registry.finish("sh-1") is False
    assert registry.pending() == (child,)
    assert registry.finish("run-9")
    assert registry.settled


def test_registry_refuses_a_second_live_start_of_one_id() -> None:
    registry = BackgroundOperationRegistry()
    registry.start("shell", "op")
    with pytest.raises(ValueError, match="already registered"):
        registry.start("background", "op")
    registry.finish("op")
    registry.start("background", "op")  # a finished id may be reused
    assert registry.pending() == (PendingOperation("background", "op"),)


def test_track_unregisters_even_when_the_block_raises() -> None:
    registry = BackgroundOperationRegistry()
    with registry.track("shell", "sh-1") as operation:
        assert registry.pending() == (operation,)
    assert registry.settled

    with pytest.raises(RuntimeError), registry.track("shell", "sh-2"):
        raise RuntimeError("shell crashed")
    assert registry.settled


def test_session_scoped_operations_only_block_their_session() -> None:
    registry = BackgroundOperationRegistry()
    registry.start("child_run", "c1", session_id="s1")

    assert not registry.settled_for("s1")
    assert registry.settled_for("s2")
    assert registry.pending("s2") == ()

    registry.start("background", "global")  # host-wide: blocks every session
    assert not registry.settled_for("s2")
    assert [op.op_id for op in registry.pending("s1")] == ["c1", "global"]


def test_registry_is_thread_safe() -> None:
    registry = BackgroundOperationRegistry()
    workers = 8
    per_worker = 200
    barrier = threading.Barrier(workers)

    def churn(worker: int) -> None:
        barrier.wait()
        for index in range(per_worker):
            op_id = f"{worker}-{index}"
            registry.start("shell", op_id)
            assert registry.finish(op_id)

    threads = [threading.Thread(target=churn, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert registry.settled


# --- LocalHostInspector ----------------------------------------------------------------------


def test_local_inspector_returns_current_authoritative_facts(tmp_path: Path) -> None:
    registry = BackgroundOperationRegistry()
    catalog = ["Write", "Read", "Write"]
    checkpoints: dict[str, WorkspaceCheckpoint] = {}
    inspector = LocalHostInspector(
        lambda: catalog,
        background=registry,
        checkpoint=checkpoints.get,
        uuid_factory=lambda: FIXED,
    )
    assert isinstance(inspector, HostInspector)

    first = inspector.inspect("s1", str(tmp_path))
    assert first.model_dump(mode="json", by_alias=True) == {
        "workspaceIdentity": f"workspace:v1:{FIXED}",
        "workspacePath": os.path.realpath(tmp_path),
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Read", "Write"],
        "workspaceCheckpoint": None,
    }
    assert (tmp_path / WORKSPACE_MARKER_FILE).exists()

    # Every fact changes; the next inspection reports the new state.
    registry.start("shell", "sh-1", session_id="s1")
    catalog.append("Bash")
    catalog.remove("Read")
    checkpoints["s1"] = WorkspaceCheckpoint(
        ref="refs/maka/cp", restored=True, runtime_event_high_water=7
    )
    second = inspector.inspect("s1", str(tmp_path))

    assert second.workspace_identity == first.workspace_identity
    assert second.background_operations_settled is False
    assert second.available_tool_names == ("Bash", "Write")
    assert second.workspace_checkpoint == checkpoints["s1"]
    # Another session is not blocked by s1's shell and has no checkpoint.
    other = inspector.inspect("s2", str(tmp_path))
    assert other.background_operations_settled is True
    assert other.workspace_checkpoint is None

    registry.finish("sh-1")
    assert inspector.inspect("s1", str(tmp_path)).background_operations_settled is True


def test_local_inspector_identity_follows_the_marker_not_the_path(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    inspector = LocalHostInspector(["Read"])
    before = inspector.inspect("s1", str(source))
    moved = tmp_path / "moved"
    source.rename(moved)

    after = inspector.inspect("s1", str(moved))

    assert after.workspace_identity == before.workspace_identity
    assert after.workspace_path == os.path.realpath(moved) != before.workspace_path


def test_local_inspector_snapshots_a_plain_iterable_catalog(tmp_path: Path) -> None:
    names = iter(["b", "a", "b"])
    inspector = LocalHostInspector(names)

    assert inspector.inspect("s1", str(tmp_path)).available_tool_names == ("a", "b")
    assert inspector.inspect("s1", str(tmp_path)).available_tool_names == ("a", "b")


def test_local_inspector_refuses_a_single_string_catalog(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        LocalHostInspector("Read")
    with pytest.raises(TypeError):
        LocalHostInspector(lambda: "Read").inspect("s1", str(tmp_path))


@pytest.mark.parametrize(
    ("make_cwd", "code"),
    [
        (lambda root: root / "missing", "workspace_not_found"),
        (lambda root: root / "file", "invalid_workspace"),
        (lambda root: root / "bad", "invalid_workspace_marker"),
    ],
)
def test_local_inspector_raises_typed_workspace_errors(
    tmp_path: Path, make_cwd: Any, code: str
) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / WORKSPACE_MARKER_FILE).write_text("{}")
    inspector = LocalHostInspector(["Read"])

    with pytest.raises(WorkspaceIdentityError) as caught:
        inspector.inspect("s1", str(make_cwd(tmp_path)))
    assert caught.value.code == code


def test_from_tool_runtime_reads_the_registered_tools(
    memory_app: RuntimeApplication, tmp_path: Path
) -> None:
    runtime = ToolRuntime(memory_app.tool_journal, [tool("Write"), tool("Read")])
    inspector = LocalHostInspector.from_tool_runtime(runtime, uuid_factory=lambda: FIXED)

    assert inspector.inspect("s1", str(tmp_path)).available_tool_names == ("Read", "Write")
    runtime.tools["Bash"] = tool("Bash")
    observation = inspector.inspect("s1", str(tmp_path))
    assert observation.available_tool_names == ("Bash", "Read", "Write")
    assert observation.workspace_identity == f"workspace:v1:{FIXED}"


# --- StaticHostInspector ---------------------------------------------------------------------


def test_static_inspector_returns_its_observation() -> None:
    observation = HostObservation(
        workspace_identity="workspace-1",
        background_operations_settled=True,
        available_tool_names=("Write",),
    )
    inspector: HostInspector = StaticHostInspector(observation)

    assert inspector.inspect("any", "/nowhere") is observation
    assert isinstance(inspector, HostInspector)


def test_checkpoint_fact_is_the_planner_type() -> None:
    """An observation's checkpoint is handed to the planner's facts without conversion."""
    from maka_es.continuation.model import gates

    assert WorkspaceCheckpoint is gates.WorkspaceCheckpoint
