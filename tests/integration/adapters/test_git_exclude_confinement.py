"""The workspace marker's Git exclusion never writes outside the repository through a link.

Why: the exclude rule is appended to ``<git dir>/info/exclude``. A symlinked ``.git`` or
``.git/info``, or an ``exclude`` that is a hard link to another file, would let that append land
in a file anywhere the process may write. Each is refused with ``workspace_io_failed`` before a
byte is written and before a marker is published; the outside tree keeps its bytes and mtimes
(``maka_es.testing.probes``), and nothing new appears in it (ADR 0013).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maka_es.adapters.workspace import WORKSPACE_MARKER_FILE, resolve_workspace_identity
from maka_es.errors import WorkspaceIdentityError
from maka_es.testing.probes import Outside, make_outside
from tests.integration.adapters.test_workspace_marker import make_git_dir

OUTSIDE_RULES = b"# the outside repository's own rules\n"


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Outside:
    """A separate tree with a complete repository (``repo.git``, its ``info/exclude`` holding
    one rule) and a bare ``info`` directory that has no ``exclude`` yet."""
    outside = make_outside(tmp_path_factory.mktemp("elsewhere") / "outside")
    git_dir = make_git_dir(outside.path / "repo.git", info=True)
    (git_dir / "info" / "exclude").write_bytes(OUTSIDE_RULES)
    (outside.path / "empty-info").mkdir()
    outside.pin()
    return outside


def _refused(workspace: Path, outside: Outside, *, marker: bytes | None = None) -> None:
    before = outside.snapshot()
    with pytest.raises(WorkspaceIdentityError) as info:
        resolve_workspace_identity(workspace)
    assert info.value.code == "workspace_io_failed", info.value
    assert outside.snapshot() == before  # no byte appended, no exclude or info created there
    found = workspace / WORKSPACE_MARKER_FILE
    assert (found.read_bytes() if found.exists() else None) == marker


def _existing_marker(workspace: Path, existing: bool) -> bytes | None:
    if not existing:
        return None
    data = b'{"schemaVersion":1,"workspaceId":"0f8fad5b-d9cb-469f-a165-70867728950e"}\n'
    (workspace / WORKSPACE_MARKER_FILE).write_bytes(data)
    return data


@pytest.mark.parametrize("existing", [False, True], ids=["new-marker", "existing-marker"])
@pytest.mark.parametrize("target", ["empty-info", "repo.git/info"])
def test_a_symlinked_git_info_is_refused(
    tmp_path: Path, outside: Outside, target: str, existing: bool
) -> None:
    workspace = tmp_path / "ws"
    git_dir = make_git_dir(workspace / ".git")
    (git_dir / "info").symlink_to(outside.path / target, target_is_directory=True)
    _refused(workspace, outside, marker=_existing_marker(workspace, existing))


@pytest.mark.parametrize("existing", [False, True], ids=["new-marker", "existing-marker"])
def test_a_symlinked_git_directory_is_refused(
    tmp_path: Path, outside: Outside, existing: bool
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".git").symlink_to(outside.path / "repo.git", target_is_directory=True)
    _refused(workspace, outside, marker=_existing_marker(workspace, existing))


def test_a_hard_linked_exclude_is_refused(tmp_path: Path, outside: Outside) -> None:
    workspace = tmp_path / "ws"
    git_dir = make_git_dir(workspace / ".git", info=True)
    os.link(outside.path / "repo.git" / "info" / "exclude", git_dir / "info" / "exclude")
    _refused(workspace, outside)


def test_a_linked_worktree_whose_common_info_is_a_symlink_is_refused(
    tmp_path: Path, outside: Outside
) -> None:
    """The ``gitdir:`` pointer is followed (Git's own answer); below the common dir nothing is."""
    main_git = make_git_dir(tmp_path / "main" / ".git")
    (main_git / "info").symlink_to(outside.path / "empty-info", target_is_directory=True)
    worktree_git = main_git / "worktrees" / "x"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/linked\n")
    (worktree_git / "commondir").write_text("../..\n")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {worktree_git}\n")
    _refused(linked, outside)


def test_a_plain_repository_still_gets_its_rule_in_a_new_info(tmp_path: Path) -> None:
    """The confined walk creates a missing ``info`` inside the real git dir, as before."""
    git_dir = make_git_dir(tmp_path / ".git")
    resolve_workspace_identity(tmp_path)
    assert (git_dir / "info" / "exclude").read_bytes() == f"{WORKSPACE_MARKER_FILE}\n".encode()
    assert (git_dir / "info" / "exclude").stat().st_nlink == 1
