"""docs/architecture.md names real files and links, and every capability module appears in it.

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
MODULE_RE = re.compile(r"`((?:" + "|".join(CAPABILITIES) + r")/[a-z_]+\.py)`")
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_named_module_exists() -> None:
    named = set(MODULE_RE.findall(DOC.read_text(encoding="utf-8")))
    assert named, "the page names no module at all"
    assert sorted(path for path in named if not (SRC / path).is_file()) == []


def test_every_capability_module_is_named() -> None:
    named = set(MODULE_RE.findall(DOC.read_text(encoding="utf-8")))
    modules = {
        str(path.relative_to(SRC))
        for capability in CAPABILITIES
        for path in (SRC / capability).glob("*.py")
        if path.name != "__init__.py"
    }
    assert sorted(modules - named) == []


def test_every_relative_link_resolves() -> None:
    links = LINK_RE.findall(DOC.read_text(encoding="utf-8"))
    assert links, "the page links nowhere"
    missing = [link for link in links if not (DOC.parent / link).exists()]
    assert missing == []
