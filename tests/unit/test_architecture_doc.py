"""docs/architecture.md names real files and links, and each capability row names its entry modules.

Why: a map that names a moved or missing file sends a new reader the wrong way; when a module
is added, split or moved, this test says which line of the page to update.
"""

from __future__ import annotations

import re
from pathlib import Path

import maka_es

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SRC = Path(maka_es.__file__).parent
CAPABILITIES = (
    "wire",
    "tooljournal",
    "ledger",
    "resume",
    "providers",
    "continuation",
    "recovery",
    "adapters",
    "report",
    "cli",
)
MODULE_RE = re.compile(r"`((?:" + "|".join(CAPABILITIES) + r")/(?:model/)?[a-z_]+\.py)`")
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_named_module_exists() -> None:
    named = set(MODULE_RE.findall(DOC.read_text(encoding="utf-8")))
    assert named, "the page names no module at all"
    assert sorted(path for path in named if not (SRC / path).is_file()) == []


def _entry_modules() -> dict[str, list[str]]:
    """The modules each capability row of section 1 names as where to start reading."""
    rows: dict[str, list[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| \*\*([a-z]+)\*\* \| ([^|]*) \|", line)
        if match and match.group(1) in CAPABILITIES:
            rows[match.group(1)] = MODULE_RE.findall(match.group(2))
    return rows


def test_each_capability_names_two_to_four_entry_modules_of_its_own() -> None:
    """Issue 22: the map names where to start, not every file (a module's docstring says
    what it holds); a capability without a row, or with a row naming another capability's
    module, fails."""
    rows = _entry_modules()
    assert sorted(rows) == sorted(CAPABILITIES)
    for capability, modules in rows.items():
        assert 2 <= len(modules) <= 4, (capability, modules)
        assert all(module.startswith(f"{capability}/") for module in modules), capability
        assert all((SRC / module).is_file() for module in modules), capability


def test_every_relative_link_resolves() -> None:
    links = LINK_RE.findall(DOC.read_text(encoding="utf-8"))
    assert links, "the page links nowhere"
    missing = [link for link in links if not (DOC.parent / link).exists()]
    assert missing == []
