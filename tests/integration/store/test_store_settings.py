"""A store setting that cannot name a usable SQLite store is a typed refusal, on real files.

* a file that is no SQLite database (random bytes): ``store_corruption`` (a
  ``StoreFileCorruptionError``, still a ``StoreUnavailableError`` for readers that park on store
  faults), not ``store_unavailable`` ("retry later"); the file is untouched;
* a directory opened read-only: ``store_path_unusable`` (``is_a_directory``), not an I/O error;
* ``RuntimeApplication.open`` with another URL scheme: ``store_path_unusable``
  (``unsupported_scheme``), and no file named after the URL; ``sqlite:///PATH`` is PATH.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import (
    StoreCorruptionError,
    StoreFileCorruptionError,
    StorePathError,
    StoreUnavailableError,
)
from maka_es.testing.builders import Spine, run_header


def _junk(path: Path) -> bytes:
    data = hashlib.sha512(b"no database").digest() * 64
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_that_is_no_database_is_store_corruption(tmp_path: Path, read_only: bool) -> None:
    junk = tmp_path / "junk.sqlite"
    data = _junk(junk)

    with (
        pytest.raises(StoreFileCorruptionError) as refused,
        RuntimeApplication.open_sqlite(str(junk), read_only=read_only) as app,
    ):
        app.list_sessions()

    assert refused.value.code == "store_corruption"
    assert refused.value.detail["reason"] == "not_a_database"
    assert refused.value.detail["sqliteError"] == "SQLITE_NOTADB"
    assert isinstance(refused.value, StoreCorruptionError)
    assert isinstance(refused.value, StoreUnavailableError)
    assert junk.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.sqlite"]


@pytest.mark.parametrize("read_only", [False, True])
def test_a_directory_is_store_path_unusable(tmp_path: Path, read_only: bool) -> None:
    directory = tmp_path / "store"
    directory.mkdir()

    with (
        pytest.raises(StorePathError) as refused,
        RuntimeApplication.open_sqlite(str(directory), read_only=read_only) as app,
    ):
        app.list_sessions()

    assert refused.value.code == "store_path_unusable"
    assert refused.value.detail["reason"] == "is_a_directory"
    assert refused.value.detail["path"] == str(directory)
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize(
    ("store", "reason"),
    [
        ("mysql://user:secret@db/maka", "unsupported_scheme"),
        ("file:///tmp/x.sqlite", "unsupported_scheme"),
        ("sqlite://host/x.sqlite", "bad_sqlite_url"),
        ("sqlite:///x.sqlite?mode=ro", "bad_sqlite_url"),
        ("sqlite:///", "bad_sqlite_url"),
    ],
)
def test_open_refuses_a_url_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, reason: str
) -> None:
    monkeypatch.chdir(tmp_path)

    with pytest.raises(StorePathError) as refused:
        RuntimeApplication.open(store)

    assert refused.value.detail["reason"] == reason
    assert "secret" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_sqlite_url_opens_the_file_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with RuntimeApplication.open("sqlite:///relative.sqlite") as app:
        app.open_session("s1", "/w")
        app.ledger.create_run(run_header(Spine()))
    with RuntimeApplication.open(f"sqlite:///{tmp_path}/absolute.sqlite") as app:
        app.open_session("s1", "/w")
        app.ledger.create_run(run_header(Spine(run_id="r2", invocation_id="i2")))

    with RuntimeApplication.open_sqlite(str(tmp_path / "relative.sqlite")) as app:
        assert app.ledger.all_run_ids() == ["r1"]
    with RuntimeApplication.open("SQLite:///relative.sqlite") as app:
        assert app.ledger.all_run_ids() == ["r1"]  # the scheme is case-insensitive
    with RuntimeApplication.open(str(tmp_path / "absolute.sqlite"), read_only=True) as app:
        assert app.ledger.all_run_ids() == ["r2"]
