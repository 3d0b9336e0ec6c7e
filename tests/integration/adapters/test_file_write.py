"""The Write tool never writes (or reads) outside its workspace, whatever is planted in it.

Every test plants a symlink (at the temporary file name, at the target, at a parent directory,
or swapped in while a write is under way) that points at a sentinel in a separate directory, and
shows afterwards that the sentinel kept its bytes and mtime, nothing appeared next to it, and no
symlink in the workspace was created, replaced or removed. Refusals are typed
(``WorkspacePathRefusedError`` with a stable code); through ``ToolRuntime`` the reconciler's
preflight refuses before T1, so the tool never ran and no operation exists.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from maka_es.adapters.file_write import FileWriteArgs, file_write_tool
from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import Outside, make_outside, symlinks_under
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime

CONTENT = '{"port":4000}'


class Crash(BaseException):
    """Stands in for a kill between T1 and the write."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Outside:
    return make_outside(tmp_path_factory.mktemp("elsewhere") / "outside")


@pytest.fixture
def ledger(sqlite_app: RuntimeApplication) -> LedgerBuilder:
    sqlite_app.open_session("s1", "/workspace")
    sqlite_app.ledger.create_run(run_header())
    builder = LedgerBuilder()
    builder.user(marker=True)
    sqlite_app.ledger.append_events("r1", builder.events)
    return builder


def _context() -> ToolContext:
    return ToolContext("r1", "w1", "op-w1", {})


def _write(root: Path, path: str, content: str = CONTENT) -> Any:
    """Call the tool implementation directly (no runtime): it must refuse on its own too."""
    return file_write_tool(root).run(FileWriteArgs(path=path, content=content), _context())


def _refused(call: Callable[[], Any], code: str) -> MakaError:
    with pytest.raises(MakaError) as info:
        call()
    assert info.value.code == code, info.value
    assert isinstance(info.value, ValueError)  # WorkspacePathRefusedError is also a ValueError
    return info.value


def _assert_refused_before_t1(
    app: RuntimeApplication, ledger: LedgerBuilder, root: Path, path: str, code: str
) -> None:
    result = ToolRuntime(app.tool_journal, [file_write_tool(root)]).execute(
        "r1", ledger.call("w1", "Write", {"path": path, "content": CONTENT})
    )
    assert result.is_error
    assert not result.dispatched
    assert result.result["text"].startswith("preflight_failed: WorkspacePathRefusedError")
    assert f"[{code}]" in result.result["text"]
    assert app.tool_journal.tool_operations("r1") == ()  # no T1: the tool never ran


# --- the temporary file ---------------------------------------------------------------------


def test_a_link_planted_at_the_predictable_temp_name_is_never_followed(
    ws: Path, outside: Outside
) -> None:
    planted = ws / f".config.json.maka-tmp-{os.getpid()}"  # the name older versions used
    planted.symlink_to(outside.sentinel)
    before, links = outside.snapshot(), symlinks_under(ws)
    _write(ws, "config.json")
    assert outside.snapshot() == before
    assert symlinks_under(ws) == links  # the planted link is still there, still a link
    target = ws / "config.json"
    assert not target.is_symlink()
    assert target.read_text() == CONTENT
    assert sorted(p.name for p in ws.iterdir()) == sorted(["config.json", planted.name])


def test_a_link_at_the_random_temp_name_is_refused_not_opened(
    ws: Path, outside: Outside, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maka_es.adapters import confined_fs

    monkeypatch.setattr(confined_fs, "temp_token", lambda: "guessed")
    (ws / ".config.json.guessed.tmp").symlink_to(outside.sentinel)
    (ws / "config.json").write_text("prior")
    before, links = outside.snapshot(), symlinks_under(ws)
    error = _refused(lambda: _write(ws, "config.json"), "workspace_symlink_refused")
    assert error.detail == {"path": ".config.json.guessed.tmp"}
    assert outside.snapshot() == before
    assert symlinks_under(ws) == links
    assert (ws / "config.json").read_text() == "prior"


# --- the target -----------------------------------------------------------------------------


def test_a_hard_linked_target_is_replaced_never_written_through(ws: Path, outside: Outside) -> None:
    """A hard link planted in the workspace is a second name of the outside file: the write
    gives ``config.json`` a new inode and leaves the outside file's bytes and mtime alone."""
    os.link(outside.sentinel, ws / "config.json")
    before = outside.snapshot()
    _write(ws, "config.json")
    assert outside.snapshot() == before
    assert (ws / "config.json").read_text() == CONTENT
    assert (ws / "config.json").stat().st_ino != outside.sentinel.stat().st_ino
    assert outside.sentinel.stat().st_nlink == 1


@pytest.mark.parametrize("points_inside", [False, True])
def test_a_symlinked_target_is_refused_before_t1(
    sqlite_app: RuntimeApplication,
    ledger: LedgerBuilder,
    ws: Path,
    outside: Outside,
    points_inside: bool,
) -> None:
    inside = ws / "real.txt"
    inside.write_text("real")
    (ws / "config.json").symlink_to(inside if points_inside else outside.sentinel)
    before, links = outside.snapshot(), symlinks_under(ws)
    _assert_refused_before_t1(sqlite_app, ledger, ws, "config.json", "workspace_symlink_refused")
    _refused(lambda: _write(ws, "config.json"), "workspace_symlink_refused")
    assert outside.snapshot() == before
    assert symlinks_under(ws) == links  # the target did not become (or stop being) a link
    assert inside.read_text() == "real"


def test_a_target_that_is_not_a_regular_file_is_refused(ws: Path) -> None:
    os.mkfifo(ws / "pipe")  # reading it would block the preflight forever
    (ws / "dir").mkdir()
    _refused(lambda: _write(ws, "pipe"), "workspace_path_invalid")
    _refused(lambda: _write(ws, "dir"), "workspace_path_invalid")
    reconciler = file_write_tool(ws).reconciler
    assert reconciler is not None
    _refused(
        lambda: reconciler.prepare(FileWriteArgs(path="pipe", content="x")),
        "workspace_path_invalid",
    )


# --- parent directories -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["sub/new.txt", "sub/deeper/new.txt", "a/sub/new.txt"])
def test_a_symlinked_parent_directory_is_refused_before_t1(
    sqlite_app: RuntimeApplication,
    ledger: LedgerBuilder,
    ws: Path,
    outside: Outside,
    path: str,
) -> None:
    link_at = ws / path.rsplit("/", 1)[0].removesuffix("/deeper")
    link_at.parent.mkdir(parents=True, exist_ok=True)
    link_at.symlink_to(outside.path, target_is_directory=True)
    before, links = outside.snapshot(), symlinks_under(ws)
    _assert_refused_before_t1(sqlite_app, ledger, ws, path, "workspace_symlink_refused")
    error = _refused(lambda: _write(ws, path), "workspace_symlink_refused")
    assert error.detail == {"path": str(link_at.relative_to(ws))}
    assert outside.snapshot() == before  # nothing written or created through the link
    assert symlinks_under(ws) == links


def test_a_file_where_a_directory_should_be_is_refused(ws: Path) -> None:
    (ws / "sub").write_text("a file")
    _refused(lambda: _write(ws, "sub/new.txt"), "workspace_path_invalid")
    assert (ws / "sub").read_text() == "a file"


def test_a_parent_swapped_for_a_link_during_the_write_cannot_redirect_it(
    ws: Path, outside: Outside, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check-then-use race: once the directory is open, the write lands in it."""
    (ws / "sub").mkdir()
    real_open = os.open
    swapped: list[str] = []

    def open_and_swap(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT and not swapped:  # the temporary file is about to be created
            os.rename(ws / "sub", ws / "sub.moved")
            (ws / "sub").symlink_to(outside.path, target_is_directory=True)
            swapped.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    before = outside.snapshot()
    monkeypatch.setattr(os, "open", open_and_swap)
    _write(ws, "sub/config.json")
    monkeypatch.undo()
    assert swapped  # the swap really happened in the middle of the write
    assert outside.snapshot() == before
    assert (ws / "sub.moved" / "config.json").read_text() == CONTENT  # the directory it checked
    assert symlinks_under(ws) == {"sub": str(outside.path)}  # only the attacker's own link


def test_missing_parent_directories_are_created_inside(ws: Path) -> None:
    _write(ws, "a/b/c.txt")
    assert (ws / "a" / "b" / "c.txt").read_text() == CONTENT
    assert symlinks_under(ws) == {}


# --- the path string ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../escape.txt", "workspace_path_escape"),
        ("a/../../escape.txt", "workspace_path_escape"),
        ("a/../inside.txt", "workspace_path_escape"),  # `..` is refused even when it stays in
        ("/abs/escape.txt", "workspace_path_escape"),
        ("a/", "workspace_path_invalid"),
        ("a/.", "workspace_path_invalid"),
        (".", "workspace_path_invalid"),
        ("nul\0.txt", "workspace_path_invalid"),
    ],
)
def test_path_strings_that_could_leave_or_name_no_file_are_refused(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, ws: Path, path: str, code: str
) -> None:
    _assert_refused_before_t1(sqlite_app, ledger, ws, path, code)
    _refused(lambda: _write(ws, path), code)
    assert list(ws.iterdir()) == []


def test_a_path_no_file_name_can_hold_is_refused(ws: Path) -> None:
    # neither a call event nor FileWriteArgs can carry a lone surrogate; the helpers can
    from maka_es.adapters.file_write import read_workspace_file, write_workspace_file

    path = "lone-\ud800.txt"
    _refused(lambda: write_workspace_file(ws, path, b"x"), "workspace_path_invalid")
    _refused(lambda: read_workspace_file(ws, path), "workspace_path_invalid")
    assert list(ws.iterdir()) == []


def test_an_absolute_path_to_the_sentinel_is_refused(ws: Path, outside: Outside) -> None:
    before = outside.snapshot()
    _refused(lambda: _write(ws, str(outside.sentinel)), "workspace_path_escape")
    assert outside.snapshot() == before


def test_redundant_slashes_and_dots_stay_inside(ws: Path) -> None:
    _write(ws, "./a//b.txt")
    assert (ws / "a" / "b.txt").read_text() == CONTENT


def test_a_symlinked_workspace_root_is_the_hosts_choice(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    _write(tmp_path / "link", "a/config.json")
    assert (real / "a" / "config.json").read_text() == CONTENT


# --- recovery -------------------------------------------------------------------------------


def test_recovery_does_not_read_through_a_link_planted_after_t1(
    sqlite_app: RuntimeApplication, ledger: LedgerBuilder, ws: Path
) -> None:
    """A link to a file that holds the expected bytes must not fake a completed write."""
    inner = file_write_tool(ws)

    def die_before_write(args: FileWriteArgs, context: ToolContext) -> Any:
        raise Crash()

    crashing = Tool("Write", FileWriteArgs, die_before_write, "reconcile", inner.reconciler)
    with pytest.raises(Crash):
        ToolRuntime(sqlite_app.tool_journal, [crashing]).execute(
            "r1", ledger.call("w1", "Write", {"path": "config.json", "content": CONTENT})
        )
    (ws / "decoy.json").write_text(CONTENT)
    (ws / "config.json").symlink_to(ws / "decoy.json")
    report = ToolRuntime(sqlite_app.tool_journal, [inner]).recover("r1")
    assert [(a.action, a.reason) for a in report.actions] == [("parked", "reconcile_unreadable")]
    assert (ws / "config.json").is_symlink()
    assert sqlite_app.plan_resume("r1").disposition == "blocked"
