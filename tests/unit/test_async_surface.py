"""The asyncio facade has the whole surface of the application (issue 21 §5): every public
verb of ``RuntimeApplication`` is a verb of ``AsyncRuntimeApplication`` with the same
parameters, and the facade adds none but the documented ones. A verb added to one and not
the other fails here."""

from __future__ import annotations

import inspect

from eventsourcing.application import Application

from maka_es.aio import AsyncRuntimeApplication
from maka_es.app import RuntimeApplication

#: Public names of the application that are no verbs of the facade, and why.
NOT_VERBS = {
    # construction: the facade wraps an application built with these
    "open": "construction",
    "open_sqlite": "construction",
    "in_memory": "construction",
    # hooks and objects of the application itself, reached through ``facade.app``
    "on_events_committed": "a hook the host overrides on the application",
    "recovery_status": "the read model object (sync, in-process)",
    "recovery_status_projector": "builds a read model object",
    "safe_boundary_resume_enabled": "a setting of the application",
}
#: Public names of the facade that are not on the application, and why.
FACADE_ONLY = {
    "app": "the wrapped application",
    "execute_tool": "the application's ``tool_runtime.execute`` as a conversation",
}
#: ``eventsourcing.Application``'s own members are not maka_es verbs (its writers are refused,
#: ADR 0017 amendment); ``close`` is the one both have.
BASE = set(dir(Application)) - {"close"}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_every_verb_of_the_application_is_on_the_facade() -> None:
    verbs = public(RuntimeApplication) - BASE - set(NOT_VERBS)
    assert sorted(verbs - public(AsyncRuntimeApplication)) == []


def test_the_facade_has_no_verb_the_application_lacks() -> None:
    extra = public(AsyncRuntimeApplication) - public(RuntimeApplication) - set(FACADE_ONLY)
    assert sorted(extra) == []


def test_the_exclusions_name_real_members() -> None:
    assert set(NOT_VERBS) <= public(RuntimeApplication)
    assert set(FACADE_ONLY) - {"app"} <= public(AsyncRuntimeApplication)


def test_each_verb_takes_the_same_parameters() -> None:
    verbs = (public(RuntimeApplication) - BASE - set(NOT_VERBS)) & public(AsyncRuntimeApplication)
    for name in sorted(verbs):
        sync, facade = getattr(RuntimeApplication, name), getattr(AsyncRuntimeApplication, name)
        params = inspect.signature(sync).parameters
        expected = [(p.name, p.kind, p.default) for p in params.values()]
        got = [(p.name, p.kind, p.default) for p in inspect.signature(facade).parameters.values()]
        assert got == expected, name
        # every verb with I/O is a coroutine; the clock is no I/O
        assert inspect.iscoroutinefunction(facade) is (name != "now_ms"), name
