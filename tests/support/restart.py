"""The same host after a restart: a new application instance on the same store.

Why: ``recover()`` leaves alone the runs its own application instance holds (ADR 0021,
amended): a test that builds an interrupted run and then recovers it must recover from the
host's next incarnation, as a real host does after a crash, not from the instance that is
still holding the run.
"""

from __future__ import annotations

from collections.abc import Callable

from maka_es.app import RuntimeApplication


def restarted(app: RuntimeApplication) -> RuntimeApplication:
    """A new instance with ``app``'s store, clock, ids, host id, lease and tools; it holds
    none of ``app``'s runs. The caller closes it."""
    return RuntimeApplication(
        env=dict(app.env),
        clock=app.clock,
        id_factory=app.id_factory,
        tools=app.tool_runtime.tools.values(),
        tool_permission=app.tool_runtime.permission,
        host_id=app.ownership.host_id,
        lease_ms=app.ownership.lease_ms,
    )


#: The ``restart`` fixture (tests/conftest.py): ``restart(app)`` is :func:`restarted`, closed
#: after the test.
Restart = Callable[[RuntimeApplication], RuntimeApplication]
