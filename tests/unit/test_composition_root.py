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
from maka_es.continuation.executor import ContinuationExecutor, Revalidation
from maka_es.continuation.service import ContinuationPlanner, Continuations
from maka_es.errors import WritePathRefusedError
from maka_es.ledger.model.facts import StoredFact, run_stream_id
from maka_es.ledger.service import Ledger, ToolCommands
from maka_es.recovery.startup import StartupRecovery
from maka_es.recovery.status import RecoveryStatusProjector
from maka_es.tooljournal.runtime import ToolRuntime
from tests.support.host_surface import PLUMBING
from tests.unit.test_public_api import PUBLIC

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

#: The services ``RuntimeApi`` may delegate to (attributes the application sets; the ones a
#: host never reaches for are private, ADR 0039).
DELEGATES = frozenset(
    {
        "ledger",
        "ownership",
        "run_forks",
        "_continuations",
        "_operator_actions",
        "_host_sessions",
        "_turns",
        "_session_resume",
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
        if isinstance(member, type) and issubclass(member, Application | RuntimeApplication):
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
    assert len(public) >= 18, "the surface was not found"


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
    assert set(maka_es.__all__) == set(PUBLIC)
    for name in PUBLIC:
        assert getattr(maka_es, name) is not None, name


# -- the host surface (issue 20; by composition, issue 22) ----------------------------------------

#: eventsourcing.Application's public names that write, or hand out the shared cached
#: aggregates, without maka_es's write rules: gone from the host object (it holds its
#: eventsourcing application, ADR 0039), and closed with ``write_path_refused`` on that held
#: application too (``app._es``, the store internals' one handle).
INHERITED_REFUSED = frozenset({"save", "take_snapshot", "notify", "repository"})

#: The two public names the host object shares with eventsourcing.Application: ``close`` and
#: ``env`` (the store settings, read-only here).
SHARED_WITH_APPLICATION = frozenset({"close", "env"})

#: Instance attributes RuntimeApplication sets: its settings and the documented services a
#: host (or its tools, tests and operators) reaches for the plumbing (ADR 0039).
OWN_ATTRIBUTES = frozenset(
    {
        # settings and extension points
        "clock",
        "id_factory",
        "host_inspector",
        "telemetry",
        # service attributes
        "ledger",
        "run_starts",
        "tool_journal",
        "tool_runtime",
        "claims",
        "ownership",
        "run_forks",
    }
)


#: The verbs a host calls (about 25), the hook it overrides and the properties it reads; the
#: plumbing is on the service attributes above. A new one is added here on purpose.
HOST_VERBS = frozenset(
    {
        # construction and lifecycle
        "open",
        "open_sqlite",
        "in_memory",
        "close",
        # a host's turn and its restart (ADR 0036)
        "run_turn",
        "resume",
        "recover",
        # sessions and runs
        "open_session",
        "start_run",
        "get_session",
        "list_sessions",
        "list_runs",
        "get_run_header",
        "run_exists",
        "read_run_events",
        "end_run",
        # planning and continuing
        "plan_resume",
        "plan_continuation",
        "execute_continuation",
        # the operator's actions (ADR 0022, ADR 0035)
        "attest_operation",
        "fork_run",
        "execute_fork",
        "end_start_only_run",
        # the lease (ADR 0021) and the clock
        "heartbeat",
        "now_ms",
        # the recovery-status read model (ADR 0012)
        "recovery_status_projector",
    }
)
HOST_HOOKS_AND_PROPERTIES = frozenset(
    {"on_events_committed", "recovery_status", "safe_boundary_resume_enabled", "env"}
)
OWN_API = HOST_VERBS | HOST_HOOKS_AND_PROPERTIES


def _public(names: typing.Iterable[str]) -> set[str]:
    return {name for name in names if not name.startswith("_")}


def test_every_public_name_of_the_class_is_pinned() -> None:
    """``dir``, not ``vars``: a name inherited from anywhere shows up here unclassified. The
    class is no ``eventsourcing.Application``; it shares only ``close`` and ``env`` with it."""
    assert not issubclass(RuntimeApplication, Application)
    assert _public(dir(RuntimeApplication)) == OWN_API
    assert _public(dir(RuntimeApplication)) & _public(dir(Application)) == SHARED_WITH_APPLICATION


def test_every_public_name_of_an_instance_is_pinned() -> None:
    app = RuntimeApplication.in_memory()
    try:
        names = _public(dir(app))
    finally:
        app.close()
    assert names == OWN_API | OWN_ATTRIBUTES
    assert not names & (_public(dir(Application)) - SHARED_WITH_APPLICATION)


def test_every_inherited_writer_is_gone_from_the_host_and_closed_on_the_held_store() -> None:
    """Each refused name is absent from the host object; on the eventsourcing application it
    holds (``app._es``) it raises the typed refusal. The store-backed proof that nothing is
    written is tests/integration/app/test_inherited_write_paths.py."""
    app = RuntimeApplication.in_memory()
    held = app._es
    calls: dict[str, typing.Callable[[], object]] = {
        "save": lambda: held.save(),
        "take_snapshot": lambda: held.take_snapshot(run_stream_id("r1")),
        "notify": lambda: held.notify([]),
        "repository": lambda: held.repository,
    }
    try:
        for name, call in calls.items():
            assert not hasattr(app, name), name
            with pytest.raises(WritePathRefusedError) as refused:
                call()
            assert (refused.value.code, refused.value.detail) == (
                "write_path_refused",
                {"name": name},
            )
        assert not held.recorder.max_notification_id()
    finally:
        app.close()


def test_the_plumbing_is_on_the_service_attributes_not_the_host() -> None:
    """What left the host object (issue 22, part 2) is on the service attribute that documents
    it (tests/support/host_surface.py): ``app.append_events`` is ``app.ledger.append_events``."""
    app = RuntimeApplication.in_memory()
    try:
        for attribute, (service_type, names) in PLUMBING.items():
            service = getattr(app, attribute)
            assert isinstance(service, service_type), attribute
            assert attribute in OWN_ATTRIBUTES
            for name in sorted(names):
                assert callable(getattr(service, name)), f"{attribute}.{name}"
                assert not hasattr(app, name) or name in OWN_API, name
    finally:
        app.close()


def test_the_tool_runtime_runs_on_the_tool_journal_not_the_application() -> None:
    app = RuntimeApplication.in_memory()
    try:
        assert app.tool_runtime.journal is app.tool_journal
        assert not isinstance(app.tool_runtime.journal, RuntimeApplication)
    finally:
        app.close()
