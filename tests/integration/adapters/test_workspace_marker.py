"""Workspace identity marker (docs/reference/continuation.md#workspace-identity; reference
workspace-identity.test.ts).

Every test uses real directories: the guarantees are about what lands on disk - the exact
marker bytes, that an existing marker is never rewritten, that a Git work tree stays clean and
that racing resolvers agree on one identity.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import tarfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from maka_es.adapters.workspace import (
    MAX_GIT_EXCLUDE_BYTES,
    MAX_WORKSPACE_MARKER_BYTES,
    WORKSPACE_IDENTITY_PREFIX,
    WORKSPACE_MARKER_FILE,
    WorkspaceIdentity,
    find_git_exclude_file,
    resolve_workspace_identity,
    serialize_workspace_marker,
)
from maka_es.errors import WorkspaceIdentityError

FIXED = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
OTHER = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git executable not installed")


def marker_bytes(workspace_id: str) -> bytes:
    return f'{{"schemaVersion":1,"workspaceId":"{workspace_id}"}}\n'.encode()


def expect_code(code: str, action: Callable[[], object]) -> WorkspaceIdentityError:
    with pytest.raises(WorkspaceIdentityError) as caught:
        action()
    assert caught.value.code == code
    return caught.value


def make_git_dir(git_dir: Path, *, info: bool = False) -> Path:
    """A minimal repository layout as Git's discovery recognises it (HEAD, objects, refs)."""
    (git_dir / "objects").mkdir(parents=True)
    (git_dir / "refs" / "heads").mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    if info:
        (git_dir / "info").mkdir()
    return git_dir


def exclude_rules(exclude: Path) -> list[str]:
    return [line for line in exclude.read_text().splitlines() if line == WORKSPACE_MARKER_FILE]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def git(*args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="Maka Test",
        GIT_AUTHOR_EMAIL="test@maka.invalid",
        GIT_COMMITTER_NAME="Maka Test",
        GIT_COMMITTER_EMAIL="test@maka.invalid",
    )
    assert GIT is not None
    done = subprocess.run(
        [GIT, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def git_status(cwd: Path) -> str:
    return git("status", "--porcelain=v1", "--untracked-files=all", cwd=cwd)


# --- creation and re-reading ---------------------------------------------------------------


def test_new_marker_has_the_exact_bytes_and_is_read_back(tmp_path: Path) -> None:
    created = resolve_workspace_identity(tmp_path, uuid_factory=lambda: FIXED)

    assert created == WorkspaceIdentity(
        identity=f"workspace:v1:{FIXED}",
        workspace_id=str(FIXED),
        path=os.path.realpath(tmp_path),
        created=True,
    )
    assert (tmp_path / WORKSPACE_MARKER_FILE).read_bytes() == marker_bytes(str(FIXED))
    assert serialize_workspace_marker(str(FIXED)) == marker_bytes(str(FIXED))
    assert leftovers(tmp_path) == []

    again = resolve_workspace_identity(str(tmp_path), uuid_factory=lambda: uuid.uuid4())
    assert again.identity == created.identity
    assert again.created is False
    assert (tmp_path / WORKSPACE_MARKER_FILE).read_bytes() == marker_bytes(str(FIXED))


def test_default_factory_writes_a_random_v4_marker(tmp_path: Path) -> None:
    first = resolve_workspace_identity(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    second = resolve_workspace_identity(other)

    assert first.identity.startswith(WORKSPACE_IDENTITY_PREFIX)
    assert uuid.UUID(first.workspace_id).version == 4
    assert first.identity != second.identity
    marker = (tmp_path / WORKSPACE_MARKER_FILE).read_bytes()
    assert marker == marker_bytes(first.workspace_id)
    assert len(marker) <= MAX_WORKSPACE_MARKER_BYTES


def test_path_is_the_realpath_of_a_symlinked_or_relative_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)

    via_link = resolve_workspace_identity(link, uuid_factory=lambda: FIXED)
    monkeypatch.chdir(tmp_path)
    via_relative = resolve_workspace_identity("real")

    assert via_link.path == via_relative.path == os.path.realpath(real)
    assert via_relative.identity == via_link.identity
    assert (real / WORKSPACE_MARKER_FILE).exists()
    assert not (link / WORKSPACE_MARKER_FILE).is_symlink()


def test_identity_survives_a_move(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    original = resolve_workspace_identity(source)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    source.rename(moved)

    resolved = resolve_workspace_identity(moved)

    assert resolved.identity == original.identity
    assert resolved.path == os.path.realpath(moved) != original.path
    assert resolved.created is False


def test_identity_survives_a_tar_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "file.txt").write_text("content\n")
    original = resolve_workspace_identity(source)
    before = (source / WORKSPACE_MARKER_FILE).read_bytes()
    archive = tmp_path / "workspace.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(source, arcname=".")
    imported = tmp_path / "imported"
    imported.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(imported, filter="data")

    adopted = resolve_workspace_identity(imported)

    assert adopted.identity == original.identity
    assert adopted.created is False
    assert (imported / WORKSPACE_MARKER_FILE).read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(f'{{"schemaVersion":1,"workspaceId":"{OTHER}"}}'.encode(), id="no-newline"),
        pytest.param(f'{{"workspaceId":"{OTHER}","schemaVersion":1}}\n'.encode(), id="key-order"),
        pytest.param(
            f'{{\n  "schemaVersion": 1,\n  "workspaceId": "{OTHER}"\n}}\r\n'.encode(), id="pretty"
        ),
        pytest.param(
            marker_bytes(OTHER).rstrip(b"\n")
            + b" " * (MAX_WORKSPACE_MARKER_BYTES - len(marker_bytes(OTHER)) + 1),
            id="exactly-4096-bytes",
        ),
    ],
)
def test_existing_marker_variants_are_accepted_verbatim(tmp_path: Path, content: bytes) -> None:
    marker = tmp_path / WORKSPACE_MARKER_FILE
    marker.write_bytes(content)

    resolved = resolve_workspace_identity(tmp_path, uuid_factory=lambda: FIXED)

    assert resolved.identity == f"workspace:v1:{OTHER}"
    assert resolved.created is False
    assert marker.read_bytes() == content  # authoritative: never normalised or rewritten


# --- malformed markers ---------------------------------------------------------------------


def _json(text: str) -> bytes:
    return text.encode()


MALFORMED: dict[str, bytes] = {
    "empty": b"",
    "bad-json": b'{"schemaVersion":1,',
    "not-object": _json(f'["{OTHER}"]'),
    "extra-key": _json(f'{{"schemaVersion":1,"workspaceId":"{OTHER}","path":"/x"}}\n'),
    "missing-key": _json('{"schemaVersion":1}\n'),
    "duplicate-key": _json(f'{{"schemaVersion":1,"workspaceId":"{OTHER}","schemaVersion":1}}'),
    "version-2": _json(f'{{"schemaVersion":2,"workspaceId":"{OTHER}"}}\n'),
    "version-string": _json(f'{{"schemaVersion":"1","workspaceId":"{OTHER}"}}\n'),
    "version-float": _json(f'{{"schemaVersion":1.0,"workspaceId":"{OTHER}"}}\n'),
    "version-bool": _json(f'{{"schemaVersion":true,"workspaceId":"{OTHER}"}}\n'),
    "version-nan": _json(f'{{"schemaVersion":NaN,"workspaceId":"{OTHER}"}}\n'),
    "uuid-uppercase": _json(f'{{"schemaVersion":1,"workspaceId":"{OTHER.upper()}"}}\n'),
    "uuid-version-0": _json(
        '{"schemaVersion":1,"workspaceId":"7c9e6679-7425-00de-944b-e07fc1f90ae7"}'
    ),
    "uuid-version-9": _json(
        '{"schemaVersion":1,"workspaceId":"7c9e6679-7425-90de-944b-e07fc1f90ae7"}'
    ),
    "uuid-nil": _json('{"schemaVersion":1,"workspaceId":"00000000-0000-0000-0000-000000000000"}'),
    "uuid-ncs-variant": _json(
        '{"schemaVersion":1,"workspaceId":"7c9e6679-7425-40de-744b-e07fc1f90ae7"}'
    ),
    "uuid-no-hyphens": _json(f'{{"schemaVersion":1,"workspaceId":"{OTHER.replace("-", "")}"}}'),
    "uuid-braces": _json(f'{{"schemaVersion":1,"workspaceId":"{{{OTHER}}}"}}'),
    "uuid-trailing-newline": _json(f'{{"schemaVersion":1,"workspaceId":"{OTHER}\\n"}}'),
    "uuid-number": _json('{"schemaVersion":1,"workspaceId":42}'),
    "bom": b"\xef\xbb\xbf" + marker_bytes(OTHER),
    "not-utf8": marker_bytes(OTHER)[:-3] + b'\xff"}',
    "too-big": marker_bytes(OTHER).rstrip(b"\n")
    + b" " * (MAX_WORKSPACE_MARKER_BYTES - len(marker_bytes(OTHER)) + 2),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_marker_is_refused_and_left_alone(tmp_path: Path, name: str) -> None:
    marker = tmp_path / WORKSPACE_MARKER_FILE
    marker.write_bytes(MALFORMED[name])

    error = expect_code("invalid_workspace_marker", lambda: resolve_workspace_identity(tmp_path))

    assert error.detail["path"] == os.path.join(os.path.realpath(tmp_path), WORKSPACE_MARKER_FILE)
    assert marker.read_bytes() == MALFORMED[name]
    assert leftovers(tmp_path) == []


def test_symlinked_marker_is_refused_even_if_its_target_is_valid(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_bytes(marker_bytes(OTHER))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / WORKSPACE_MARKER_FILE).symlink_to(target)

    expect_code("invalid_workspace_marker", lambda: resolve_workspace_identity(workspace))


def test_dangling_symlink_marker_is_refused_not_replaced(tmp_path: Path) -> None:
    link = tmp_path / WORKSPACE_MARKER_FILE
    link.symlink_to(tmp_path / "missing.json")

    expect_code("invalid_workspace_marker", lambda: resolve_workspace_identity(tmp_path))
    assert link.is_symlink()
    assert not (tmp_path / "missing.json").exists()


def test_directory_named_like_the_marker_is_refused(tmp_path: Path) -> None:
    (tmp_path / WORKSPACE_MARKER_FILE).mkdir()

    expect_code("invalid_workspace_marker", lambda: resolve_workspace_identity(tmp_path))


def test_fifo_named_like_the_marker_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / WORKSPACE_MARKER_FILE)

    expect_code("invalid_workspace_marker", lambda: resolve_workspace_identity(tmp_path))


def test_factory_producing_a_non_rfc_uuid_publishes_nothing(tmp_path: Path) -> None:
    expect_code(
        "invalid_workspace_marker",
        lambda: resolve_workspace_identity(tmp_path, uuid_factory=lambda: uuid.UUID(int=0)),
    )
    assert list(tmp_path.iterdir()) == []


# --- the workspace path ----------------------------------------------------------------------


def test_missing_workspace_is_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    error = expect_code("workspace_not_found", lambda: resolve_workspace_identity(missing))
    assert error.detail["path"] == str(missing)
    assert not missing.exists()


def test_workspace_below_a_file_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    expect_code("workspace_not_found", lambda: resolve_workspace_identity(tmp_path / "file" / "x"))


def test_workspace_that_is_a_file_is_invalid(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    expect_code("invalid_workspace", lambda: resolve_workspace_identity(file))
    assert file.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unmarked_read_only_workspace_fails_cleanly(tmp_path: Path) -> None:
    workspace = tmp_path / "ro"
    workspace.mkdir()
    workspace.chmod(0o555)
    try:
        expect_code("workspace_io_failed", lambda: resolve_workspace_identity(workspace))
        assert list(workspace.iterdir()) == []
    finally:
        workspace.chmod(0o755)


def test_filesystem_without_hard_links_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted", dst)

    monkeypatch.setattr(os, "link", no_links)

    error = expect_code("workspace_io_failed", lambda: resolve_workspace_identity(tmp_path))
    assert error.detail["errno"] == "EPERM"
    assert list(tmp_path.iterdir()) == []  # no marker, no temp file


# --- races -----------------------------------------------------------------------------------


def test_concurrent_resolution_yields_one_identity(tmp_path: Path) -> None:
    make_git_dir(tmp_path / ".git")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    workers = 8
    barrier = threading.Barrier(workers)
    results: list[WorkspaceIdentity] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def resolve() -> None:
        try:
            barrier.wait()
            found = resolve_workspace_identity(workspace)
        except BaseException as exc:  # surfaced by the assertion below
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(found)

    threads = [threading.Thread(target=resolve) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len({result.identity for result in results}) == 1
    assert sum(result.created for result in results) == 1
    assert exclude_rules(tmp_path / ".git" / "info" / "exclude") == [WORKSPACE_MARKER_FILE]
    assert leftovers(workspace) == []


def test_losing_the_publish_race_returns_the_winner(tmp_path: Path) -> None:
    def rival_publishes_first() -> uuid.UUID:
        # Runs after the marker was found absent: a rival resolver publishes meanwhile.
        (tmp_path / WORKSPACE_MARKER_FILE).write_bytes(marker_bytes(OTHER))
        return FIXED

    resolved = resolve_workspace_identity(tmp_path, uuid_factory=rival_publishes_first)

    assert resolved.identity == f"workspace:v1:{OTHER}"
    assert resolved.created is False
    assert (tmp_path / WORKSPACE_MARKER_FILE).read_bytes() == marker_bytes(OTHER)
    assert leftovers(tmp_path) == []


def test_directory_replaced_during_publish_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stale = tmp_path / "stale"

    def swap_directory() -> uuid.UUID:
        workspace.rename(stale)
        workspace.mkdir()
        return FIXED

    expect_code(
        "workspace_identity_changed",
        lambda: resolve_workspace_identity(workspace, uuid_factory=swap_directory),
    )
    assert list(workspace.iterdir()) == []
    assert list(stale.iterdir()) == []


# --- Git work trees (pure file handling) ---------------------------------------------------


def test_git_exclude_rule_is_added_once_without_git_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "")  # the marker never needs the git executable
    git_dir = make_git_dir(tmp_path / ".git")  # no info/ yet
    workspace = tmp_path / "sub" / "ws"
    workspace.mkdir(parents=True)

    first = resolve_workspace_identity(workspace)
    second = resolve_workspace_identity(workspace)

    exclude = git_dir / "info" / "exclude"
    assert first.identity == second.identity
    assert exclude.read_text() == f"{WORKSPACE_MARKER_FILE}\n"
    assert find_git_exclude_file(os.path.realpath(workspace)) == os.path.realpath(exclude)
    assert stat.S_ISREG(exclude.lstat().st_mode)


def test_existing_exclude_gets_a_separator_and_keeps_its_rules(tmp_path: Path) -> None:
    git_dir = make_git_dir(tmp_path / ".git", info=True)
    exclude = git_dir / "info" / "exclude"
    exclude.write_text("# local rules\n*.log")

    resolve_workspace_identity(tmp_path)
    resolve_workspace_identity(tmp_path)

    assert exclude.read_text() == f"# local rules\n*.log\n{WORKSPACE_MARKER_FILE}\n"


def test_existing_rule_is_not_duplicated(tmp_path: Path) -> None:
    git_dir = make_git_dir(tmp_path / ".git", info=True)
    exclude = git_dir / "info" / "exclude"
    exclude.write_bytes(f"a\r\n{WORKSPACE_MARKER_FILE}\r\nb\n".encode())

    resolve_workspace_identity(tmp_path)

    assert exclude.read_bytes() == f"a\r\n{WORKSPACE_MARKER_FILE}\r\nb\n".encode()


def test_existing_marker_is_excluded_once_git_appears(tmp_path: Path) -> None:
    original = resolve_workspace_identity(tmp_path)
    git_dir = make_git_dir(tmp_path / ".git")

    resolved = resolve_workspace_identity(tmp_path)

    assert resolved.identity == original.identity
    assert exclude_rules(git_dir / "info" / "exclude") == [WORKSPACE_MARKER_FILE]


def test_linked_worktree_writes_the_common_exclude(tmp_path: Path) -> None:
    main_git = make_git_dir(tmp_path / "main" / ".git")
    worktree_git = main_git / "worktrees" / "x"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/linked\n")
    (worktree_git / "commondir").write_text("../..\n")
    linked = tmp_path / "linked"
    (linked / "nested" / "ws").mkdir(parents=True)
    (worktree_git / "gitdir").write_text(f"{linked / '.git'}\n")
    (linked / ".git").write_text(f"gitdir: {worktree_git}\n")

    resolve_workspace_identity(linked / "nested" / "ws")
    resolve_workspace_identity(linked / "nested" / "ws")

    assert exclude_rules(main_git / "info" / "exclude") == [WORKSPACE_MARKER_FILE]
    assert not (worktree_git / "info").exists()


def test_relative_gitdir_file_is_resolved_from_its_directory(tmp_path: Path) -> None:
    module_git = make_git_dir(tmp_path / ".git" / "modules" / "sub")
    submodule = tmp_path / "sub"
    submodule.mkdir()
    (submodule / ".git").write_text("gitdir: ../.git/modules/sub\n")

    resolve_workspace_identity(submodule)

    assert exclude_rules(module_git / "info" / "exclude") == [WORKSPACE_MARKER_FILE]


def test_git_directory_that_is_not_a_repository_is_skipped(tmp_path: Path) -> None:
    outer_git = make_git_dir(tmp_path / ".git")
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)  # empty: Git ignores it and keeps walking up

    resolve_workspace_identity(workspace)

    assert not (workspace / ".git" / "info").exists()
    assert exclude_rules(outer_git / "info" / "exclude") == [WORKSPACE_MARKER_FILE]


def test_non_git_workspace_writes_no_exclude(tmp_path: Path) -> None:
    resolve_workspace_identity(tmp_path)

    assert find_git_exclude_file(os.path.realpath(tmp_path)) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [WORKSPACE_MARKER_FILE]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("gitdir: /missing/maka-git-dir\n", id="missing-target"),
        pytest.param("not a gitfile\n", id="no-prefix"),
        pytest.param("gitdir: \n", id="no-path"),
    ],
)
def test_malformed_git_file_blocks_publishing(tmp_path: Path, content: str) -> None:
    (tmp_path / ".git").write_text(content)

    expect_code("workspace_io_failed", lambda: resolve_workspace_identity(tmp_path))
    assert not (tmp_path / WORKSPACE_MARKER_FILE).exists()
    assert leftovers(tmp_path) == []


def test_full_exclude_is_not_grown_and_blocks_publishing(tmp_path: Path) -> None:
    git_dir = make_git_dir(tmp_path / ".git", info=True)
    exclude = git_dir / "info" / "exclude"
    exclude.write_text("#" * MAX_GIT_EXCLUDE_BYTES)

    expect_code("workspace_io_failed", lambda: resolve_workspace_identity(tmp_path))
    assert exclude.read_text() == "#" * MAX_GIT_EXCLUDE_BYTES
    assert not (tmp_path / WORKSPACE_MARKER_FILE).exists()


def test_symlinked_exclude_is_refused(tmp_path: Path) -> None:
    git_dir = make_git_dir(tmp_path / "repo" / ".git", info=True)
    target = tmp_path / "outside-exclude"
    target.write_text("")
    (git_dir / "info" / "exclude").symlink_to(target)

    expect_code("workspace_io_failed", lambda: resolve_workspace_identity(tmp_path / "repo"))
    assert target.read_text() == ""
    assert not (tmp_path / "repo" / WORKSPACE_MARKER_FILE).exists()


# --- Git work trees (real git, when installed) -------------------------------------------------


@needs_git
def test_real_git_work_tree_stays_clean(tmp_path: Path) -> None:
    git("init", "--quiet", cwd=tmp_path)

    resolve_workspace_identity(tmp_path)
    resolve_workspace_identity(tmp_path)

    assert git_status(tmp_path) == ""
    exclude = git("rev-parse", "--path-format=absolute", "--git-path", "info/exclude", cwd=tmp_path)
    assert exclude_rules(Path(exclude.strip())) == [WORKSPACE_MARKER_FILE]
    assert find_git_exclude_file(os.path.realpath(tmp_path)) == os.path.realpath(exclude.strip())


@needs_git
def test_real_git_existing_marker_after_git_init_stays_clean(tmp_path: Path) -> None:
    original = resolve_workspace_identity(tmp_path)
    git("init", "--quiet", cwd=tmp_path)

    assert resolve_workspace_identity(tmp_path).identity == original.identity
    assert git_status(tmp_path) == ""


@needs_git
def test_real_git_linked_worktree_subdirectory_stays_clean(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    repository.mkdir()
    git("init", "--quiet", cwd=repository)
    (repository / "tracked.txt").write_text("tracked\n")
    git("add", "tracked.txt", cwd=repository)
    git("commit", "--quiet", "-m", "init", cwd=repository)
    linked = tmp_path / "linked"
    git("worktree", "add", "--quiet", "-b", "linked-test", str(linked), cwd=repository)
    workspace = linked / "nested" / "workspace"
    workspace.mkdir(parents=True)

    resolve_workspace_identity(workspace)

    assert git_status(linked) == ""
    assert git_status(repository) == ""
    common_exclude = repository / ".git" / "info" / "exclude"
    assert exclude_rules(common_exclude) == [WORKSPACE_MARKER_FILE]


@needs_git
def test_real_git_imported_marker_stays_clean(tmp_path: Path) -> None:
    source = tmp_path / "source"
    imported = tmp_path / "imported"
    source.mkdir()
    imported.mkdir()
    original = resolve_workspace_identity(source)
    (imported / WORKSPACE_MARKER_FILE).write_bytes((source / WORKSPACE_MARKER_FILE).read_bytes())
    git("init", "--quiet", cwd=imported)

    assert resolve_workspace_identity(imported).identity == original.identity
    assert git_status(imported) == ""
