"""The lazily built id map of a restored scan state (ADR 0032): every answer equals the full
map's, for any ids (hostile characters, duplicates, CRC collisions), and a plain "not
committed" answer builds nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.errors import StoreCorruptionError
from maka_es.tooljournal.model.scanner import (
    SnapshotIds,
    SnapshotPositions,
    id_index,
    load_id_index,
    merge_id_indexes,
)

IDS = st.text(min_size=0, max_size=6)


def _lazy(ids: list[str]) -> SnapshotPositions:
    text = json.dumps(ids, separators=(",", ":")).encode()
    return SnapshotPositions(SnapshotIds(text, len(ids)), load_id_index(id_index(ids)))


@given(st.lists(IDS, max_size=30), st.lists(IDS, max_size=10), st.lists(IDS, max_size=10))
def test_answers_equal_the_full_map(head: list[str], tail: list[str], asked: list[str]) -> None:
    lazy, full = _lazy(head), dict(zip(head, range(len(head)), strict=True))
    for position, event_id in enumerate(tail, start=len(head)):
        assert (event_id in lazy) == (event_id in full)
        lazy[event_id] = full[event_id] = position
    for event_id in [*asked, *head, *tail]:
        assert (event_id in lazy) == (event_id in full)
        assert lazy.get(event_id) == full.get(event_id)
    assert dict(lazy.items()) == full
    assert len(lazy) == len(full)


def _chain(segments: list[list[str]]) -> SnapshotPositions:
    texts = [json.dumps(ids, separators=(",", ":")).encode() for ids in segments]
    starts = [sum(map(len, segments[:at])) for at in range(len(segments))]
    ids = SnapshotIds(texts, sum(map(len, segments)), starts)
    return SnapshotPositions(ids, merge_id_indexes(id_index(ids) for ids in segments))


@given(
    st.lists(st.lists(IDS, max_size=8), min_size=1, max_size=6),
    st.lists(IDS, max_size=10),
    st.lists(IDS, max_size=10),
)
def test_a_chain_answers_equal_the_full_map(
    segments: list[list[str]], tail: list[str], asked: list[str]
) -> None:
    """A chain's ids (ADR 0044), one text and one CRC array per segment: every answer is the
    full map's (a later duplicate wins), before and after the map is built."""
    head = [event_id for ids in segments for event_id in ids]
    lazy, full = _chain(segments), dict(zip(head, range(len(head)), strict=True))
    for position, event_id in enumerate(tail, start=len(head)):
        assert (event_id in lazy) == (event_id in full)
        lazy[event_id] = full[event_id] = position
    for event_id in [*asked, *head, *tail]:
        assert (event_id in lazy) == (event_id in full)
        assert lazy.get(event_id) == full.get(event_id)
    assert not lazy.built  # answered from the segments
    assert dict(lazy.items()) == full
    assert len(lazy) == len(full)


def test_a_chain_answers_a_crc_collision_exactly() -> None:
    lazy = _chain([["plumless"], ["x"]])
    assert "buckeroo" not in lazy
    assert lazy.get("plumless") == 0
    assert not lazy.built


def test_a_new_id_is_answered_without_building_the_map() -> None:
    ids = [f"e-{i}" for i in range(1000)]
    lazy = _lazy(ids)
    assert "e-new" not in lazy
    assert lazy.get("e-new") is None
    lazy["e-undone"] = 1000
    del lazy["e-undone"]  # a prospective step rolled back
    lazy["e-new"] = 1000
    assert lazy["e-new"] == 1000
    assert "e-undone" not in lazy
    assert not lazy.built
    assert not lazy._ids.parsed
    assert "e-7" in lazy
    assert lazy["e-7"] == 7
    assert lazy.built


def test_a_crc_collision_is_answered_exactly() -> None:
    # "plumless" and "buckeroo" share a CRC-32: a "maybe" that builds the map, never a wrong yes
    lazy = _lazy(["plumless"])
    assert "buckeroo" not in lazy
    assert lazy.built
    assert lazy.get("plumless") == 0


def test_ids_that_do_not_match_their_count_are_a_typed_error_when_read() -> None:
    ids = SnapshotIds(b'["a","b"]', 3)
    assert len(ids) == 3
    with pytest.raises(StoreCorruptionError):
        list(ids)
    with pytest.raises(StoreCorruptionError):
        SnapshotPositions(ids, load_id_index(id_index(["a"]))).get("a")


def test_an_older_id_is_found_in_its_segment_without_the_map() -> None:
    """A chain's ids (ADR 0044): each id's position is found in the last segment holding its
    CRC, a later duplicate winning as in the full map; nothing builds the map."""
    texts = [id_index(["a", "b"]), id_index(["c", "a"]), id_index(["d"])]
    ids = SnapshotIds([b'["a","b"]', b'["c","a"]', b'["d"]'], 5, [0, 2, 4])
    positions = SnapshotPositions(ids, merge_id_indexes(texts))
    assert [positions.get(k) for k in "abcdx"] == [3, 1, 2, 4, None]
    assert "b" in positions
    assert "x" not in positions
    assert not positions.built
    assert not ids.parsed
    assert dict(positions) == {"a": 3, "b": 1, "c": 2, "d": 4}


def test_a_segment_whose_ids_do_not_match_its_range_is_corruption() -> None:
    texts = [id_index(["a", "b"]), id_index(["c"])]
    ids = SnapshotIds([b'["a","b"]', b'["c","e"]'], 3, [0, 2])
    positions = SnapshotPositions(ids, merge_id_indexes(texts))
    assert positions.get("a") == 0
    with pytest.raises(StoreCorruptionError):
        positions.get("c")
