"""The core and its extras (ADR 0040): what each part imports, and what a missing extra says.

Why subprocesses with a meta-path blocker: the suite's venv has every extra installed, so a
missing one is simulated in a fresh interpreter whose first finder refuses the extra's modules,
exactly as an interpreter without them would (``ModuleNotFoundError`` naming the module). The
wheel installed without the extras is tests/test_wheel.py.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import maka_es

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(maka_es.__file__).parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CLI_EXTRA = ("typer", "rich", "jinja2")
#: What the library outside its rings may import beyond the standard library: the core's
#: dependencies (and pydantic's own core), and psycopg, the ``postgres`` extra, which is
#: imported only when a PostgreSQL store is opened.
CORE_IMPORTS = {
    "eventsourcing",
    "pydantic",
    "pydantic_core",
    "pyuca",
    "orjson",
    "psycopg",
    "psycopg_pool",
}
#: The rings: their own extras (``cli``; the kit's ``testing``, loaded by pytest).
RINGS = {
    "cli": {"typer", "rich", "jinja2"},
    "report": {"jinja2"},
    "testing": {"hypothesis", "pytest"},  # the plugin only ever loads inside pytest
    # the framework integrations (issue 24), each behind its own extra
    "integrations": {"pydantic_ai", "agents", "openai", "httpx", "opentelemetry"},
    # the spans (ADR 0043): the OpenTelemetry API, imported on first use, optional
    "telemetry.py": {"opentelemetry"},
}

BLOCKER = """
import importlib.abc, sys
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
"""


def _python(blocked: tuple[str, ...], body: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a fresh interpreter where ``blocked`` cannot be imported."""
    script = f"BLOCKED = {set(blocked)!r}\n{BLOCKER}\n{body}"
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _third_party(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"maka_es"}


def test_the_core_declares_only_the_store_the_models_and_the_collation() -> None:
    core = {
        r.split(">")[0].split("<")[0].split("[")[0] for r in PYPROJECT["project"]["dependencies"]
    }
    assert core == {"eventsourcing", "pydantic", "pyuca", "orjson"}
    cli = PYPROJECT["project"]["optional-dependencies"]["cli"]
    assert sorted(r.split(">")[0] for r in cli) == ["jinja2", "rich", "typer"]
    assert PYPROJECT["project"]["scripts"]["maka-es"] == "maka_es.console:main"
    dev_self = [
        r for r in PYPROJECT["project"]["optional-dependencies"]["dev"] if r.startswith("maka_es[")
    ]
    assert len(dev_self) == 1
    assert {"cli", "testing", "docs"} <= set(dev_self[0][len("maka_es[") : -1].split(","))


def test_the_library_outside_its_rings_imports_only_the_core() -> None:
    """An AST scan of src: a new third-party import outside cli/, report/ and testing/ must be
    a core dependency, or the core-only wheel breaks."""
    seen: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        ring = path.relative_to(SRC).parts[0]
        allowed = CORE_IMPORTS | RINGS.get(ring, set())
        extra = _third_party(path) - allowed
        if extra:
            seen[str(path.relative_to(SRC))] = extra
    assert seen == {}


def test_importing_the_cli_without_its_extra_is_a_typed_error_naming_the_pip_line() -> None:
    body = (
        "from maka_es.errors import MissingExtraError\n"
        "try:\n"
        "    import maka_es.cli.main\n"
        "except MissingExtraError as exc:\n"
        "    print(exc.code, exc.detail['extra'], exc.detail['module'])\n"
        "    print(exc.args[0])\n"
    )
    done = _python(CLI_EXTRA, body)
    assert done.returncode == 0, done.stderr
    code_line, message = done.stdout.splitlines()
    assert code_line == "extra_missing cli typer"
    assert message.endswith("pip install 'maka_es[cli]'")


def test_importing_the_report_without_jinja2_is_a_typed_error_naming_the_pip_line() -> None:
    body = (
        "from maka_es.errors import MissingExtraError\n"
        "try:\n"
        "    from maka_es.report import render_run_report\n"
        "except MissingExtraError as exc:\n"
        "    print(exc.code, exc.detail['extra'], exc.detail['module'], exc.args[0])\n"
    )
    done = _python(("jinja2",), body)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("extra_missing cli jinja2 the HTML run report")
    assert done.stdout.rstrip().endswith("pip install 'maka_es[cli]'")


def test_the_console_script_without_the_cli_extra_prints_one_error_line_and_exits_1() -> None:
    body = "import sys\nfrom maka_es.console import main\nsys.argv = ['maka-es', 'runs']\nmain()\n"
    done = _python(CLI_EXTRA, body)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error [extra_missing]: the maka-es command line (maka_es.cli) needs the cli extra "
        "(typer is not installed). what to do: pip install 'maka_es[cli]'"
    ]


def test_the_console_script_with_the_extra_is_the_cli() -> None:
    body = (
        "import sys\nfrom maka_es.console import main\nsys.argv = ['maka-es', '--help']\nmain()\n"
    )
    done = _python((), body)
    assert done.returncode == 0, done.stderr
    assert "Usage: maka-es" in done.stdout


def test_the_core_runs_on_sqlite_without_the_cli_and_testing_extras(tmp_path: Path) -> None:
    body = (
        "from maka_es import RuntimeApplication\n"
        f"app = RuntimeApplication.open({str(tmp_path / 'runtime.sqlite')!r})\n"
        "app.open_session('s1', '/workspace')\n"
        "print(app.recover().repairs)\n"
        "app.close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in BLOCKED))\n"
    )
    done = _python((*CLI_EXTRA, "hypothesis"), body)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["()", "[]"]


def _imported_by(statement: str) -> set[str]:
    """The modules ``statement`` imports in a fresh interpreter (``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC.parent)},
    )
    rows = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time")]
    return {row[-1].strip() for row in rows if len(row) == 3}


HEAVY = ("maka_es.app", "eventsourcing", "hypothesis", "pydantic", "typer", "rich", "jinja2")


@pytest.mark.parametrize("module", ["maka_es", "maka_es.testing.pytest_plugin"])
def test_loading_the_package_or_the_pytest_plugin_imports_nothing_heavy(module: str) -> None:
    """Every pytest session of every project with maka_es installed loads the plugin: it must
    not pay for the store (``import maka_es`` took 1.9 s under ``-X importtime`` before)."""
    imported = _imported_by(f"import {module}")
    assert module in imported  # the probe did see the import
    assert sorted(name for name in imported if name.split(".")[0] in HEAVY or name in HEAVY) == []


def test_the_root_exports_load_on_first_use_from_the_modules_they_name() -> None:
    """``maka_es._EXPORTS`` equals the ``TYPE_CHECKING`` imports type checkers read, and every
    name of ``__all__`` resolves to its module's object."""
    tree = ast.parse((SRC / "__init__.py").read_text(encoding="utf-8"))
    [guarded] = [
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n)
    ]
    typed = {
        alias.asname or alias.name: node.module
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == maka_es._EXPORTS
    assert sorted(set(maka_es.__all__) - {"__version__"}) == sorted(typed)
    for name, module in typed.items():
        assert getattr(maka_es, name) is getattr(sys.modules[str(module)], name)
    assert set(maka_es.__all__) <= set(dir(maka_es))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = maka_es.not_a_name


def test_the_example_agents_scripted_answers_are_real_chat_completions() -> None:
    """The packaged agent imports no SDK; what it answers is the JSON an OpenAI
    ``ChatCompletion`` validates as it is (openai is a dev dependency here)."""
    from openai.types.chat import ChatCompletion

    from maka_es.example_agent import ScriptedChatClient

    client = ScriptedChatClient()
    user = {"role": "user", "content": "go"}
    tool = {"role": "tool", "content": json.dumps({"port": 4000})}
    for messages in ([user], [user, tool]):
        answer = client.create(messages=messages)
        parsed = ChatCompletion.model_validate(answer)
        assert parsed.model_dump(mode="json", exclude_unset=True) == answer
    assert parsed.choices[0].finish_reason == "tool_calls"
