"""The JSONL ledger neither writes nor reads through a symlink below its root.

Each test plants a symlink somewhere in the layout (``sessions``, a session directory, ``runs``,
a run directory, ``run.json``, ``runtime-events.jsonl``, the temporary file of an atomic write)
pointing at a complete, valid ledger in a separate directory. Following the link would "work"
(the data there decodes, a write there lands), which is exactly why it must be refused:
``JsonlLedgerError`` with code ``ledger_symlink_refused``. Afterwards the outside tree has the
same bytes and mtimes, and the links below the root are exactly the planted ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from maka_es.adapters.jsonl import JsonlLedger
from maka_es.errors import JsonlLedgerError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import Outside, make_outside, symlinks_under
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

RUN_DIR = "sessions/s1/runs/r1"
HEADER = RunHeader.model_validate(run_header())


def _events(n: int, prefix: str = "e") -> list[RuntimeEvent]:
    builder = LedgerBuilder(prefix=prefix)
    for index in range(n):
        builder.text(f"text {index}")
    return [RuntimeEvent.model_validate(event) for event in builder.events]


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Outside:
    """A separate directory holding a valid ledger with run s1/r1 (one event) and a sentinel."""
    outside = make_outside(tmp_path_factory.mktemp("elsewhere") / "outside")
    ledger = JsonlLedger(outside.path)
    ledger.write_header(HEADER)
    ledger.append(_events(1, prefix="outside")[0])
    outside.pin()
    return outside


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


Operation = Callable[[JsonlLedger], Any]

OPERATIONS: dict[str, Operation] = {
    "append": lambda ledger: ledger.append(_events(2)[1]),
    "write_header": lambda ledger: ledger.write_header(HEADER),
    "read_header": lambda ledger: ledger.read_header("s1", "r1"),
    "read_events": lambda ledger: ledger.read_events("s1", "r1"),
    "list_runs": lambda ledger: ledger.list_runs(),
    "read_session_events": lambda ledger: ledger.read_session_events("s1"),
    "export_run": lambda ledger: ledger.export_run("s1", "r1", HEADER, _events(2)),
}


def _assert_refused(
    ledger: JsonlLedger, operation: Operation, outside: Outside, link: str
) -> JsonlLedgerError:
    before, links = outside.snapshot(), symlinks_under(ledger.root)
    with pytest.raises(JsonlLedgerError) as info:
        operation(ledger)
    assert info.value.code == "ledger_symlink_refused", info.value
    assert info.value.detail == {"path": link}
    assert outside.snapshot() == before  # nothing written (or created) through the link
    assert symlinks_under(ledger.root) == links  # no link created, replaced or removed
    return info.value


def _real_run(root: Path, events: int = 1) -> JsonlLedger:
    ledger = JsonlLedger(root)
    ledger.write_header(HEADER)
    for event in _events(events):
        ledger.append(event)
    return ledger


# --- directories ------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("component", ["sessions", "sessions/s1", "sessions/s1/runs", RUN_DIR])
def test_a_symlinked_layout_directory_is_refused(
    root: Path, outside: Outside, component: str, operation: str
) -> None:
    link = root / component
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside.path / component, target_is_directory=True)
    _assert_refused(JsonlLedger(root), OPERATIONS[operation], outside, component)


def test_a_symlinked_session_is_refused_by_listing_not_skipped(
    root: Path, outside: Outside
) -> None:
    """A listing that skipped the link would let an import report success without that run."""
    ledger = JsonlLedger(root)
    ledger.write_header(RunHeader.model_validate(run_header(sessionId="s0")))
    (root / "sessions" / "s1").symlink_to(outside.path / "sessions" / "s1")
    _assert_refused(ledger, JsonlLedger.list_runs, outside, "sessions/s1")


def test_links_that_cannot_be_runs_are_ignored(root: Path, outside: Outside) -> None:
    ledger = _real_run(root)
    (root / "sessions" / "..hidden\x7f").mkdir()  # not a safe id: never a session
    (root / "sessions" / "not safe\n").symlink_to(outside.path)
    (root / RUN_DIR / "notes").symlink_to(outside.sentinel)  # not a ledger file
    assert ledger.list_runs() == [("s1", "r1")]
    assert [e.id for e in ledger.read_events("s1", "r1")] == ["e1"]


# --- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "operations"),
    [
        ("run.json", sorted(OPERATIONS)),
        (
            "runtime-events.jsonl",
            ["append", "export_run", "list_runs", "read_events", "read_session_events"],
        ),
    ],
)
def test_a_symlinked_ledger_file_is_refused(
    root: Path, outside: Outside, name: str, operations: list[str]
) -> None:
    for operation in operations:
        ledger = _real_run(root / operation, events=0)
        (ledger.root / RUN_DIR / name).unlink(missing_ok=True)
        (ledger.root / RUN_DIR / name).symlink_to(outside.path / RUN_DIR / name)
        _assert_refused(ledger, OPERATIONS[operation], outside, f"{RUN_DIR}/{name}")


def test_a_symlinked_ledger_file_is_left_alone_by_a_header_write(
    root: Path, outside: Outside
) -> None:
    ledger = _real_run(root, events=0)
    (root / RUN_DIR / "runtime-events.jsonl").symlink_to(outside.path / RUN_DIR / "x")
    before, links = outside.snapshot(), symlinks_under(root)
    ledger.write_header(HEADER)  # touches run.json only
    assert outside.snapshot() == before
    assert symlinks_under(root) == links


@pytest.mark.parametrize("operation", ["write_header", "export_run"])
def test_a_link_at_the_temp_name_of_an_atomic_write_is_refused(
    root: Path, outside: Outside, operation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from maka_es.adapters import confined_fs

    ledger = _real_run(root)
    monkeypatch.setattr(confined_fs, "temp_token", lambda: "guessed")
    first = "run.json" if operation == "write_header" else "runtime-events.jsonl"
    temp = f"{RUN_DIR}/.{first}.guessed.tmp"
    (root / temp).symlink_to(outside.sentinel)
    files = {p.name: p.read_bytes() for p in (root / RUN_DIR).iterdir() if not p.is_symlink()}
    _assert_refused(ledger, OPERATIONS[operation], outside, temp)
    after = {p.name: p.read_bytes() for p in (root / RUN_DIR).iterdir() if not p.is_symlink()}
    assert after == files  # the run is unchanged too


def test_export_checks_both_files_before_writing_either(root: Path, outside: Outside) -> None:
    ledger = _real_run(root, events=1)
    (root / RUN_DIR / "run.json").rename(root / "header.bak")
    (root / RUN_DIR / "run.json").symlink_to(outside.path / RUN_DIR / "run.json")
    ledger_file = root / RUN_DIR / "runtime-events.jsonl"
    rows, mtime = ledger_file.read_bytes(), ledger_file.stat().st_mtime_ns
    _assert_refused(ledger, OPERATIONS["export_run"], outside, f"{RUN_DIR}/run.json")
    assert (ledger_file.read_bytes(), ledger_file.stat().st_mtime_ns) == (rows, mtime)


# --- other kinds of entries ------------------------------------------------------------------


def test_a_fifo_ledger_file_is_refused_without_blocking(root: Path) -> None:
    ledger = _real_run(root, events=0)
    os.mkfifo(root / RUN_DIR / "runtime-events.jsonl")
    for operation in ("read_events", "append"):
        with pytest.raises(JsonlLedgerError) as info:
            OPERATIONS[operation](ledger)
        assert info.value.code == "ledger_path_invalid"
        assert info.value.detail == {"path": f"{RUN_DIR}/runtime-events.jsonl"}


def test_a_file_where_a_layout_directory_should_be_is_refused(root: Path) -> None:
    root.mkdir()
    (root / "sessions").write_text("not a directory")
    for operation in ("list_runs", "append", "read_events", "write_header"):
        with pytest.raises(JsonlLedgerError) as info:
            OPERATIONS[operation](JsonlLedger(root))
        assert info.value.code == "ledger_path_invalid"
    assert (root / "sessions").read_text() == "not a directory"


def test_a_symlinked_ledger_root_is_the_hosts_choice(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    ledger = _real_run(tmp_path / "link", events=2)
    assert ledger.list_runs() == [("s1", "r1")]
    assert [e.id for e in ledger.read_events("s1", "r1")] == ["e1", "e2"]
    assert (tmp_path / "real" / RUN_DIR / "run.json").is_file()


# --- hard links -------------------------------------------------------------------------------


def _hardlink_ledger_file(root: Path, outside: Outside, name: str) -> JsonlLedger:
    """A run below ``root`` whose ``name`` is a second name of the outside ledger's file."""
    ledger = _real_run(root, events=0)
    (root / RUN_DIR / name).unlink(missing_ok=True)
    os.link(outside.path / RUN_DIR / name, root / RUN_DIR / name)
    return ledger


def test_an_append_never_writes_through_a_hard_link(root: Path, outside: Outside) -> None:
    """A hard link is no symlink (``O_NOFOLLOW`` does not see it): appending to it would
    grow the outside ledger. It is refused, before a byte is written, torn-tail repair
    included."""
    ledger = _hardlink_ledger_file(root, outside, "runtime-events.jsonl")
    before = outside.snapshot()
    with pytest.raises(JsonlLedgerError) as info:
        ledger.append(_events(2)[1])
    assert info.value.code == "ledger_path_invalid"
    assert info.value.detail == {"path": f"{RUN_DIR}/runtime-events.jsonl"}
    assert "hard link" in str(info.value)
    assert outside.snapshot() == before
    assert sorted(p.name for p in (root / RUN_DIR).iterdir()) == [
        "run.json",
        "runtime-events.jsonl",
    ]


@pytest.mark.parametrize("operation", ["write_header", "export_run"])
def test_a_whole_file_write_replaces_a_hard_link_instead_of_writing_through_it(
    root: Path, outside: Outside, operation: str
) -> None:
    name = "run.json" if operation == "write_header" else "runtime-events.jsonl"
    ledger = _hardlink_ledger_file(root, outside, name)
    before = outside.snapshot()
    OPERATIONS[operation](ledger)
    assert outside.snapshot() == before
    mine, theirs = (root / RUN_DIR / name).stat(), (outside.path / RUN_DIR / name).stat()
    assert mine.st_ino != theirs.st_ino  # the link was broken, not written through
    assert (mine.st_nlink, theirs.st_nlink) == (1, 1)
    if operation == "export_run":
        assert [e.id for e in ledger.read_events("s1", "r1")] == ["e1", "e2"]
