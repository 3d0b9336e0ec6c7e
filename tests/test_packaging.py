"""Packaging a new user relies on: a version attribute, an SPDX license, a ``testing`` extra."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import maka_es

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_attribute_is_the_installed_version() -> None:
    assert maka_es.__version__ == PYPROJECT["project"]["version"]
    assert maka_es.__version__ == importlib.metadata.version("maka_es")
    assert "__version__" in maka_es.__all__


def test_license_is_an_spdx_expression() -> None:
    """The table form (``{text = ...}``) is deprecated by setuptools and warned on every build;
    the SPDX string needs setuptools 77 to build."""
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]
    assert importlib.metadata.metadata("maka_es")["License-Expression"] == "Apache-2.0"


def _third_party_imports(package: Path) -> set[str]:
    found: set[str] = set()
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def test_the_testing_extra_declares_what_maka_es_testing_imports() -> None:
    assert "hypothesis" in _third_party_imports(ROOT / "src" / "maka_es" / "testing")
    testing = PYPROJECT["project"]["optional-dependencies"]["testing"]
    assert any(requirement.startswith("hypothesis") for requirement in testing)
    installed = importlib.metadata.metadata("maka_es").get_all("Requires-Dist") or []
    assert any(r.startswith("hypothesis") and 'extra == "testing"' in r for r in installed)


def test_the_library_imports_and_runs_on_sqlite_without_the_postgres_extra(tmp_path: Path) -> None:
    """psycopg is the ``postgres`` extra: a host on SQLite must import and use maka_es without
    it (the PostgreSQL read model and adapter load only when a PostgreSQL store is chosen)."""
    script = (
        "import sys\n"
        "for name in ('psycopg', 'psycopg_pool', 'psycopg_binary'):\n"
        "    sys.modules[name] = None  # any import of it now raises ImportError\n"
        "from maka_es import RuntimeApplication\n"
        f"app = RuntimeApplication.open({str(tmp_path / 'runtime.sqlite')!r})\n"
        "app.open_session('s1', '/workspace')\n"
        "app.recover()\n"
        "app.close()\n"
        "print(sorted(m for m in sys.modules if m.startswith('maka_es.adapters.postgres')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_postgresql_store_without_the_extra_is_a_typed_refusal() -> None:
    """Without psycopg a PostgreSQL URL says what to install (``store_unavailable``,
    ``driver_missing``), never an ImportError from deep inside eventsourcing."""
    script = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "from maka_es import RuntimeApplication\n"
        "from maka_es.errors import StoreUnavailableError\n"
        "try:\n"
        "    RuntimeApplication.open('postgresql://maka:secret@127.0.0.1:1/agents')\n"
        "except StoreUnavailableError as exc:\n"
        "    text = str(exc)\n"
        "    print(exc.code, exc.detail['reason'], 'secret' in text, 'maka_es[postgres]' in text)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["store_unavailable", "driver_missing", "False", "True"]
