"""A restored run's older event ids, parsed and mapped only when a command needs them (ADR 0032).

Why: the first command after reopening a 100k-event run spent most of its time parsing the
snapshot's 100k ids and building the id -> position map, although a plain append only asks
whether its new event's id is already committed. The snapshot stores, next to the ids, a
sorted array of their CRC-32 values (:func:`id_index`); :class:`HeadPositions` answers "not
committed" from it with a binary search, and builds the exact map on the first id whose CRC is
in the array (a duplicate, or a rare collision) or on any other use. A false "maybe" only costs
the map; a committed id is always in the array, so no answer differs from the full map's.
The body holding both is verified by its digest before it is used (ADR 0032). Pure.
"""

from __future__ import annotations

import base64
import json
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from maka_es.errors import StoreCorruptionError

__all__ = ["HeadIds", "HeadPositions", "id_index", "load_id_index"]


def _crc(event_id: str) -> int:
    return zlib.crc32(event_id.encode("utf-8", "surrogatepass"))


def id_index(ids: Sequence[str]) -> str:
    """The sorted CRC-32 values of ``ids`` as base64 of little-endian 32-bit words."""
    words = array("I", sorted({_crc(event_id) for event_id in ids}))
    if sys.byteorder == "big":
        words.byteswap()
    return base64.b64encode(words.tobytes()).decode()


def load_id_index(text: bytes | str) -> array[int]:
    """The array :func:`id_index` wrote (``ValueError``: not one)."""
    words = array("I")
    if words.itemsize != 4:
        raise ValueError("no 32-bit array type on this platform")
    words.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder == "big":
        words.byteswap()
    return words


class HeadIds(Sequence[str]):
    """The ordered ids of a restored run's older events: their count at once, the ids
    themselves parsed from the snapshot's JSON text on first use."""

    __slots__ = ("_count", "_ids", "_text")

    def __init__(self, text: bytes, count: int) -> None:
        self._text, self._count = text, count
        self._ids: list[str] | None = None

    @property
    def parsed(self) -> bool:
        """Probe: the ids were parsed."""
        return self._ids is not None

    def _list(self) -> list[str]:
        ids = self._ids
        if ids is None:
            ids = json.loads(self._text)
            if (
                not isinstance(ids, list)
                or len(ids) != self._count
                or not all(isinstance(i, str) for i in ids)
            ):
                raise StoreCorruptionError("a run snapshot's event ids do not match its count")
            self._ids = ids
        return ids

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self._list()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HeadIds | list | tuple):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class HeadPositions(dict[str, int]):
    """``ResolverState._positions`` of a restored state: starts empty (ids stepped after the
    restore go in as usual) and answers a head id's membership from the CRC index; builds the
    full map (head ids first, later positions win) when an answer needs it."""

    __slots__ = ("_full", "_ids", "_index")

    def __init__(self, ids: HeadIds, index: array[int]) -> None:
        super().__init__()
        self._ids, self._index, self._full = ids, index, False

    @property
    def built(self) -> bool:
        """Probe: the full map was built."""
        return self._full

    def _maybe_head(self, key: object) -> bool:
        if self._full or not isinstance(key, str):
            return False
        crc, index = _crc(key), self._index
        at = bisect_left(index, crc)
        return at < len(index) and index[at] == crc

    def _build(self) -> None:
        if self._full:
            return
        self._full = True
        after = dict.copy(self)
        dict.clear(self)
        dict.update(self, zip(self._ids, range(len(self._ids)), strict=True))
        dict.update(self, after)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        if not self._maybe_head(key):
            return False
        self._build()
        return dict.__contains__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return dict.__getitem__(self, key)
        return default

    def __getitem__(self, key: str) -> int:
        if key in self:
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def __delitem__(self, key: str) -> None:
        """Undoing a prospective step's new id (``ResolverState._put``) builds nothing: an id
        put after the restore while the map was not built is not a head id (its ``in`` check
        would have built it)."""
        if not self._full and not dict.__contains__(self, key):
            self._build()
        dict.__delitem__(self, key)


def _building(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def call(self: HeadPositions, *args: Any, **kwargs: Any) -> Any:
        self._build()
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


# Every other reader of the map sees the full map.
for _name in (
    "__iter__", "__len__", "__reversed__", "__repr__", "__eq__", "__ne__", "__or__",
    "keys", "values", "items", "copy", "pop", "popitem", "setdefault",
):  # fmt: skip
    setattr(HeadPositions, _name, _building(_name))
