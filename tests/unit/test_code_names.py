"""Code names explain themselves (issue 22, part 8): no name in ``src/maka_es`` is spelled from
the spec's history (``legacy``, ``Original P1``, ``P1``, ``HEAD``) or from a gate's bare letter.

Why a test: the two planning paths were once ``_legacy_plan`` and ``_composite_plan``, which
told a reader which spec revision each came from and not what it takes (a single run, a
lineage). Names come back the way they went if nothing fails. The check is AST-based and reads
only names a reader meets as code: ``def``/``class`` names, parameters, assignment targets
(attributes included) and import aliases. String literals are not names, so the spec's own
identifiers (``legacy_dispatch_unknown``, ``provider_resume_head_unsupported``, wire keys) stay
exactly as the spec spells them; a wire field whose Python name *is* the spec's key is listed in
:data:`SPEC_FIELD_NAMES` with where it is specified.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "maka_es"

#: What a code name must not contain, and why (case-insensitive on snake_case names).
FORBIDDEN = (
    (re.compile(r"legacy", re.IGNORECASE), "a spec revision ('legacy'), not what it takes"),
    (re.compile(r"original_?p1", re.IGNORECASE), "a spec revision ('Original P1')"),
    (re.compile(r"(?i:(^|_)p1(_|$))|P1[A-Z]"), "a spec revision ('P1')"),
    (re.compile(r"(?i:(^|_)head_)|(^|_)HEAD$|Head[A-Z]"), "'head' as the spec's HEAD revision"),
    (re.compile(r"(^|_)gates?_[a-p](_|$)", re.IGNORECASE), "a bare gate letter"),
)

#: Python names that are the spec's own wire keys (snake_case of the camelCase key).
SPEC_FIELD_NAMES = {
    # the AgentRun header's ``legacyAutomationId`` authority id (docs/reference/ledger.md)
    "legacy_automation_id",
}


def _names(node: ast.AST) -> Iterator[str]:
    """The code names one AST node introduces."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        yield from (argument.arg for argument in every)
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(
        node,
        ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For | ast.AsyncFor | ast.comprehension,
    ):
        targets = [node.target]
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, ast.Name):
                yield part.id
            elif isinstance(part, ast.Attribute):
                yield part.attr
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield from (alias.asname for alias in node.names if alias.asname)


def offending_names(source: str, where: str) -> list[str]:
    """``where:line: name (why)`` for every forbidden code name in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for name in _names(node):
            if name in SPEC_FIELD_NAMES:
                continue
            for pattern, why in FORBIDDEN:
                if pattern.search(name):
                    found.append(f"{where}:{getattr(node, 'lineno', 0)}: {name} ({why})")
    return found


def test_no_code_name_in_src_is_spelled_from_the_spec_history_or_a_gate_letter() -> None:
    found = [
        offence
        for path in sorted(SRC.rglob("*.py"))
        for offence in offending_names(
            path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))
        )
    ]
    assert found == [], "\n".join(found)


def test_the_check_sees_names_and_not_spec_strings() -> None:
    source = (
        "from x import plan as legacy_plan\n"
        "def _legacy_plan(original_p1_rule, *, provider_head_gate=None): ...\n"
        "class HeadPlan: ...\nclass OriginalP1Rule: ...\nHEAD = 'x'\ntop1k = 3\n"
        "gate_a = 1\n"
        "self_.p1_path = 2\n"
        "for head_only in (): ...\n"
        "reason = 'legacy_dispatch_unknown'\n"
        "code = 'provider_resume_head_unsupported'\n"
        "legacy_automation_id: str | None = None\n"
        "def read_header(header, quiet_head, gates): ...\n"
    )
    flagged = [offence.split(": ")[1].split(" (")[0] for offence in offending_names(source, "s")]
    assert sorted(flagged) == sorted(
        [
            "legacy_plan",
            "_legacy_plan",
            "original_p1_rule",
            "original_p1_rule",  # both 'Original P1' and 'P1'
            "provider_head_gate",
            "HeadPlan",
            "OriginalP1Rule",
            "OriginalP1Rule",  # both 'Original P1' and 'P1'
            "HEAD",
            "gate_a",
            "p1_path",
            "head_only",
        ]
    )
