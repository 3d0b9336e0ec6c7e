"""Render the code registry and the exception hierarchy as ``docs/exceptions.md``.

Why generated: a hand-kept list of codes drifts from the code the first time someone adds a
refusal; this page is rebuilt from :data:`maka_es.codes.REGISTRY` and the classes of
:mod:`maka_es.errors`, and a test fails when the committed copy differs. Output is a pure
function of those two, so it is byte-stable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

from maka_es import errors
from maka_es.codes.model import CodeEntry, CodeKind, CodeRegistry

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
