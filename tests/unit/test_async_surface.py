"""The asyncio facade has the whole host surface of the application (issue 21, part 5; issue 22,
part 2): every public verb of ``RuntimeApplication`` is a verb of ``AsyncRuntimeApplication``
with the same parameters, every plumbing method on the application's service attributes
(``app.ledger``, ``app.tool_journal``, ...) is a coroutine on the facade's attribute of the same
name with the same parameters, and the facade adds none but the documented ones. A verb added to
one and not the other fails here."""

from __future__ import annotations

import asyncio
import inspect

from maka_es.aio import AsyncRuntimeApplication
from maka_es.app import RuntimeApplication
from tests.support.host_surface import PLUMBING

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
    "env": "the store settings of the application",
}
#: Public names of the facade that are not on the application, and why.
FACADE_ONLY = {
    "app": "the wrapped application",
    "execute_tool": "the application's ``tool_runtime.execute`` as a conversation",
}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_every_verb_of_the_application_is_on_the_facade() -> None:
    verbs = public(RuntimeApplication) - set(NOT_VERBS)
    assert sorted(verbs - public(AsyncRuntimeApplication)) == []


def test_the_facade_has_no_verb_the_application_lacks() -> None:
    extra = public(AsyncRuntimeApplication) - public(RuntimeApplication) - set(FACADE_ONLY)
    assert sorted(extra) == []


def test_the_exclusions_name_real_members() -> None:
    assert set(NOT_VERBS) <= public(RuntimeApplication)
    assert set(FACADE_ONLY) - {"app"} <= public(AsyncRuntimeApplication)


def _same_parameters(sync: object, facade: object, name: str) -> None:
    params = inspect.signature(sync).parameters  # type: ignore[arg-type]
    expected = [(p.name, p.kind, p.default) for p in params.values()]
    got = [(p.name, p.kind, p.default) for p in inspect.signature(facade).parameters.values()]  # type: ignore[arg-type]
    assert got == expected, name


def test_each_verb_takes_the_same_parameters() -> None:
    verbs = (public(RuntimeApplication) - set(NOT_VERBS)) & public(AsyncRuntimeApplication)
    for name in sorted(verbs):
        sync, facade = getattr(RuntimeApplication, name), getattr(AsyncRuntimeApplication, name)
        _same_parameters(sync, facade, name)
        # every verb with I/O is a coroutine; the clock is no I/O
        assert inspect.iscoroutinefunction(facade) is (name != "now_ms"), name


def test_the_facade_has_the_same_service_attributes_with_the_same_methods() -> None:
    async def main() -> None:
        async with AsyncRuntimeApplication(RuntimeApplication.in_memory()) as aio:
            for attribute, (_, names) in PLUMBING.items():
                service, facade = getattr(aio.app, attribute), getattr(aio, attribute)
                assert public(type(facade)) == set(names), attribute
                for name in sorted(names):
                    method = getattr(facade, name)
                    assert inspect.iscoroutinefunction(method), f"{attribute}.{name}"
                    _same_parameters(getattr(service, name), method, f"{attribute}.{name}")

    asyncio.run(main())
