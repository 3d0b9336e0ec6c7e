"""The installed ``maka-es`` script on hostile input: each is a typed one-line error with the
exit code docs/cli.md documents, and nothing is created or written.

* a non-UTF-8 byte in an id argument: ``invalid_runtime_event``, exit 1 (was ``internal``);
* ``export -o`` where nothing can be written: ``report_output_invalid``, exit 1, refused by the
  same check as ``report -o`` (was ``internal``, or a silently created parent);
* ``--store`` with another URL scheme: usage, exit 2 (was a SQLite file named ``mysql:``);
  ``sqlite:///PATH`` is the SQLite file PATH;
* ``--store`` naming a file that is no database: ``store_corruption``, exit 4 (was
  ``store_unavailable``, "retry later", exit 1), from ``verify`` too;
* ``--store`` naming a directory: ``store_path_unusable``, exit 1 (was "disk I/O error");
* a refused ``import`` into a store that does not exist yet: neither the store nor its
  directory is created (was an empty store file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from maka_es.adapters.jsonl import JsonlLedger
from maka_es.resume.failpoint_catalog import harness_ledger
from maka_es.testing.builders import Spine, run_header
from maka_es.wire.run_header import RunHeader
from tests.cli.stores import MAKA_ES, Ran, build_store, cli, rows

NOT_UTF8 = b"r\xff"  # what the shell passes for a Latin-1 id; Python sees "r\udcff"


def run_bytes(*args: str | bytes, cwd: Path | None = None) -> Ran:
    """``maka-es ARGS`` with raw bytes in argv, as a shell passes them."""
    argv = [os.fsencode(MAKA_ES), *(os.fsencode(arg) for arg in args)]
    done = subprocess.run(argv, capture_output=True, timeout=300, check=False, cwd=cwd)
    return Ran(done.returncode, _text(done.stdout), _text(done.stderr))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _one_line(ran: Ran, code: str, exit_code: int) -> None:
    assert ran.code == exit_code, ran.err
    lines = ran.err.strip().splitlines()
    assert len(lines) == 1, ran.err
    assert lines[0].startswith(f"error [{code}]: "), ran.err
    assert "what to do: " in lines[0]


def _tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` with the digest of each file (the evidence nothing changed);
    SQLite's own ``-wal``/``-shm`` files come and go with connections (``rows`` checks them)."""
    return {
        str(path.relative_to(root)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        )
        for path in sorted(root.rglob("*"))
        if not path.name.endswith(("-wal", "-shm"))
    }


# --- 1. non-UTF-8 argv ------------------------------------------------------------------------

ID_COMMANDS: list[tuple[bytes | str, ...]] = [
    ("show", NOT_UTF8),
    ("ops", NOT_UTF8),
    ("plan", NOT_UTF8),
    ("runs", NOT_UTF8),
    ("export", NOT_UTF8),
    ("report", NOT_UTF8),
    ("report", "--session", NOT_UTF8),
    ("fork", NOT_UTF8, "--before", "op", "--actor", "ops"),
    ("attest", NOT_UTF8, "op", "--not-applied", "--actor", "ops"),
    ("continue", NOT_UTF8, "--dry-run"),
]


@pytest.mark.parametrize("argv", ID_COMMANDS, ids=lambda argv: " ".join(map(str, argv)))
def test_a_non_utf8_id_is_a_typed_error_and_nothing_is_written(
    tmp_path: Path, argv: tuple[bytes | str, ...]
) -> None:
    db, _ = build_store(tmp_path, dies=False)
    before, files = rows(db), _tree(tmp_path)

    ran = run_bytes("--store", str(db), *argv, cwd=tmp_path)

    if argv[0] == "continue":  # planning never raises: the session cannot be read, it parks
        assert ran.code == 3, ran.err
    else:
        _one_line(ran, "invalid_runtime_event", 1)
        assert "lone surrogate" in ran.err
    assert rows(db) == before
    assert _tree(tmp_path) == files  # no report.html, no export directory


# --- 2. export -o / report -o where nothing can be written ----------------------------------


@contextmanager
def _unwritable(directory: Path) -> Iterator[None]:
    """``directory`` refuses new entries, for this process, the way the OS enforces it: mode
    0555 for an ordinary user; root ignores modes, so there it is made immutable."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    made = chattr and subprocess.run([chattr, "+i", str(directory)], check=False)
    if not made or made.returncode != 0:
        pytest.skip("root ignores directory modes and this filesystem cannot make one immutable")
    assert chattr is not None
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(directory)], check=True)


#: path below the scratch directory -> the reason both commands refuse it.
UNUSABLE = {
    "missing/out": "parent_missing",
    "a-file/out": "parent_not_a_directory",
    "locked/out": "not_writable",
}


@pytest.mark.parametrize("command", ["export", "report"])
@pytest.mark.parametrize("where", sorted(UNUSABLE))
def test_export_and_report_refuse_the_same_unusable_paths(
    tmp_path: Path, command: str, where: str
) -> None:
    db, _ = build_store(tmp_path / "store", dies=False)
    out_root = tmp_path / "out"
    (out_root / "locked").mkdir(parents=True)
    (out_root / "a-file").write_text("keep me")
    files = _tree(out_root)

    with _unwritable(out_root / "locked"):
        ran = cli(command, "r1", "-o", str(out_root / where), store=db)

    _one_line(ran, "report_output_invalid", 1)
    assert UNUSABLE[where].replace("_", " ") in ran.err
    assert _tree(out_root) == files


def test_export_refuses_a_file_and_report_a_directory_as_the_output(tmp_path: Path) -> None:
    """The wrong kind for each: ``export -o`` writes a ledger directory, ``report -o`` one
    file; an existing directory is where an export goes (several runs into one ledger root)."""
    db, _ = build_store(tmp_path / "store", dies=False)
    out_root = tmp_path / "out"
    (out_root / "ledger").mkdir(parents=True)
    (out_root / "a-file").write_text("keep me")
    files = _tree(out_root)

    export_to_file = cli("export", "r1", "-o", str(out_root / "a-file"), store=db)
    report_to_directory = cli("report", "r1", "-o", str(out_root / "ledger"), store=db)

    _one_line(export_to_file, "report_output_invalid", 1)
    assert "not a directory" in export_to_file.err
    _one_line(report_to_directory, "report_output_invalid", 1)
    assert "is a directory" in report_to_directory.err
    assert _tree(out_root) == files
    assert cli("export", "r1", "-o", str(out_root / "ledger"), store=db).code == 0
    assert JsonlLedger(out_root / "ledger").list_runs() == [("s1", "r1")]


# --- 3. store URLs ----------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["mysql://user:secret@db/maka", "HTTP://x/y", "sqlite://host/x"])
@pytest.mark.parametrize("command", ["sessions", "import"])
def test_an_unsupported_store_url_is_a_usage_error_that_creates_nothing(
    tmp_path: Path, url: str, command: str
) -> None:
    layout = tmp_path / "layout"
    _reference_layout(layout)
    work = tmp_path / "work"
    work.mkdir()
    argv = [command, str(layout)] if command == "import" else [command]

    ran = run_bytes("--store", url, *argv, cwd=work)

    _one_line(ran, "usage", 2)
    assert "secret" not in ran.err
    assert list(work.iterdir()) == []  # no "mysql:" directory, no SQLite file


def test_a_sqlite_url_names_the_sqlite_file(tmp_path: Path) -> None:
    """SQLAlchemy's form: ``sqlite:///rel.db`` relative to the working directory,
    ``sqlite:////abs/x.db`` absolute; the same file as the plain path."""
    _reference_layout(tmp_path / "layout")
    (tmp_path / "work").mkdir()

    relative = run_bytes(
        "--store", "sqlite:///data/rel.sqlite", "import", "../layout", cwd=tmp_path / "work"
    )
    absolute = cli("import", str(tmp_path / "layout"), store=f"sqlite:///{tmp_path}/abs.sqlite")

    assert relative.code == 0, relative.err
    assert absolute.code == 0, absolute.err
    streams = [row[:3] for row in rows(tmp_path / "work" / "data" / "rel.sqlite")]
    assert streams
    assert [row[:3] for row in rows(tmp_path / "abs.sqlite")] == streams
    read = cli("runs", "--json", store=f"sqlite:///{tmp_path}/abs.sqlite")
    assert [run["runId"] for run in read.json()] == ["run-1"]
    verified = cli("verify", "--json", store=f"sqlite:///{tmp_path}/abs.sqlite")
    assert verified.code == 0
    assert verified.json()["storeIntegrity"] == "ok"


# --- 4. a store file that is no database, a directory as the store ---------------------------


@pytest.mark.parametrize("command", ["sessions", "verify", "recover", "plan"])
def test_a_file_that_is_no_database_is_corruption_exit_4(tmp_path: Path, command: str) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(hashlib.sha512(b"not a database").digest() * 64)
    files = _tree(tmp_path)
    argv = [command, "r1"] if command == "plan" else [command]

    ran = cli(*argv, store=junk)

    _one_line(ran, "store_corruption", 4)
    assert "not a SQLite database" in ran.err
    assert _tree(tmp_path) == files


@pytest.mark.parametrize("command", ["sessions", "verify", "recover", "import"])
def test_a_directory_as_the_store_is_store_path_unusable(tmp_path: Path, command: str) -> None:
    store = tmp_path / "a-directory"
    store.mkdir()
    layout = tmp_path / "layout"
    _reference_layout(layout)
    argv = [command, str(layout)] if command == "import" else [command]

    ran = cli(*argv, store=store)

    _one_line(ran, "store_path_unusable", 1)
    assert "is a directory" in ran.err
    assert list(store.iterdir()) == []


# --- 5. a refused import creates nothing -----------------------------------------------------


def _reference_layout(root: Path) -> None:
    """A reference JSONL ledger without tool-journal facts (it imports): user, call, result."""
    ledger = JsonlLedger(root)
    spine = Spine("session-1", "invocation-run-1", "run-1", "turn-run-1")
    ledger.write_header(RunHeader.model_validate(run_header(spine)))
    for event in harness_ledger("after_function_response", spine.session_id, spine.run_id):
        ledger.append(event)


def _tool_journal_layout(tmp_path: Path) -> Path:
    """A ledger exported from a run that holds tool-journal facts: ``reserved_fact`` on
    import (docs/cli.md#move-data)."""
    db, _ = build_store(tmp_path / "source", dies=False)
    assert cli("export", "r1", "-o", str(tmp_path / "exported"), store=db).code == 0
    return tmp_path / "exported"


def _unreadable_layout(tmp_path: Path) -> Path:
    """A valid run followed by a run whose header is no header: ``run_header_invalid``."""
    root = tmp_path / "broken"
    _reference_layout(root)
    bad = root / "sessions" / "session-1" / "runs" / "run-2"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text("{}\n")
    return root


@pytest.mark.parametrize(
    ("layout", "code"),
    [(_tool_journal_layout, "reserved_fact"), (_unreadable_layout, "run_header_invalid")],
)
def test_a_refused_import_creates_neither_the_store_nor_its_directory(
    tmp_path: Path, layout: object, code: str
) -> None:
    assert callable(layout)
    root = layout(tmp_path)
    store = tmp_path / "new" / "imported.sqlite"

    ran = cli("import", str(root), store=store)

    _one_line(ran, code, 1)
    assert not store.parent.exists()
