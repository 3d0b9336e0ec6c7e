"""Docs stay honest: ADR structure and index, README commands."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADR_DIR = ROOT / "docs" / "adr"
SECTIONS = (
    "Status:",
    "## Context",
    "## Decision",
    "## Consequences",
    "## Considered options",
    "## Confirmation",
)


def _adrs() -> list[Path]:
    return sorted(p for p in ADR_DIR.glob("[0-9][0-9][0-9][0-9]-*.md"))


def test_every_adr_has_the_required_sections() -> None:
    index = (ADR_DIR / "README.md").read_text()
    assert _adrs(), "no ADRs found"
    for adr in _adrs():
        text = adr.read_text()
        for section in SECTIONS:
            assert section in text, f"{adr.name} lacks {section}"
        assert f"({adr.name})" in index, f"index does not list {adr.name}"


def test_adr_confirmations_name_existing_tests() -> None:
    for adr in _adrs():
        confirmation = adr.read_text().split("## Confirmation", 1)[1]
        for path in re.findall(r"`(tests/[^`:]+?)(?:::[^`]*)?`", confirmation):
            assert (ROOT / path).exists(), f"{adr.name} names missing {path}"


AMENDMENT = re.compile(r"^#+ Amend\w*.*$", re.M)
DATED_AMENDMENT = re.compile(r"^## Amendment \(\d{4}-\d{2}-\d{2}, issues? [^)]+\)(: .+)?$")
SUPERSEDED_STATUS = re.compile(
    r"^Status: superseded by \[ADR (\d{4})\]\((\d{4}-[^)]+\.md)\) \(\d{4}-\d{2}-\d{2}", re.M
)


def test_amendments_are_dated_and_superseded_adrs_name_their_successor() -> None:
    """ADR 0001 as amended (issue 22, part 7): an accepted ADR changes only by a dated
    amendment at its end or by being superseded, and then its status line, a dated note at its
    end and the index all name the successor, which exists."""
    index = (ADR_DIR / "README.md").read_text()
    superseded = 0
    for adr in _adrs():
        text = adr.read_text()
        for heading in AMENDMENT.findall(text):
            assert DATED_AMENDMENT.match(heading), f"{adr.name}: undated {heading!r}"
        status = SUPERSEDED_STATUS.search(text)
        if status is None:
            assert "Status: superseded" not in text, f"{adr.name}: successor not linked"
            continue
        superseded += 1
        number, successor = status.groups()
        assert successor.startswith(number), adr.name
        assert (ADR_DIR / successor).is_file(), adr.name
        note = text.split("\n## Superseded (", 1)
        assert len(note) == 2, f"{adr.name}: no closing note"
        assert f"]({successor})" in note[1], f"{adr.name}: the closing note names no successor"
        row = next(line for line in index.splitlines() if f"]({adr.name})" in line)
        assert f"superseded by {number}" in row, f"index row of {adr.name}"
    assert superseded >= 5


def test_readme_gives_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
