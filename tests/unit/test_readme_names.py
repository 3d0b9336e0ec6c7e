"""Every import in the README's examples, and every ``maka_es.…`` name it mentions, exists.

Why a test: the README is the first page a host reads, and its examples are copied as they are.
When the code was regrouped by capability (ADR 0017) its examples still imported from layer
folders that no longer existed; this test fails when a module or name the page shows moves.
The host API the README leaves out moved to docs/host-api.md (issue 22, part 7), so that page is
read the same way (its blocks that are not run included); the package layout block moved to
docs/architecture.md.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
HOST_API = (ROOT / "docs" / "host-api.md").read_text(encoding="utf-8")
PAGES = README + "\n" + HOST_API
LAYOUT_PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
IMPORT_LINE = re.compile(r"^(from maka_es[\w.]* import [\w, ]+|import maka_es[\w.]*)$", re.M)
#: A dotted ``maka_es`` name in inline code; a store file name (``maka_es.sqlite``) is not one.
DOTTED_NAME = re.compile(r"`(maka_es(?:\.\w+)+)`")
FILE_NAMES = frozenset({"maka_es.sqlite"})


def _imports() -> list[str]:
    return [line for block in PYTHON_BLOCK.findall(PAGES) for line in IMPORT_LINE.findall(block)]


def _dotted_names() -> list[str]:
    return sorted(set(DOTTED_NAME.findall(PAGES)) - FILE_NAMES)


def resolve(dotted: str) -> object:
    """The module or attribute ``dotted`` names (the longest importable module prefix, then
    attributes); ``AttributeError`` when it does not exist."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ImportError(dotted)


def test_the_readme_shows_imports_and_names() -> None:
    assert len(_imports()) >= 5
    assert len(_dotted_names()) >= 2


@pytest.mark.parametrize("statement", _imports())
def test_every_example_import_runs(statement: str) -> None:
    exec(statement, {})


@pytest.mark.parametrize("dotted", _dotted_names())
def test_every_mentioned_name_exists(dotted: str) -> None:
    assert resolve(dotted) is not None


def test_an_old_layer_folder_path_does_not_resolve() -> None:
    with pytest.raises(AttributeError, match="domain"):
        resolve("maka_es.domain.events.RuntimeEvent")
    with pytest.raises(AttributeError):
        resolve("maka_es.adapters.workspace.NoSuchInspector")


def _layout_entries() -> set[str]:
    """The ``src/maka_es/`` entries the Layout block lists (``wire/``, ``app.py``)."""
    block = LAYOUT_PAGE.split("## Layout", 1)[1].split("```", 2)[1]
    inside = block.split("src/maka_es/", 1)[1].split("\ndocs/", 1)[0]
    return set(re.findall(r"^  (\w+/|\w+\.py)", inside, re.M))


def test_the_layout_block_lists_exactly_the_packages_that_exist() -> None:
    src = ROOT / "src" / "maka_es"
    packages = {f"{path.name}/" for path in src.iterdir() if (path / "__init__.py").is_file()}
    listed = _layout_entries()
    assert {entry for entry in listed if entry.endswith("/")} == packages
    assert sorted(entry for entry in listed if not (src / entry.rstrip("/")).exists()) == []
