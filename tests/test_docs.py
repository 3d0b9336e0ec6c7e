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


def test_readme_gives_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
