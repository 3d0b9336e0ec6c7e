"""Render the code registry and the exception hierarchy as ``docs/exceptions.md``.

Why generated: a hand-kept list of codes drifts from the code the first time someone adds a
refusal; this page is rebuilt from :data:`maka_es.codes.REGISTRY` and the classes of
:mod:`maka_es.errors`, and a test fails when the committed copy differs. Output is a pure
function of those two, so it is byte-stable.
"""

from __future__ import annotations

from collections.abc import Iterator

from maka_es import errors
from maka_es.codes.model import CodeEntry, CodeKind, CodeRegistry

HEADER = """\
# Exceptions and codes

<!-- Generated from src/maka_es/codes/ by `make docs-codes`; do not edit by hand.
     tests/unit/test_error_registry.py fails when this page is not current. -->

Every stable code maka_es emits: what it means and what a host should do. A host decides from
codes, never from message text. Every refusal is a `maka_es.errors.MakaError` with a stable
`.code` and a machine-readable `.detail`, raised **before** anything is written: catching one
never means that part of the command landed. Plans never raise for what the store holds; they
park with reasons instead. Where and in which order each code fires:
[reference/codes.md](reference/codes.md). Not listed here (data, not refusals): resolver
decision reasons, ToolRuntime result codes, startup repair kinds, `StoreUnavailableError`
`detail.reason` values and `ProviderExportError` `detail.reason` values, all in
[reference/codes.md](reference/codes.md).
"""

SECTIONS: tuple[tuple[CodeKind, str, str], ...] = (
    (
        "error",
        "Error codes (`MakaError.code`)",
        "Codes of raised refusals. A code raised by several classes means the same thing in each.",
    ),
    (
        "revalidation",
        "Revalidation codes (`ContinuationRevalidationError.code`)",
        "`execute_continuation` re-reads everything a plan relied on just before it claims the "
        "boundary ([reference/continuation.md#revalidation]"
        "(reference/continuation.md#revalidation)).",
    ),
    (
        "park_reason",
        "Park reasons (`rejectionReasons`)",
        "Why a `ResumePlan` is `blocked` or a `ContinuationPlan` parks "
        "([reference/codes.md#park-reasons](reference/codes.md#park-reasons)).",
    ),
    (
        "diagnostic",
        "Diagnostic codes (`diagnostics[].code`)",
        "Codes that explain a reason and are never a reason themselves "
        "([reference/codes.md#diagnostic-codes](reference/codes.md#diagnostic-codes)).",
    ),
)


def exception_classes() -> tuple[type[BaseException], ...]:
    """Every exception class of :mod:`maka_es.errors`, in definition order."""
    return tuple(
        value
        for value in vars(errors).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    )


def _summary(cls: type[BaseException]) -> str:
    """The first paragraph of a class docstring, on one line (for classes without a code)."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("|", "/")


def _class_rows() -> Iterator[str]:
    yield "| class | bases | default code |"
    yield "|---|---|---|"
    for cls in exception_classes():
        bases = ", ".join(f"`{base.__name__}`" for base in cls.__bases__)
        code = getattr(cls, "default_code", None)
        shown = f"`{code}`" if isinstance(code, str) else f"none: {_summary(cls)}"
        yield f"| `{cls.__name__}` | {bases} | {shown} |"


def _entry_row(entry: CodeEntry) -> str:
    cells = [f"`{entry.code}`"]
    if entry.kind == "error":
        cells.append(", ".join(f"`{cls.__name__}`" for cls in entry.raised_by))
    cells += [entry.meaning, entry.host_action]
    return "| " + " | ".join(cells) + " |"


def _section(registry: CodeRegistry, kind: CodeKind, title: str, intro: str) -> Iterator[str]:
    yield f"## {title}"
    yield ""
    yield intro
    yield ""
    if kind == "error":
        yield "| code | raised as | meaning | what a host should do |"
        yield "|---|---|---|---|"
    else:
        yield "| code | meaning | what a host should do |"
        yield "|---|---|---|"
    for entry in registry.of_kind(kind):
        yield _entry_row(entry)
    yield ""


def render_markdown(registry: CodeRegistry) -> str:
    """The whole page, ending in exactly one newline."""
    lines = [HEADER, "## Exception classes", ""]
    lines.append("Every exception maka_es defines lives in `maka_es.errors`.")
    lines.append("")
    lines.extend(_class_rows())
    lines.append("")
    for kind, title, intro in SECTIONS:
        lines.extend(_section(registry, kind, title, intro))
    return "\n".join(lines).rstrip("\n") + "\n"
