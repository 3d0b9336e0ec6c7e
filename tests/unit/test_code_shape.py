"""Code shape: no module under ``src/maka_es`` over 1,000 lines, no function over 60.

Why a test: the redesign (issue 10) organises the library so that a reader can hold one module
and one function in their head; the limits only stay true if something fails when they are
broken. Counting is plain and AST-based: a module's lines are its text lines, a function's lines
run from its ``def`` line to its last line (decorators excluded), and a nested function counts
on its own as well as inside its parent. The failure message lists every offender, so one run
shows the whole backlog.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 60

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "maka_es"

#: Modules reshaped on the split-core branch of the redesign, checked one by one (the whole
#: library is checked too, by the test below, since the last splits landed).
RESHAPED_MODULES = (
    "wire/codec.py",
    "wire/events.py",
    "resume/plan.py",
    "resume/plan.py",
    "resume/failpoint_catalog.py",
    "adapters/jsonl.py",
    "recovery/model/status_store.py",
    "adapters/recovery_status.py",
    "adapters/workspace.py",
    "adapters/confined_fs.py",
    "testing/strategies.py",
)


@dataclass(frozen=True)
class Offender:
    """One module or function over its limit; ``name`` is empty for a whole module."""

    path: Path
    line: int
    name: str
    length: int
    limit: int

    def __str__(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        what = f"{self.name} has" if self.name else "module has"
        return f"{shown}:{self.line}: {what} {self.length} lines (max {self.limit})"


class _FunctionLengths(ast.NodeVisitor):
    """Qualified name, first line and length of every function and method, nested included."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, int, int]] = []

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        end = node.end_lineno if node.end_lineno is not None else node.lineno
        self.found.append((".".join([*self.scope, node.name]), node.lineno, end - node.lineno + 1))
        self._enter(node)

    visit_FunctionDef = _function  # noqa: N815 (ast.NodeVisitor's naming)
    visit_AsyncFunctionDef = _function  # noqa: N815
    visit_ClassDef = _enter  # noqa: N815


def _module_offenders(path: Path, text: str) -> Iterator[Offender]:
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        yield Offender(path, 1, "", lines, MAX_MODULE_LINES)
    lengths = _FunctionLengths()
    lengths.visit(ast.parse(text, filename=str(path)))
    for name, line, length in lengths.found:
        if length > MAX_FUNCTION_LINES:
            yield Offender(path, line, name, length, MAX_FUNCTION_LINES)


def shape_offenders(paths: Iterable[Path]) -> list[Offender]:
    """Every module of ``paths`` over the module limit and every function over the function
    limit, in path order."""
    offenders: list[Offender] = []
    for path in sorted(paths):
        offenders.extend(_module_offenders(path, path.read_text(encoding="utf-8")))
    return offenders


def _report(offenders: list[Offender]) -> str:
    return f"{len(offenders)} over the size rules:\n" + "\n".join(map(str, offenders))


def _library_modules() -> list[Path]:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 50, f"the library was not found under {SRC}"
    return modules


def test_no_library_module_or_function_is_over_the_size_rules() -> None:
    offenders = shape_offenders(_library_modules())
    assert not offenders, _report(offenders)


@pytest.mark.parametrize("module", RESHAPED_MODULES)
def test_reshaped_module_is_within_the_size_rules(module: str) -> None:
    path = SRC / module
    assert path.is_file(), f"{module} is listed as reshaped but does not exist"
    offenders = shape_offenders([path])
    assert not offenders, _report(offenders)


# --- the checker itself ------------------------------------------------------------------------


def _function(name: str, lines: int, indent: str = "", prefix: str = "def") -> list[str]:
    """A function of exactly ``lines`` lines, ``def`` line included."""
    return [f"{indent}{prefix} {name}() -> None:"] + [
        f"{indent}    x = {i}" for i in range(lines - 1)
    ]


def _padded(lines: list[str], total: int) -> str:
    return "\n".join(lines + [f"# filler {i}" for i in range(total - len(lines))]) + "\n"


def test_checker_flags_every_module_and_function_just_over_the_limits(tmp_path: Path) -> None:
    inner = _function("inner", MAX_FUNCTION_LINES + 1, indent="    ")
    outer = ["def outer() -> None:", *inner, "    x = 0"]
    source = [
        *_function("too_long", MAX_FUNCTION_LINES + 1),
        *_function("too_long_async", MAX_FUNCTION_LINES + 1, prefix="async def"),
        "class Holder:",
        *_function("method", MAX_FUNCTION_LINES + 1, indent="    "),
        *outer,
        *_function("fine", MAX_FUNCTION_LINES),
    ]
    module = tmp_path / "big.py"
    module.write_text(_padded(source, MAX_MODULE_LINES + 1))

    offenders = shape_offenders([module])

    assert [(o.name, o.length) for o in offenders] == [
        ("", MAX_MODULE_LINES + 1),
        ("too_long", MAX_FUNCTION_LINES + 1),
        ("too_long_async", MAX_FUNCTION_LINES + 1),
        ("Holder.method", MAX_FUNCTION_LINES + 1),
        ("outer", MAX_FUNCTION_LINES + 3),
        ("outer.inner", MAX_FUNCTION_LINES + 1),
    ]
    report = _report(offenders)
    assert f"{module}:1: module has {MAX_MODULE_LINES + 1} lines" in report
    method_line = 2 * (MAX_FUNCTION_LINES + 1) + 2  # after two functions and the class line
    assert f"{module}:{method_line}: Holder.method has" in report


def test_checker_accepts_a_module_and_functions_at_the_limits(tmp_path: Path) -> None:
    source = [
        *_function("at_limit", MAX_FUNCTION_LINES),
        "class Holder:",
        "    @staticmethod",  # decorators are not part of the function's length
        *_function("method", MAX_FUNCTION_LINES, indent="    "),
    ]
    module = tmp_path / "fits.py"
    module.write_text(_padded(source, MAX_MODULE_LINES))

    assert shape_offenders([module]) == []
