"""The typed shape of one registered code, and the registry that holds them.

Why typed entries instead of a table in a document: the registry is checked against the code
(tests scan ``src`` for every code the library emits and every ``Literal`` vocabulary), and
``docs/exceptions.md`` is generated from it, so the page cannot drift from what is raised.
Why one entry per ``(kind, code)`` and not per code: a few strings are deliberately reused
with a different meaning in another vocabulary (``runtime_offset_mismatch`` is both a store
refusal and a park reason; ``workspace_identity_changed`` both a marker error and a
revalidation refusal), and a host reads them in different places.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, get_args

from maka_es.errors import MakaError

#: Where a host meets the code: ``error`` is ``MakaError.code`` of a raised refusal;
#: ``revalidation`` is ``ContinuationRevalidationError.code`` (execution refused just before it
#: would start); ``park_reason`` is one of a plan's ``rejectionReasons``; ``diagnostic`` is a
#: ``diagnostics[].code`` (of a plan or a composite replay) that is never a reason itself.
CodeKind = Literal["error", "revalidation", "park_reason", "diagnostic"]
CODE_KINDS: Final[tuple[CodeKind, ...]] = get_args(CodeKind)

_CODE_RE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
#: A module path below ``src/maka_es/`` (``ledger/run_append.py``), as ``fires_in`` lists it.
_MODULE_RE: Final = re.compile(r"[a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*\.py")
#: Kinds whose codes travel on a raised exception (so ``raised_by`` names its class).
_RAISED_KINDS: Final = frozenset({"error", "revalidation"})


@dataclass(frozen=True, slots=True)
class CodeEntry:
    """One stable code: what it means and what a host should do when it meets it.

    ``raised_by`` lists the exception classes that carry the code (every class whose
    ``default_code`` it is, and every class raised with it as an explicit ``code``); it is
    empty for park reasons and diagnostics, which are data in a plan, not exceptions.
    ``fires_in`` names the library modules (below ``src/maka_es/``) where the code fires and
    ``see`` where the behaviour reference says when (filled in from :mod:`maka_es.codes.places`,
    whose test checks ``fires_in`` against the source). Checked on construction, so a
    malformed entry fails at import rather than in a page.
    """

    code: str
    kind: CodeKind
    meaning: str
    host_action: str
    raised_by: tuple[type[MakaError], ...] = ()
    fires_in: tuple[str, ...] = ()
    see: str = ""

    def __post_init__(self) -> None:
        if not _CODE_RE.fullmatch(self.code):
            raise ValueError(f"code {self.code!r} is not a snake_case identifier")
        if self.kind not in CODE_KINDS:
            raise ValueError(f"{self.code}: unknown kind {self.kind!r}")
        for label, text in (("meaning", self.meaning), ("host_action", self.host_action)):
            if not text.strip() or "|" in text or "\n" in text:
                raise ValueError(f"{self.code}: {label} must be one non-empty line without '|'")
        if "|" in self.see or "\n" in self.see:
            raise ValueError(f"{self.code}: see must be one line without '|'")
        for module in self.fires_in:
            if not _MODULE_RE.fullmatch(module):
                raise ValueError(f"{self.code}: {module!r} is not a module path below maka_es/")
        if (self.kind in _RAISED_KINDS) != bool(self.raised_by):
            raise ValueError(f"{self.code}: raised_by must be given exactly for raised kinds")
        for cls in self.raised_by:
            if not (isinstance(cls, type) and issubclass(cls, MakaError)):
                raise ValueError(f"{self.code}: {cls!r} is not a MakaError subclass")


class CodeRegistry:
    """Every registered code, in registration order, unique per ``(kind, code)``."""

    def __init__(self, entries: Iterable[CodeEntry]) -> None:
        self._entries = tuple(entries)
        self._by_key: dict[tuple[CodeKind, str], CodeEntry] = {}
        for entry in self._entries:
            key = (entry.kind, entry.code)
            if key in self._by_key:
                raise ValueError(f"{entry.kind} code {entry.code!r} is registered twice")
            self._by_key[key] = entry

    @property
    def entries(self) -> tuple[CodeEntry, ...]:
        return self._entries

    def get(self, kind: CodeKind, code: str) -> CodeEntry | None:
        """The entry of ``code`` in vocabulary ``kind``, or ``None`` if it is not registered."""
        return self._by_key.get((kind, code))

    def lookup(self, code: str) -> tuple[CodeEntry, ...]:
        """Every entry for ``code``, whatever its kind (a host holding a bare string)."""
        return tuple(entry for entry in self._entries if entry.code == code)

    def codes(self, kind: CodeKind | None = None) -> frozenset[str]:
        """The registered codes of ``kind`` (all kinds when ``None``)."""
        return frozenset(e.code for e in self._entries if kind is None or e.kind == kind)

    def of_kind(self, kind: CodeKind) -> tuple[CodeEntry, ...]:
        return tuple(entry for entry in self._entries if entry.kind == kind)


#: A meaning alone (the group's host action applies), or ``(meaning, host action)``.
Described = str | tuple[str, str]


def group(
    kind: CodeKind,
    action: str,
    described: Mapping[str, Described],
    *raised_by: type[MakaError],
) -> tuple[CodeEntry, ...]:
    """Entries that share a kind, the classes that raise them and (by default) one host action.

    Why a helper: most codes of one family call for the same response (every bundle code means
    "the host built a wrong bundle"), so the action is written once and overridden where a code
    needs its own.
    """
    entries = []
    for code, text in described.items():
        meaning, own_action = (text, action) if isinstance(text, str) else text
        entries.append(CodeEntry(code, kind, meaning, own_action, tuple(raised_by)))
    return tuple(entries)


def error(code: str, meaning: str, action: str, *raised_by: type[MakaError]) -> CodeEntry:
    """One ``error`` entry with its own host action."""
    return CodeEntry(code, "error", meaning, action, raised_by)
