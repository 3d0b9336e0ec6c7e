"""The snapshot's operations and journal are kept apart and read on first use (ADR 0032, as
segments since ADR 0044): a plain append reads neither, and a part that is changed or gone
when it is read is recomputed by folding the ledger (the answers are a full replay's, never
the part's); a segment's summary changed or gone means no snapshot (a full replay)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from maka_es import RuntimeApplication
from maka_es.adapters.run_snapshots import SnapshotTable
from maka_es.ledger.model.run_snapshot import KINDS, PartReader
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
    """The kinds of the parts read from the store, one entry per digest (the real reads,
    counted)."""
    reads: list[str] = []
    real = SnapshotTable._reader

    def counting(table: SnapshotTable, *args: Any) -> PartReader:
        read = real(table, *args)

        def counted(kind: str, digests: Sequence[str]) -> Sequence[bytes]:
            reads.extend([kind] * len(digests))
            return read(kind, digests)

        return counted

    monkeypatch.setattr(SnapshotTable, "_reader", counting)
    return reads


def _chain(store: str) -> list[list[str]]:
    """The digests ``[summary, operations, journal]`` of each segment the stored body names."""
    body = bytes(_row(store)[3])
    return list(json.loads(body.split(b"\n")[1]))


def _kinds(store: str) -> dict[str, str]:
    return {digest: KINDS[i] for segment in _chain(store) for i, digest in enumerate(segment)}


def _reopened(store: str) -> tuple[tuple[Any, ...], int, int]:
    app = RuntimeApplication.open(store, clock=FixedClock())
    try:
        app.ledger.load_run("r1")
        answers = _answers(app)
        snapshots = _snapshots(app)
        return answers, snapshots.table.parts_replayed, snapshots.facts_folded_cold
    finally:
        app.close()


def test_the_parts_are_kept_apart_and_a_plain_append_reads_none(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = bytes(_row(store)[3])
    digests = [digest for (digest,) in _sql(store, "SELECT digest FROM {t}_parts")]
    kinds = _kinds(store)
    assert sorted(digests) == sorted(kinds)  # every part stored is named by the body, and back
    assert len(_chain(store)) >= 2  # the later snapshots appended a segment each (ADR 0044)
    assert b"toolop_" not in body  # the operations and journal are not in the body
    reads = _reads(monkeypatch)
    app = RuntimeApplication.open(store, clock=FixedClock())
    try:
        app.ledger.append_events("r1", [Events.wire().text("one more", event_id="m-new")])
        assert set(reads) == {"summary"}  # the summaries, read with the body, and nothing else
        assert len(app.ledger.load_run("r1").tool_operations) == 16  # the journal parts
        assert set(reads) == {"summary", "journal"}
        assert _snapshots(app).table.parts_replayed == 0
    finally:
        app.close()


def test_a_changed_part_is_recomputed_from_the_ledger(store: str) -> None:
    kinds = _kinds(store)
    changed_any = 0
    for digest, data in _sql(store, "SELECT digest, data FROM {t}_parts"):
        changed = bytes(data).replace(b"Echo", b"Ecko")  # a tool name in operations, journal
        if kinds[digest] == "summary" or changed == bytes(data):
            continue
        changed_any += 1
        _sql(store, "UPDATE {t}_parts SET data = {p} WHERE digest = {p}", (changed, digest))
    assert changed_any >= 2
    answers, replayed, _ = _reopened(store)
    assert replayed == 2  # the operations and the journal, each once
    assert answers == _full_replay(store)


def test_parts_that_are_gone_are_recomputed_from_the_ledger(store: str) -> None:
    for digest, kind in _kinds(store).items():
        if kind != "summary":
            _sql(store, "DELETE FROM {t}_parts WHERE digest = {p}", (digest,))
    answers, replayed, _ = _reopened(store)
    assert replayed == 2  # the operations and the journal, each once
    assert answers == _full_replay(store)


@pytest.mark.parametrize("damage", ["changed", "gone"])
def test_a_summary_changed_or_gone_means_no_snapshot(store: str, damage: str) -> None:
    """A segment's summary (its ids, CRC index, spines and issues) is read with the body; one
    changed or missing makes the whole snapshot unusable: a full replay (ADR 0044)."""
    summary = _chain(store)[-1][0]
    if damage == "gone":
        _sql(store, "DELETE FROM {t}_parts WHERE digest = {p}", (summary,))
    else:
        ((data,),) = _sql(store, "SELECT data FROM {t}_parts WHERE digest = {p}", (summary,))
        torn = bytes(data)[: len(bytes(data)) // 2]
        _sql(store, "UPDATE {t}_parts SET data = {p} WHERE digest = {p}", (torn, summary))
    version = _row(store)[0]
    answers, replayed, folded = _reopened(store)
    assert replayed == 0
    assert folded >= version  # every fact folded from the first
    assert answers == _full_replay(store)
