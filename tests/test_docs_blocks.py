"""Every code block of the documentation runs, and the site builds in strict mode (ADR 0031).

Why: a page's example is copied as it is; when the code moves on, a block that is only read
rots silently. Here each page of docs/**/*.md and the README is executed:

* ``python`` blocks run in order in one namespace per page, in a fresh temporary cwd (with
  ``examples/`` on ``sys.path``), preceded by any ``<!-- invisible-code-block: python ... -->``
  comment (setup the reader need not see, the convention of Sybil);
* ``bash`` blocks run whole, as a ``bash -euo pipefail`` script in the page's cwd with the
  project's ``maka-es`` first on PATH (a session of commands, as docs/cli.md shows one);
* ``console``/``sh`` blocks: each ``$ maka-es ...`` line runs against the installed console
  script (the other lines are installation or ``make`` commands shown as text);
* a block right after ``<!-- no-exec: reason -->`` is not run; their number per page is pinned
  in :data:`NO_EXEC` so it cannot grow silently.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
SHELLS = frozenset({"console", "bash", "sh", "shell"})
#: A fence (any indentation), an invisible block or a no-exec marker, in page order.
TOKEN = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$"
    r"|<!--\s*invisible-code-block:\s*python\n(?P<hidden>.*?)-->"
    r"|<!--\s*no-exec:\s*(?P<reason>.*?)\s*-->",
    re.S | re.M,
)
#: Blocks deliberately not run, per page (relative path): raise only with a reason in the page.
NO_EXEC = {"docs/host-api.md": 2, "docs/configuration.md": 1}


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int
    skipped: str | None = None


def blocks(page: Path) -> list[Block]:
    """The page's blocks in order (invisible blocks as ``python``)."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    reason: str | None = None
    for match in TOKEN.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        if match["reason"] is not None:
            reason = match["reason"]
            continue
        if match["hidden"] is not None:
            found.append(Block("python", match["hidden"], line))
            continue
        body = re.sub(rf"^{match['indent']}", "", match["body"], flags=re.M)
        found.append(Block(match["lang"], body, line, reason))
        reason = None
    return found


def _relative(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _run_python(page: Path, block: Block, namespace: dict[str, object]) -> None:
    code = compile("\n" * (block.line - 1) + block.code, _relative(page), "exec")
    exec(code, namespace)


def _run_bash(page: Path, block: Block, env: dict[str, str]) -> None:
    """Run a ``bash`` block as one script in ``env``, then keep what it exported in ``env``, so
    a page's blocks read as one shell session; a failure names the page, line and output."""
    dump = Path(f".docs-env-{block.line}")
    script = f'{block.code}\nenv -0 > "{dump}"\n'
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, (
        f"{_relative(page)}:{block.line}: bash block exited {done.returncode}\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )
    pairs = (item.partition("=") for item in dump.read_text().split("\0") if item)
    env.clear()
    env.update({key: value for key, _, value in pairs})
    dump.unlink()


def _run_shell(block: Block) -> None:
    for raw in block.code.splitlines():
        if not raw.startswith("$ maka-es"):
            continue
        command = shlex.split(raw[2:])
        command[0] = str(Path(sys.executable).with_name("maka-es"))  # [project.scripts]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_code_block_of_the_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    namespace: dict[str, object] = {"__name__": f"docs_page_{page.stem}"}
    shell_env = dict(
        os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    )
    for block in blocks(page):
        if block.skipped is not None:
            continue
        if block.lang == "python":
            _run_python(page, block, namespace)
        elif block.lang == "bash":
            _run_bash(page, block, shell_env)
        elif block.lang in SHELLS:
            _run_shell(block)


def test_blocks_not_run_are_exactly_the_pinned_ones() -> None:
    counted = {
        _relative(page): sum(1 for b in blocks(page) if b.skipped is not None) for page in PAGES
    }
    assert {page: n for page, n in counted.items() if n} == NO_EXEC


def test_the_parser_sees_fences_invisible_blocks_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n<!-- invisible-code-block: python\nx = 1\n-->\n```python\nassert x == 1\n```\n"
        "<!-- no-exec: needs a server -->\n```python\nraise SystemExit\n```\n"
        "- item\n\n  ```console\n  $ maka-es sessions\n  ```\n"
    )
    found = blocks(page)
    assert [(b.lang, b.skipped) for b in found] == [
        ("python", None),
        ("python", None),
        ("python", "needs a server"),
        ("console", None),
    ]
    assert found[1].line == 6
    assert found[3].code == "$ maka-es sessions\n"


def test_a_failing_block_fails_with_its_page_and_line(tmp_path: Path) -> None:
    page = ROOT / "docs" / "x.md"
    with pytest.raises(ZeroDivisionError) as failure:
        _run_python(page, Block("python", "a = 1\nb = a / 0\n", 10), {})
    assert failure.traceback[-1].lineno + 1 == 11
    assert str(failure.traceback[-1].path).endswith("docs/x.md")


def _docs_extra_installed() -> bool:
    return all(find_spec(name) is not None for name in ("mkdocs", "material", "mkdocstrings"))


@pytest.fixture
def mkdocs_command() -> list[str]:
    if not _docs_extra_installed():
        if os.environ.get("CI"):
            pytest.fail("CI=true but the docs extra is not installed: the site must build in CI")
        pytest.skip("DOCS SITE NOT BUILT: the docs extra is missing (pip install -e '.[docs]')")
    return [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
    ]  # never --quiet: it hides the warnings strict counts


def _build(command: list[str], config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [*command, "-f", str(config), "-d", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


def test_the_site_builds_in_strict_mode(mkdocs_command: list[str], tmp_path: Path) -> None:
    built = _build(mkdocs_command, ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert "RuntimeApplication" in (tmp_path / "site" / "api" / "index.html").read_text()


@pytest.mark.parametrize(
    "broken",
    ["[gone](no-such-page.md)", "::: maka_es.no_such_module"],
    ids=["link", "api-reference"],
)
def test_a_broken_reference_fails_the_build(
    mkdocs_command: list[str], tmp_path: Path, broken: str
) -> None:
    """The same configuration (INHERIT) over one page with a broken link or API reference."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# page\n\n{broken}\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nnav:\n  - index.md\n"
        f"plugins:\n  - mkdocstrings:\n      handlers:\n        python:\n"
        f"          paths: [{ROOT / 'src'}]\n"
    )
    built = _build(mkdocs_command, config, tmp_path / "site")
    assert built.returncode != 0, built.stderr
    target = broken.strip("[]():# ").split("(")[-1].split()[-1]
    assert target in built.stdout + built.stderr
