"""The composition root stays thin and the services stay on typed ports (ADR 0017).

Why a test: the redesign replaced a 600-line application that every service reached into (as
``app: Any``, through its private loaders, and through a public ``commit_facts``) with services
built once over typed ports. Those properties erode one convenient shortcut at a time; these
checks name the shortcut when it comes back. import-linter already keeps services from
importing ``maka_es.app``; this file checks what it cannot see: annotations, the shape of the
delegating surface, and the public names.
"""

from __future__ import annotations

import ast
import inspect
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.application import Application

import maka_es
from maka_es.app import RuntimeApplication
from maka_es.app_api import RuntimeApi
from maka_es.continuation.claims import Claims
from maka_es.continuation.executor import ContinuationExecutor
from maka_es.continuation.planner import ContinuationPlanner
from maka_es.continuation.revalidation import Revalidation
from maka_es.continuation.service import Continuations
from maka_es.errors import WritePathRefusedError
from maka_es.ledger.facts import StoredFact, run_stream_id
from maka_es.ledger.service import Ledger, ToolCommands
from maka_es.recovery.startup import StartupRecovery
from maka_es.recovery.status import RecoveryStatusProjector
from maka_es.tooljournal.runtime import ToolRuntime

#: Every service the application builds or a host builds next to it.
SERVICES: tuple[type, ...] = (
    Ledger,
    ToolCommands,
    Claims,
    Continuations,
    ContinuationPlanner,
    Revalidation,
    ContinuationExecutor,
    StartupRecovery,
    RecoveryStatusProjector,
    ToolRuntime,
)

#: The services ``RuntimeApi`` may delegate to (attributes the application sets).
DELEGATES = frozenset(
    {
        "ledger",
        "tool_commands",
        "claims",
        "continuations",
        "operator_actions",
        "run_forks",
        "ownership",
        "host_sessions",
        "run_starts",
        "turns",
        "session_resume",
    }
)

#: The stable public API of ``maka_es`` (names as before the redesign).
PUBLIC_NAMES = frozenset(
    {
        "RUNTIME_RESUME_FAILPOINTS",
        "__version__",
        "AppendResult",
        "ContinuationFacts",
        "ContinuationPlan",
        "Diagnostic",
        "HostConfig",
        "Failpoint",
        "Resolution",
        "ResumePlan",
        "ToolDecision",
        "ToolOperation",
        "build_continuation_plan",
        "build_resume_plan",
        "resolve_tool_operations",
        "RunHeader",
        "RuntimeApplication",
        "RuntimeEvent",
        "SessionInfo",
        "canonical_args_hash",
        "canonical_json",
        "classify_lane",
        "operation_id_for",
        # the turn results and SDK providers (issue 21, ADR 0036)
        "AnthropicMessagesProvider",
        "AsyncAnthropicMessagesProvider",
        "AsyncOpenAIChatProvider",
        "AsyncOpenAIResponsesProvider",
        "OpenAIChatProvider",
        "OpenAIResponsesProvider",
        "ResumeResult",
        "TurnResult",
    }
)


def _members(annotation: object) -> tuple[object, ...]:
    """An annotation and, for a union (``X | None``), each of its members."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _untyped_or_application(annotation: object) -> bool:
    """Whether an annotation is ``Any`` or the application object (or a union holding one)."""
    for member in _members(annotation):
        if member is Any:
            return True
        if isinstance(member, type) and issubclass(member, Application):
            return True
    return False


def collaborator_offenders(service: type) -> list[str]:
    """Constructor parameters of ``service`` typed ``Any`` or as the application object."""
    hints = typing.get_type_hints(service.__init__)  # type: ignore[misc]
    parameters = inspect.signature(service.__init__).parameters  # type: ignore[misc]
    return [
        f"{service.__name__}.__init__({name}: {hints.get(name, 'unannotated')})"
        for name in parameters
        if name != "self"
        and (name not in hints or _untyped_or_application(hints[name]))
        and parameters[name].kind not in (inspect.Parameter.VAR_KEYWORD,)
    ]


def test_every_service_takes_typed_collaborators_never_the_application() -> None:
    offenders = [line for service in SERVICES for line in collaborator_offenders(service)]
    assert offenders == []


def test_the_check_flags_an_any_typed_or_application_typed_collaborator() -> None:
    class Legacy:
        def __init__(self, app: Any, store: RuntimeApplication | None) -> None: ...

    class Ported:
        def __init__(self, ledger: Ledger, *, page: int = 1) -> None: ...

    assert collaborator_offenders(Legacy) == [
        "Legacy.__init__(app: typing.Any)",
        "Legacy.__init__(store: maka_es.app.RuntimeApplication | None)",
    ]
    assert collaborator_offenders(Ported) == []


def _delegates_to_a_service(statement: ast.stmt) -> bool:
    """Whether ``statement`` calls ``self.<service>.<method>(...)`` somewhere in it."""
    for node in ast.walk(statement):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Attribute)
            and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id == "self"
            and node.func.value.attr in DELEGATES
        ):
            return True
    return False


def surface_offenders(source: str) -> list[str]:
    """Public methods of ``RuntimeApi`` in ``source`` that do more than one delegation."""
    tree = ast.parse(source)
    api = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RuntimeApi")
    offenders = []
    for method in api.body:
        if not isinstance(method, ast.FunctionDef) or method.name.startswith("_"):
            continue
        body = list(method.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        one_statement = len(body) == 1 and isinstance(body[0], ast.Return | ast.Expr)
        if not (one_statement and _delegates_to_a_service(body[0])):
            offenders.append(method.name)
    return offenders


def test_the_public_surface_is_one_delegation_per_method() -> None:
    source = Path(inspect.getfile(RuntimeApi)).read_text(encoding="utf-8")
    assert surface_offenders(source) == []
    public = [n for n, m in vars(RuntimeApi).items() if inspect.isfunction(m) and n[0] != "_"]
    assert len(public) >= 25, "the surface was not found"


def test_the_surface_check_flags_a_method_with_its_own_logic() -> None:
    source = '''
class RuntimeApi:
    def fine(self, run_id):
        """Docstring."""
        return self.ledger.get_run_header(run_id)

    def own_logic(self, run_id):
        header = self.ledger.get_run_header(run_id)
        return header.status

    def no_delegation(self, run_id):
        return run_id
'''
    assert surface_offenders(source) == ["own_logic", "no_delegation"]


def test_saving_facts_is_not_part_of_the_api() -> None:
    """Commands are public; a method that takes facts to save is not (ADR 0017)."""
    assert not hasattr(RuntimeApplication, "commit_facts")
    own = {**vars(RuntimeApi), **vars(RuntimeApplication)}
    takes_facts = []
    for name, member in own.items():
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        hints = typing.get_type_hints(member)
        hints.pop("return", None)
        if any("StoredFact" in str(hint) for hint in hints.values()):
            takes_facts.append(name)
    assert StoredFact.__name__ == "StoredFact"  # the name the check looks for
    assert takes_facts == []


def test_every_public_name_still_imports_from_maka_es() -> None:
    assert set(maka_es.__all__) == PUBLIC_NAMES
    for name in PUBLIC_NAMES:
        assert getattr(maka_es, name) is not None, name


# -- the inherited surface (issue 20) -------------------------------------------------------------

#: eventsourcing.Application's public names that write, or hand out the shared cached
#: aggregates, without maka_es's write rules: closed with ``write_path_refused``.
INHERITED_REFUSED = frozenset({"save", "take_snapshot", "notify", "repository"})

#: eventsourcing.Application's public names kept, and why each is harmless: class settings it
#: reads once at construction, the construction hooks ``__init__`` calls, the notification log
#: (a read of the recorder) and ``close``.
INHERITED_KEPT = frozenset(
    {
        # settings (class attributes)
        "AGGREGATE_CACHE_FASTFORWARD",
        "AGGREGATE_CACHE_FASTFORWARD_SKIPPING",
        "AGGREGATE_CACHE_MAXSIZE",
        "DEEPCOPY_FROM_AGGREGATE_CACHE",
        "env",
        "is_snapshotting_enabled",
        "log_section_size",
        "name",
        "notify_topics",
        "snapshot_class",
        "snapshotting_intervals",
        "snapshotting_projectors",
        # construction hooks, called once by Application.__init__
        "construct_env",
        "construct_event_store",
        "construct_factory",
        "construct_mapper",
        "construct_notification_log",
        "construct_recorder",
        "construct_repository",
        "construct_snapshot_store",
        "construct_transcoder",
        "register_transcodings",
        # reads and lifecycle
        "log",
        "notification_log",
        "close",
    }
)

#: Instance attributes Application.__init__ sets: eventsourcing's storage objects. Writing
#: through them (``recorder.insert_events``, ``events.put``) is a raw write to the store, like
#: opening the SQLite file with sqlite3; they leave the surface when the application holds
#: its eventsourcing Application instead of being one (a later issue).
INHERITED_INFRASTRUCTURE = frozenset(
    {"closing", "events", "factory", "mapper", "recorder", "snapshots"}
)

#: Instance attributes RuntimeApplication sets: its settings and the services it built.
OWN_ATTRIBUTES = frozenset(
    {
        "clock",
        "id_factory",
        "host_inspector",
        "telemetry",
        "ownership",
        "ledger",
        "tool_commands",
        "tool_runtime",
        "host_sessions",
        "claims",
        "continuations",
        "operator_actions",
        "run_forks",
        "run_starts",
        "turns",
        "session_resume",
    }
)


#: The public names maka_es defines on the application: the commands and reads (RuntimeApi),
#: the constructors and the extension points. A new one is added here on purpose.
OWN_API = frozenset(
    {
        "all_claims",
        "all_run_ids",
        "append_event",
        "append_events",
        "attest_operation",
        "claim_exists",
        "commit_tool_outcome",
        "commit_tool_prepared",
        "commit_tool_recovery_bundle",
        "continuation_start_record",
        "create_claimed_run",
        "create_run",
        "create_run_with_events",
        "end_run",
        "end_start_only_run",
        "execute_continuation",
        "execute_fork",
        "fork_run",
        "get_claim",
        "get_run_header",
        "get_session",
        "heartbeat",
        "host_lease",
        "import_run",
        "in_memory",
        "list_all_runs",
        "list_runs",
        "list_sessions",
        "now_ms",
        "on_events_committed",
        "open",
        "open_session",
        "open_sqlite",
        "plan_continuation",
        "plan_resume",
        "read_run_events",
        "read_run_payloads",
        "recover",
        "recovery_status",
        "recovery_status_projector",
        "resolve_run",
        "resume",
        "run_exists",
        "run_high_water",
        "run_turn",
        "safe_boundary_resume_enabled",
        "start_claimed_run",
        "start_run",
        "tool_operations",
        "update_run_header",
    }
)


def _public(names: typing.Iterable[str]) -> set[str]:
    return {name for name in names if not name.startswith("_")}


def test_every_public_name_of_the_class_is_pinned() -> None:
    """``dir``, not ``vars``: an inherited name (one eventsourcing adds in an upgrade) shows up
    here unclassified, to be judged a read to keep or a writer to refuse."""
    assert _public(dir(RuntimeApplication)) == OWN_API | INHERITED_REFUSED | INHERITED_KEPT
    assert _public(dir(Application)) == INHERITED_REFUSED | INHERITED_KEPT


def test_every_public_name_of_an_instance_is_pinned() -> None:
    app = RuntimeApplication.in_memory()
    try:
        names = _public(dir(app))
    finally:
        app.close()
    assert names == (
        OWN_API | INHERITED_REFUSED | INHERITED_KEPT | INHERITED_INFRASTRUCTURE | OWN_ATTRIBUTES
    )


def test_every_inherited_writer_is_closed_by_the_application_itself() -> None:
    """Each refused name is overridden here (the inherited one would write) and raises the
    typed refusal; the store-backed proof that nothing is written is
    tests/integration/app/test_inherited_write_paths.py."""
    assert set(vars(RuntimeApplication)) >= INHERITED_REFUSED
    app = RuntimeApplication.in_memory()
    calls: dict[str, typing.Callable[[], object]] = {
        "save": lambda: app.save(),
        "take_snapshot": lambda: app.take_snapshot(run_stream_id("r1")),
        "notify": lambda: app.notify([]),
        "repository": lambda: app.repository,
    }
    try:
        for name, call in calls.items():
            with pytest.raises(WritePathRefusedError) as refused:
                call()
            assert (refused.value.code, refused.value.detail) == (
                "write_path_refused",
                {"name": name},
            )
        assert not app.recorder.max_notification_id()
    finally:
        app.close()
