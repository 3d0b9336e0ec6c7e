"""Every exception lives in ``maka_es.errors``, and the code registry matches the source exactly.

The registry (``maka_es.codes``) is only worth trusting if it cannot drift: these tests read the
codes the library really emits (exception defaults, ``code="..."`` literals found by an AST scan
of ``src``, the positional codes of ``refuse``/``park`` helpers, and the ``Literal``
vocabularies of the plan and resolver models) and require the registry to hold exactly those,
with the classes that really raise them. ``docs/exceptions.md`` must equal what the registry
renders today.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

import maka_es
from maka_es import errors
from maka_es.codes import REGISTRY, CodeEntry, CodeRegistry
from maka_es.codes.model import OTHER_VOCABULARIES, exception_classes, render_markdown
from maka_es.codes.places import FIRES_IN, SEE
from maka_es.continuation.model.replay import ReplayBlockReason, ReplayDiagnosticCode
from maka_es.resume.models import DiagnosticCode, ResumeRejectionReason
from maka_es.tooljournal.model.bundle import BundleCode
from maka_es.tooljournal.model.scanner import ResolverIssueCode

SRC = Path(maka_es.__file__).parent
DOC = Path(__file__).resolve().parents[2] / "docs" / "exceptions.md"
#: The test kit may raise ad-hoc codes for its own harness; the registry is about the library.
NOT_LIBRARY = ("testing", "codes")
POSITIONAL_CODE_CALLS = frozenset({"refuse", "_refuse", "park", "LineagePark"})


def library_files() -> Iterator[Path]:
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] not in NOT_LIBRARY:
            yield path


def library_modules() -> Iterator[str]:
    for info in pkgutil.walk_packages([str(SRC)], prefix="maka_es."):
        if info.name.split(".")[1] not in NOT_LIBRARY:
            yield info.name


def literal_values(tp: Any) -> set[str]:
    """The strings of a ``Literal`` type, also through unions of literals."""
    if get_origin(tp) is Literal:
        return {str(value) for value in get_args(tp)}
    return set().union(*(literal_values(arg) for arg in get_args(tp)))


@dataclass(frozen=True)
class EmittedCode:
    code: str
    call: str  # the called name: an error class, Diagnostic, refuse, park, ...
    path: Path
    line: int


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _str_constant(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def emitted_codes() -> list[EmittedCode]:
    """Every ``code="..."`` keyword and every literal first argument of refuse/park helpers."""
    found: list[EmittedCode] = []
    for path in library_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node)
            literals = [_str_constant(k.value) for k in node.keywords if k.arg == "code"]
            if name in POSITIONAL_CODE_CALLS and node.args:
                literals.append(_str_constant(node.args[0]))
            found += [EmittedCode(c, name, path, node.lineno) for c in literals if c is not None]
    return found


def error_classes() -> list[type[errors.MakaError]]:
    return [cls for cls in exception_classes() if issubclass(cls, errors.MakaError)]


ERROR_CLASS_NAMES = {cls.__name__: cls for cls in error_classes()}
PARK_REASONS = literal_values(ResumeRejectionReason)
DIAGNOSTIC_ONLY = (
    literal_values(DiagnosticCode)
    | literal_values(ReplayDiagnosticCode)
    | literal_values(ReplayBlockReason)
) - PARK_REASONS
REVALIDATION_CALLS = {
    e.code
    for e in emitted_codes()
    if e.call in {"refuse", "_refuse"} and "continuation" in e.path.parts
}


# -- item 1: every exception in errors.py ---------------------------------------------------------


def test_every_public_exception_class_of_the_library_is_defined_in_errors() -> None:
    outside = []
    for name in library_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not attr.startswith("_")
                and not (name == errors.__name__ or name.startswith(errors.__name__ + "."))
            ):
                outside.append(f"{name}.{attr}")
    assert outside == []


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("maka_es.providers.protocol", "InvalidProviderOutputError"),
        ("maka_es.providers.protocol", "ProviderScriptExhaustedError"),
        ("maka_es.providers.export", "ProviderExportError"),
        ("maka_es.providers.export", "ExportReason"),
        ("maka_es.continuation.executor", "ContinuationRevalidationError"),
        ("maka_es.continuation.service", "LineagePark"),
        ("maka_es.tooljournal.runtime", "OutcomeUnknownError"),
        ("maka_es.tooljournal.runtime", "ToolAlreadyDispatchedError"),
        ("maka_es.wire.codec", "CodecInputError"),
        ("maka_es.recovery.model.status_store", "RecoveryStatusConflictError"),
        ("maka_es.recovery.status", "RecoveryStatusConflictError"),
        ("maka_es.adapters.recovery_status", "RecoveryStatusUnsupportedError"),
    ],
)
def test_moved_exceptions_still_import_from_their_old_module(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


# -- item 2: one registry of every code -----------------------------------------------------------


def test_every_error_class_default_code_is_registered_with_that_class() -> None:
    for cls in error_classes():
        entry = REGISTRY.get("error", cls.default_code)
        assert entry is not None, cls.__name__
        assert cls in entry.raised_by, cls.__name__


def test_park_reasons_are_exactly_the_resume_rejection_reasons() -> None:
    assert REGISTRY.codes("park_reason") == PARK_REASONS


def test_diagnostic_codes_are_exactly_the_diagnostic_only_literals() -> None:
    assert REGISTRY.codes("diagnostic") == DIAGNOSTIC_ONLY


def test_revalidation_codes_are_exactly_the_codes_revalidation_raises() -> None:
    assert REVALIDATION_CALLS, "the scan found no revalidation refusal at all"
    assert REGISTRY.codes("revalidation") == REVALIDATION_CALLS


def test_resolver_issue_and_bundle_codes_are_registered_with_their_error_class() -> None:
    for code in literal_values(ResolverIssueCode):
        entry = REGISTRY.get("error", code)
        assert entry is not None, code
        assert errors.ToolLedgerRejectionError in entry.raised_by, code
    for code in literal_values(BundleCode):
        entry = REGISTRY.get("error", code)
        assert entry is not None, code
        assert errors.RecoveryBundleRejectedError in entry.raised_by, code


def test_every_code_literal_in_src_is_registered() -> None:
    emitted = emitted_codes()
    assert len(emitted) > 50, "the AST scan lost its way"
    missing = [e for e in emitted if not REGISTRY.lookup(e.code)]
    assert missing == []


def test_explicit_codes_of_error_classes_name_that_class() -> None:
    for found in emitted_codes():
        cls = ERROR_CLASS_NAMES.get(found.call)
        if cls is None or cls is errors.ContinuationRevalidationError:
            continue
        entry = REGISTRY.get("error", found.code)
        assert entry is not None, found
        assert cls in entry.raised_by, found


def _justified(
    entry: CodeEntry, cls: type[errors.MakaError], explicit: set[tuple[str, str]]
) -> bool:
    """Why ``cls`` may be listed as raising ``entry.code``: its default, a literal call, or a
    vocabulary that class carries by construction."""
    return (
        cls.default_code == entry.code
        or (cls.__name__, entry.code) in explicit
        or (
            cls is errors.ToolLedgerRejectionError
            and entry.code in literal_values(ResolverIssueCode)
        )
        or (cls is errors.RecoveryBundleRejectedError and entry.code in literal_values(BundleCode))
        or (cls is errors.ContinuationRevalidationError and entry.kind == "revalidation")
    )


def test_every_registered_raiser_really_raises_the_code() -> None:
    explicit = {(e.call, e.code) for e in emitted_codes()}
    explicit |= {
        ("RecoveryBundleRejectedError", e.code) for e in emitted_codes() if e.call == "refuse"
    }
    for entry in REGISTRY.entries:
        for cls in entry.raised_by:
            assert _justified(entry, cls, explicit), (entry.code, cls.__name__)


def test_no_registry_entry_is_unused() -> None:
    """Each registered code is a string somewhere in the library (not only in the registry)."""
    strings: set[str] = set()
    for path in library_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
    unused = sorted(code for code in REGISTRY.codes() if code not in strings)
    assert unused == []


def test_every_entry_says_what_a_host_should_do() -> None:
    for entry in REGISTRY.entries:
        assert entry.meaning.strip(), entry.code
        assert entry.host_action.strip(), entry.code
        assert entry.meaning != entry.host_action, entry.code


# -- the registry's own guards ---------------------------------------------------------------------


def test_an_entry_refuses_a_code_that_is_not_snake_case() -> None:
    with pytest.raises(ValueError, match="snake_case"):
        CodeEntry("Run-Sealed", "park_reason", "a meaning", "an action")


def test_an_error_entry_must_name_the_class_that_raises_it() -> None:
    with pytest.raises(ValueError, match="raised_by"):
        CodeEntry("run_sealed", "error", "a meaning", "an action")
    with pytest.raises(ValueError, match="raised_by"):
        CodeEntry("pending_permission", "park_reason", "m", "a", (errors.RunSealedError,))


def test_an_entry_refuses_text_that_would_break_the_generated_table() -> None:
    with pytest.raises(ValueError, match="one non-empty line"):
        CodeEntry("run_sealed", "error", "a | b", "an action", (errors.RunSealedError,))


def test_the_registry_refuses_a_code_registered_twice_in_one_kind() -> None:
    entry = CodeEntry("pending_permission", "park_reason", "a meaning", "an action")
    with pytest.raises(ValueError, match="registered twice"):
        CodeRegistry([entry, entry])


def test_one_code_may_mean_different_things_in_different_kinds() -> None:
    kinds = {entry.kind for entry in REGISTRY.lookup("runtime_offset_mismatch")}
    assert kinds == {"error", "park_reason"}


# -- where each code fires (issue 22, part 7): the registry's places, checked against the source ---


def _module_path(path: Path) -> str:
    return str(path.relative_to(SRC).as_posix())


def _not_uses(tree: ast.AST) -> set[int]:
    """Constants that are no use of a code: docstrings and ``Literal[...]`` declarations."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _name(node.value) == "Literal":
            skipped |= {id(inner) for inner in ast.walk(node.slice)}
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))
    return skipped


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


@dataclass(frozen=True)
class ModuleUses:
    """What one library module does with codes: the strings it uses, the names it refers to,
    and the classes it constructs without an explicit ``code=``."""

    strings: frozenset[str]
    names: frozenset[str]
    bare_calls: frozenset[str]


def module_uses() -> dict[str, ModuleUses]:
    found: dict[str, ModuleUses] = {}
    for path in library_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _not_uses(tree)
        strings, names, bare = set(), set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in skipped:
                    strings.add(node.value)
            elif isinstance(node, ast.Name | ast.Attribute):
                names.add(_name(node))
            if isinstance(node, ast.Call) and not any(k.arg == "code" for k in node.keywords):
                bare.add(_call_name(node))
        found[_module_path(path)] = ModuleUses(
            frozenset(strings), frozenset(names), frozenset(bare)
        )
    return found


MODULE_USES = module_uses()
EMITTED = emitted_codes()


def _default_classes(entry: CodeEntry) -> set[str]:
    return {cls.__name__ for cls in entry.raised_by if cls.default_code == entry.code}


def uses_code(module: str, entry: CodeEntry) -> bool:
    """The module really uses the code: as a string, or through a class whose default it is."""
    uses = MODULE_USES.get(module)
    if uses is None:
        return False
    return entry.code in uses.strings or bool(_default_classes(entry) & uses.names)


def fires_code(entry: CodeEntry) -> set[str]:
    """The modules that surely fire the code: a literal ``code=`` or refuse/park argument, or a
    construction of a class whose default it is (without ``code=``). Plan data (park reasons,
    diagnostics) is only ever a string, so for those only :func:`uses_code` applies."""
    if entry.kind not in {"error", "revalidation"}:
        return set()
    literal = {_module_path(e.path) for e in EMITTED if e.code == entry.code}
    if entry.kind == "revalidation":
        literal = {
            _module_path(e.path)
            for e in EMITTED
            if e.code == entry.code and e.call in {"refuse", "_refuse"}
        }
    classes = _default_classes(entry)
    built = {module for module, uses in MODULE_USES.items() if classes & uses.bare_calls}
    return literal | built


def test_every_code_has_its_places_decided() -> None:
    """A new code gets a line in codes/places.py (``()`` only where nothing fires it)."""
    keys = {(entry.kind, entry.code) for entry in REGISTRY.entries}
    missing = sorted(keys - set(FIRES_IN))
    assert missing == [], f"add to maka_es/codes/places.py FIRES_IN: {missing}"
    assert sorted(set(FIRES_IN) - keys) == []
    assert sorted(set(SEE) - keys) == []


def test_every_listed_place_really_uses_the_code() -> None:
    wrong = [
        (entry.kind, entry.code, module)
        for entry in REGISTRY.entries
        for module in entry.fires_in
        if not uses_code(module, entry)
    ]
    assert wrong == [], "codes/places.py lists a module that does not use the code"


def test_every_place_that_fires_a_code_is_listed() -> None:
    unlisted = {
        (entry.kind, entry.code): sorted(fires_code(entry) - set(entry.fires_in))
        for entry in REGISTRY.entries
    }
    assert {key: modules for key, modules in unlisted.items() if modules} == {}


def test_a_code_listed_nowhere_is_used_nowhere_but_as_a_base_default() -> None:
    for entry in REGISTRY.entries:
        if entry.fires_in:
            continue
        users = sorted(
            module
            for module, uses in MODULE_USES.items()
            if entry.code in uses.strings and module != "errors.py"
        )
        assert users == [], (entry.code, users)
        assert not fires_code(entry), entry.code


def test_the_place_check_catches_a_wrong_and_a_missing_module() -> None:
    entry = REGISTRY.get("error", "run_sealed")
    assert entry is not None
    assert entry.fires_in
    assert not uses_code("report/render.py", entry)
    assert not uses_code("no_such/module.py", entry)
    assert fires_code(entry) <= set(entry.fires_in)
    assert fires_code(entry), "the scan finds no module that raises RunSealedError"


def test_other_vocabularies_name_only_strings_of_the_library() -> None:
    """The data vocabularies at the end of the page (moved from docs/reference/codes.md) name
    only values the library really uses, so they cannot keep a value that is gone."""
    strings = set().union(*(uses.strings for uses in MODULE_USES.values()))
    named = set(re.findall(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`", OTHER_VOCABULARIES))
    assert len(named) > 50
    assert sorted(named - strings) == []


def test_an_entry_refuses_a_place_that_is_no_module_path() -> None:
    with pytest.raises(ValueError, match="module path"):
        CodeEntry("pending_permission", "park_reason", "m", "a", (), ("../outside.py",))
    with pytest.raises(ValueError, match="see must be one line"):
        CodeEntry("pending_permission", "park_reason", "m", "a", (), (), "a | b")


# -- item 3: docs/exceptions.md is generated and current ------------------------------------------


def test_committed_exceptions_page_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render_markdown(REGISTRY), (
        "docs/exceptions.md is stale: run `make docs-codes`"
    )


def test_the_page_lists_every_exception_class_and_every_code() -> None:
    page = render_markdown(REGISTRY)
    for cls in exception_classes():
        assert f"| `{cls.__name__}` |" in page
    for entry in REGISTRY.entries:
        assert f"| `{entry.code}` |" in page


def test_module_entry_point_prints_the_page() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "maka_es.codes"], capture_output=True, text=True, check=True
    )
    assert result.stdout == render_markdown(REGISTRY)
