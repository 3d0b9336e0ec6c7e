"""The snapshot's operations and journal are kept apart and read on first use (ADR 0032): a
plain append reads neither, and a part that is changed or gone when it is read is recomputed
by folding the ledger (the answers are a full replay's, never the part's)."""

from __future__ import annotations

from typing import Any

import pytest

from maka_es import RuntimeApplication
from maka_es.adapters.run_snapshots import SnapshotTable
from maka_es.testing.builders import Events
from tests.conftest import FixedClock
from tests.integration.ledger.test_run_snapshots import (
    EVERY,
    _answers,
    _full_replay,
    _row,
    _snapshots,
    _sql,
    _write_run,
)


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


@pytest.fixture
def store(store_url: str) -> str:
    _write_run(store_url)
    app = RuntimeApplication.open(store_url, clock=FixedClock())
    app.ledger.append_events("r1", [Events.wire().text("a snapshot at the tip", event_id="m-tip")])
    app.close()
    return store_url


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The digests of the parts read from the store (the real reads, counted)."""
    reads: list[str] = []
    real = SnapshotTable.read_part

    def counted(table: SnapshotTable, stream_id: Any, digest: str) -> bytes | None:
        reads.append(digest)
        return real(table, stream_id, digest)

    monkeypatch.setattr(SnapshotTable, "read_part", counted)
    return reads


def _reopened(store: str) -> tuple[tuple[Any, ...], int]:
    app = RuntimeApplication.open(store, clock=FixedClock())
    try:
        app.ledger.load_run("r1")
        answers = _answers(app)
        return answers, _snapshots(app).table.parts_replayed
    finally:
        app.close()


def test_the_parts_are_kept_apart_and_a_plain_append_reads_none(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = bytes(_row(store)[3])
    digests = [digest for (digest,) in _sql(store, "SELECT digest FROM {t}_parts")]
    assert len(digests) == 2
    assert all(f"@{d}".encode() in body for d in digests)
    assert b"toolop_" not in body.split(b"\n")[-1]
    reads = _reads(monkeypatch)
    app = RuntimeApplication.open(store, clock=FixedClock())
    try:
        app.ledger.append_events("r1", [Events.wire().text("one more", event_id="m-new")])
        assert reads == []
        assert len(app.ledger.load_run("r1").tool_operations) == 16  # the journal part
        assert len(reads) == 1
        assert _snapshots(app).table.parts_replayed == 0
    finally:
        app.close()


def test_a_changed_part_is_recomputed_from_the_ledger(store: str) -> None:
    for digest, data in _sql(store, "SELECT digest, data FROM {t}_parts"):
        changed = bytes(data).replace(b"Echo", b"Ecko")  # a tool name in each part
        assert changed != bytes(data)
        _sql(store, "UPDATE {t}_parts SET data = {p} WHERE digest = {p}", (changed, digest))
    answers, replayed = _reopened(store)
    assert replayed == 2  # the operations and the journal, each once
    assert answers == _full_replay(store)


def test_parts_that_are_gone_are_recomputed_from_the_ledger(store: str) -> None:
    _sql(store, "DELETE FROM {t}_parts")
    answers, replayed = _reopened(store)
    assert replayed == 2  # the operations and the journal, each once
    assert answers == _full_replay(store)
