"""The library and its documents cite only what a clone of the repository contains.

Why a test: the code was first written against a behaviour spec and a design note that live
outside the repository, and about a hundred docstrings cited their section numbers; a reader of
a clone met dangling references everywhere. Docstrings and documents now cite
``docs/reference/<file>.md#<anchor>`` or an ADR (docs/reference/index.md#citing). This test
fails on a citation of an outside document and on a reference anchor that does not exist, so a
renamed section or a copied old docstring is caught where it is written.

``docs/reference/`` itself is not scanned for outside citations: it may describe the reference
runtime it is compatible with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
ADR_DIR = ROOT / "docs" / "adr"

#: What an outside citation looks like: a section sign (the project's documents use anchors,
#: never section numbers), or the path of the outside spec or design note.
OUTSIDE_CITATION = re.compile(r"spec §|§|design\.md|shared/spec|shared/design")

#: Files allowed to cite outside documents while a rewrite is in flight (none now): an entry whose
#: file no longer cites anything outside fails
#: ``test_the_pending_list_only_holds_files_that_still_need_it``.
PENDING_CITATION_REWRITE: frozenset[str] = frozenset()

#: ``docs/reference/<file>.md#<anchor>`` in any text; a Markdown link into the reference from
#: outside it (``](../reference/wire.md#lanes)``); a link between two reference files.
REFERENCE_CITATION = re.compile(r"docs/reference/([a-z0-9-]+\.md)(?:#([A-Za-z0-9_-]+))?")
LINK_INTO_REFERENCE = re.compile(r"\]\((?:\.\./)*reference/([a-z0-9-]+\.md)#([A-Za-z0-9_-]+)\)")
LINK_INSIDE_REFERENCE = re.compile(r"\]\(([a-z0-9-]+\.md)#([A-Za-z0-9_-]+)\)")
ADR_CITATION = re.compile(r"\bADR (\d{4})\b")
ANCHOR = re.compile(r'<a id="([A-Za-z0-9_-]+)"></a>')


def _text_files(root: Path) -> Iterable[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".md", ".toml", ".txt", ".cfg"}:
            yield path


def _scanned() -> list[Path]:
    """Every text file under ``src/`` and ``docs/`` except ``docs/reference/``."""
    files = [*_text_files(ROOT / "src" / "maka_es"), *_text_files(ROOT / "docs")]
    return [path for path in files if not path.is_relative_to(REFERENCE)]


def outside_citations(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` that cites an outside document."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if OUTSIDE_CITATION.search(line)
    ]


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_nothing_outside_docs_reference_cites_an_outside_document() -> None:
    scanned = _scanned()
    assert len(scanned) > 100, "the library and docs were not found"
    found = [
        f"{_relative(path)}:{number}: {line}"
        for path in scanned
        if _relative(path) not in PENDING_CITATION_REWRITE
        for number, line in outside_citations(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_pending_list_only_holds_files_that_still_need_it() -> None:
    stale = [
        name
        for name in sorted(PENDING_CITATION_REWRITE)
        if not (ROOT / name).is_file() or not outside_citations((ROOT / name).read_text())
    ]
    assert stale == [], "remove these from PENDING_CITATION_REWRITE"


@pytest.mark.parametrize(
    ("line", "cites"),
    [
        ('"""Startup recovery (spec §4.8): make every interrupted run terminal."""', True),
        ("# --- content (§1.2) ---", True),
        ("How a catch-up works (design §7, see /work/shared/design.md)", True),
        ("the seed lives in shared/spec/maka-runtime-resume.md", True),
        ("see docs/reference/continuation.md#startup-recovery and ADR 0012", False),
    ],
)
def test_the_check_recognises_an_outside_citation(line: str, cites: bool) -> None:
    assert bool(outside_citations(line)) is cites


def _anchors() -> dict[str, set[str]]:
    return {
        path.name: set(ANCHOR.findall(path.read_text(encoding="utf-8")))
        for path in REFERENCE.glob("*.md")
    }


def reference_offenders(
    text: str, anchors: dict[str, set[str]], *, inside_reference: bool = False
) -> list[str]:
    """Citations and links in ``text`` to a reference file or anchor that does not exist."""
    link = LINK_INSIDE_REFERENCE if inside_reference else LINK_INTO_REFERENCE
    cited = [*REFERENCE_CITATION.findall(text), *link.findall(text)]
    return sorted(
        {
            f"{name}#{anchor}" if anchor else name
            for name, anchor in cited
            if name not in anchors or (anchor and anchor not in anchors[name])
        }
    )


def _citing_files() -> list[Path]:
    """The library, the docs (reference included), the tests and the README; not this file,
    whose examples are deliberately broken."""
    files = [*_text_files(ROOT / "src" / "maka_es"), *_text_files(ROOT / "docs")]
    files += [*_text_files(ROOT / "tests"), ROOT / "README.md"]
    return [path for path in files if path != Path(__file__).resolve()]


def test_every_reference_citation_names_an_existing_anchor() -> None:
    anchors = _anchors()
    assert "startup-recovery" in anchors["continuation.md"]
    broken = {
        _relative(path): offenders
        for path in _citing_files()
        if (
            offenders := reference_offenders(
                path.read_text(encoding="utf-8"),
                anchors,
                inside_reference=path.parent == REFERENCE,
            )
        )
    }
    assert broken == {}


def test_the_anchor_check_flags_a_missing_file_or_anchor() -> None:
    anchors = {"wire.md": {"lanes"}}
    text = (
        "docs/reference/wire.md#lanes, docs/reference/wire.md#gone, "
        "docs/reference/nowhere.md, [x](../reference/wire.md#lost), [y](wire.md#kept)"
    )
    assert reference_offenders(text, anchors) == ["nowhere.md", "wire.md#gone", "wire.md#lost"]
    inside = reference_offenders(text, anchors, inside_reference=True)
    assert inside == ["nowhere.md", "wire.md#gone", "wire.md#kept"]


def test_every_cited_adr_exists() -> None:
    numbers = {path.name[:4] for path in ADR_DIR.glob("[0-9][0-9][0-9][0-9]-*.md")}
    files = _citing_files()
    missing = sorted(
        f"{_relative(path)}: ADR {number}"
        for path in files
        for number in set(ADR_CITATION.findall(path.read_text(encoding="utf-8")))
        if number not in numbers
    )
    assert missing == []
