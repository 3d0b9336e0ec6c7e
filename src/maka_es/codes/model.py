"""The typed shape of one registered code, and the registry that holds them.

Why typed entries instead of a table in a document: the registry is checked against the code
(tests scan ``src`` for every code the library emits and every ``Literal`` vocabulary), and
``docs/exceptions.md`` is generated from it, so the page cannot drift from what is raised.
Why one entry per ``(kind, code)`` and not per code: a few strings are deliberately reused
with a different meaning in another vocabulary (``runtime_offset_mismatch`` is both a store
refusal and a park reason; ``workspace_identity_changed`` both a marker error and a
revalidation refusal), and a host reads them in different places.

The registry renders itself and the exception hierarchy as ``docs/exceptions.md``
(:func:`render_markdown`): a hand-kept list of codes drifts the first time someone adds a
refusal, so the page is rebuilt from the registry and the classes of :mod:`maka_es.errors`, and
a test fails when the committed copy differs. Output is a pure function of those two, so it is
byte-stable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, get_args

from maka_es import errors
from maka_es.errors import MakaError

#: Where a host meets the code: ``error`` is ``MakaError.code`` of a raised refusal;
#: ``revalidation`` is ``ContinuationRevalidationError.code`` (execution refused just before it
#: would start); ``park_reason`` is one of a plan's ``rejectionReasons``; ``diagnostic`` is a
#: ``diagnostics[].code`` (of a plan or a composite replay) that is never a reason itself.
CodeKind = Literal["error", "revalidation", "park_reason", "diagnostic"]
CODE_KINDS: Final[tuple[CodeKind, ...]] = get_args(CodeKind)

_CODE_RE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
#: A module path below ``src/maka_es/`` (``ledger/run_append.py``), as ``fires_in`` lists it.
_MODULE_RE: Final = re.compile(r"[a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*\.py")
#: Kinds whose codes travel on a raised exception (so ``raised_by`` names its class).
_RAISED_KINDS: Final = frozenset({"error", "revalidation"})


@dataclass(frozen=True, slots=True)
class CodeEntry:
    """One stable code: what it means and what a host should do when it meets it.

    ``raised_by`` lists the exception classes that carry the code (every class whose
    ``default_code`` it is, and every class raised with it as an explicit ``code``); it is
    empty for park reasons and diagnostics, which are data in a plan, not exceptions.
    ``fires_in`` names the library modules (below ``src/maka_es/``) where the code fires and
    ``see`` where the behaviour reference says when (filled in from :mod:`maka_es.codes.places`,
    whose test checks ``fires_in`` against the source). Checked on construction, so a
    malformed entry fails at import rather than in a page.
    """

    code: str
    kind: CodeKind
    meaning: str
    host_action: str
    raised_by: tuple[type[MakaError], ...] = ()
    fires_in: tuple[str, ...] = ()
    see: str = ""

    def __post_init__(self) -> None:
        if not _CODE_RE.fullmatch(self.code):
            raise ValueError(f"code {self.code!r} is not a snake_case identifier")
        if self.kind not in CODE_KINDS:
            raise ValueError(f"{self.code}: unknown kind {self.kind!r}")
        for label, text in (("meaning", self.meaning), ("host_action", self.host_action)):
            if not text.strip() or "|" in text or "\n" in text:
                raise ValueError(f"{self.code}: {label} must be one non-empty line without '|'")
        if "|" in self.see or "\n" in self.see:
            raise ValueError(f"{self.code}: see must be one line without '|'")
        for module in self.fires_in:
            if not _MODULE_RE.fullmatch(module):
                raise ValueError(f"{self.code}: {module!r} is not a module path below maka_es/")
        if (self.kind in _RAISED_KINDS) != bool(self.raised_by):
            raise ValueError(f"{self.code}: raised_by must be given exactly for raised kinds")
        for cls in self.raised_by:
            if not (isinstance(cls, type) and issubclass(cls, MakaError)):
                raise ValueError(f"{self.code}: {cls!r} is not a MakaError subclass")


class CodeRegistry:
    """Every registered code, in registration order, unique per ``(kind, code)``."""

    def __init__(self, entries: Iterable[CodeEntry]) -> None:
        self._entries = tuple(entries)
        self._by_key: dict[tuple[CodeKind, str], CodeEntry] = {}
        for entry in self._entries:
            key = (entry.kind, entry.code)
            if key in self._by_key:
                raise ValueError(f"{entry.kind} code {entry.code!r} is registered twice")
            self._by_key[key] = entry

    @property
    def entries(self) -> tuple[CodeEntry, ...]:
        return self._entries

    def get(self, kind: CodeKind, code: str) -> CodeEntry | None:
        """The entry of ``code`` in vocabulary ``kind``, or ``None`` if it is not registered."""
        return self._by_key.get((kind, code))

    def lookup(self, code: str) -> tuple[CodeEntry, ...]:
        """Every entry for ``code``, whatever its kind (a host holding a bare string)."""
        return tuple(entry for entry in self._entries if entry.code == code)

    def codes(self, kind: CodeKind | None = None) -> frozenset[str]:
        """The registered codes of ``kind`` (all kinds when ``None``)."""
        return frozenset(e.code for e in self._entries if kind is None or e.kind == kind)

    def of_kind(self, kind: CodeKind) -> tuple[CodeEntry, ...]:
        return tuple(entry for entry in self._entries if entry.kind == kind)


#: A meaning alone (the group's host action applies), or ``(meaning, host action)``.
Described = str | tuple[str, str]


def group(
    kind: CodeKind,
    action: str,
    described: Mapping[str, Described],
    *raised_by: type[MakaError],
) -> tuple[CodeEntry, ...]:
    """Entries that share a kind, the classes that raise them and (by default) one host action.

    Why a helper: most codes of one family call for the same response (every bundle code means
    "the host built a wrong bundle"), so the action is written once and overridden where a code
    needs its own.
    """
    entries = []
    for code, text in described.items():
        meaning, own_action = (text, action) if isinstance(text, str) else text
        entries.append(CodeEntry(code, kind, meaning, own_action, tuple(raised_by)))
    return tuple(entries)


def error(code: str, meaning: str, action: str, *raised_by: type[MakaError]) -> CodeEntry:
    """One ``error`` entry with its own host action."""
    return CodeEntry(code, "error", meaning, action, raised_by)


HEADER = """\
# Exceptions and codes

<!-- Generated from src/maka_es/codes/ by `make docs-codes`; do not edit by hand.
     tests/unit/test_error_registry.py fails when this page is not current. -->

Every stable code maka_es emits, on one page: what it means, where it fires (the place in the
[behaviour reference](reference/index.md) and the modules below `src/maka_es/`, which a test
checks against the source) and what a host should do. Codes are part of the public contract
(tests pin them). A host decides from codes, never from message text. Every refusal is a
`maka_es.errors.MakaError` with a stable `.code` and a machine-readable `.detail`, raised
**before** anything is written: catching one never means that part of the command landed.
Plans never raise for what the store holds; they park with reasons instead. Data that is not a
refusal (resolver decisions, ToolRuntime results, startup repair kinds, `detail.reason`
values) is listed at the end.
"""

#: Each section: kind, anchor (the ids the behaviour reference links to), title, introduction.
SECTIONS: tuple[tuple[CodeKind, str, str, str], ...] = (
    (
        "error",
        "errors",
        "Error codes (`MakaError.code`)",
        "Codes of raised refusals. A code raised by several classes means the same thing in "
        "each. Every exception class is defined in the `maka_es.errors` package (the modules "
        "that raise one re-export it; [ADR 0017](adr/0017-packages-by-capability-and-ports.md)). "
        "A `ToolLedgerRejectionError` carries the resolver issue code it would introduce "
        "([resolver codes](#resolver-codes)); a `RecoveryBundleRejectedError` its bundle code "
        "([tool-journal.md#bundle-codes](reference/tool-journal.md#bundle-codes)); a "
        "`ContinuationRevalidationError` a [revalidation code](#revalidation-codes).",
    ),
    (
        "revalidation",
        "revalidation-codes",
        "Revalidation codes (`ContinuationRevalidationError.code`)",
        "`execute_continuation` re-reads everything a plan relied on just before it claims the "
        "boundary, and refuses before anything is written "
        "([reference/continuation.md#revalidation](reference/continuation.md#revalidation)). "
        "`continuation_revalidation_failed` is the class's default code and is never raised "
        "without a specific one.",
    ),
    (
        "park_reason",
        "park-reasons",
        "Park reasons (`rejectionReasons`)",
        "Why a `ResumePlan` is `blocked` or a `ContinuationPlan` parks: the "
        "`ResumeRejectionReason` literals of `maka_es.resume.models`. Phase 0 only ever emits "
        "`runtime_offset_mismatch` and `dangling_tool_state`; gates are those of "
        "[reference/continuation.md#gates](reference/continuation.md#gates).",
    ),
    (
        "diagnostic",
        "diagnostic-codes",
        "Diagnostic codes (`diagnostics[].code`)",
        "Codes that explain a reason and are never a reason themselves (the `DiagnosticCode` "
        "literals of `maka_es.resume.models` and those of a composite replay). "
        "Composite-replay diagnostics (`CompositeReplay.diagnostics`, "
        "[continuation.md#composite-replay](reference/continuation.md#composite-replay)): "
        "`tool_recovery_corruption`, `tool_recovery_unsettled`, `partial_skipped`, "
        "`unsupported_role`, `unsupported_content`, `unmatched_tool_result`, `tool_id_mismatch`, "
        "`unmatched_tool_call`.",
    ),
)

#: The vocabularies that are data, not refusals (moved here from docs/reference/codes.md;
#: tests/unit/test_error_registry.py checks every code it names is a string of the library).
OTHER_VOCABULARIES = """\
<a id="resolver-codes"></a>
## Resolver codes and other vocabularies

Resolver issue codes (`Resolution.issues[].code`), in the order the scanner checks them
([reference/tool-journal.md#scanner](reference/tool-journal.md#scanner)); the store uses the
same codes for `ToolLedgerRejectionError` (their rows are above): `protocol_marker_invalid`,
`duplicate_event_id`, `invocation_identity_conflict`, `semantic_lane_conflict`,
`duplicate_call`, `duplicate_dispatch`, `duplicate_operation`, `identity_conflict`,
`canonical_args_hash_conflict`, `event_order_conflict`, `orphan_response`,
`duplicate_response`.

Decision statuses: `completed`, `definitely_not_dispatched`, `indeterminate`, `parked`,
`corruption`. Decision reasons
([reference/tool-journal.md#decisions](reference/tool-journal.md#decisions)):
`matching_response`, `recovery_bundle_completed`, `dispatch_without_response`,
`new_protocol_before_dispatch`, `legacy_dispatch_unknown`, `orphan_dispatch`,
`orphan_response`, `duplicate_call`, `duplicate_operation`, `duplicate_dispatch`,
`duplicate_response`, `canonical_args_hash_conflict`, `identity_conflict`,
`event_order_conflict`, `recovery_fact_corruption`, `reconcile_matches_prior_state`,
`reconcile_diverged`, `reconcile_unreadable`. Settlement origins: `pre_t1_synthetic`,
`normal_t2`, `recovery_bundle`.

ToolRuntime refusal results (committed as error responses, not raised): `tool_unknown`,
`invalid_arguments`, `permission_denied`, `preflight_failed`; error outcomes `tool_error`,
`result_not_json`, `outcome_unknown`
([reference/tool-journal.md#tool-runtime](reference/tool-journal.md#tool-runtime)).
Recovery action reasons: `tool_unavailable`, `recovery_mode_changed`; the not-applied result
of a reconciler that observed the prior state: `reconcile_not_applied`, and of an operator's
attestation: `operator_attested_not_applied`
([reference/tool-journal.md#recovery-modes](reference/tool-journal.md#recovery-modes)).

Startup repair kinds: `tools_recovered`, `left_unreconciled` (reasons `tool_not_in_catalogue`,
`recovery_mode_changed`, `tool_recovery_failed`), `left_awaiting_operator`, `claim_repaired`,
`header_repaired`, `terminal_recovered`, `start_only_ended`, `left_live_start`, `left_ambiguous`,
`left_claim_conflict`, `left_live_owner`, `owner_taken_over`
([reference/continuation.md#startup-recovery](reference/continuation.md#startup-recovery)).
Recovered terminal values: failure class `app_restarted`,
`continuation_abandoned_before_provider_dispatch`; recovery reasons
[reference/continuation.md#recovery-reason](reference/continuation.md#recovery-reason).

`StoreUnavailableError` `detail.reason` values include `locked`, `full`, `read_only`,
`store_file_deleted`, `store_file_replaced`, `store_wal_deleted`, `store_wal_replaced`,
`timeout` and `unreachable` ([configuration.md](configuration.md)); a `StorePathError` adds
`is_a_directory`, `directory_missing`, `file_missing`, `unsupported_scheme` and
`bad_sqlite_url`, a `StoreFileCorruptionError` `not_a_database` and `corrupt`.
"""


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


def _where(entry: CodeEntry) -> str:
    """The "where it fires" cell: the reference's words, then the modules."""
    modules = ", ".join(f"`{module}`" for module in entry.fires_in)
    parts = [part for part in (entry.see, f"in {modules}" if modules else "") if part]
    return "; ".join(parts) or "not raised with this code"


def _entry_row(entry: CodeEntry) -> str:
    cells = [f"`{entry.code}`"]
    if entry.kind == "error":
        cells.append(", ".join(f"`{cls.__name__}`" for cls in entry.raised_by))
    cells += [entry.meaning, _where(entry), entry.host_action]
    return "| " + " | ".join(cells) + " |"


def _section(
    registry: CodeRegistry, kind: CodeKind, anchor: str, title: str, intro: str
) -> Iterator[str]:
    yield f'<a id="{anchor}"></a>'
    yield f"## {title}"
    yield ""
    yield intro
    yield ""
    if kind == "error":
        yield "| code | raised as | meaning | where it fires | what a host should do |"
        yield "|---|---|---|---|---|"
    else:
        yield "| code | meaning | where it fires | what a host should do |"
        yield "|---|---|---|---|"
    for entry in registry.of_kind(kind):
        yield _entry_row(entry)
    yield ""


def _export_reasons() -> str:
    reasons = ", ".join(f"`{reason}`" for reason in get_args(errors.ExportReason))
    return f"`ProviderExportError` `detail.reason` values: {reasons}.\n"


def render_markdown(registry: CodeRegistry) -> str:
    """The whole page, ending in exactly one newline."""
    lines = [HEADER, "## Exception classes", ""]
    lines.append("Every exception maka_es defines lives in `maka_es.errors`.")
    lines.append("")
    lines.extend(_class_rows())
    lines.append("")
    for kind, anchor, title, intro in SECTIONS:
        lines.extend(_section(registry, kind, anchor, title, intro))
    lines += [OTHER_VOCABULARIES, _export_reasons()]
    return "\n".join(lines).rstrip("\n") + "\n"
