"""The test kit's pytest plugin (entry point ``maka_es``): a real store and the crash harness.

Why a plugin: a host testing its own agent needs the same three things this project's suite
uses, a real SQLite file per test, applications opened on it with the host's own tools, and a
child process to SIGKILL, without copying our conftest. Installed with maka_es, it loads in
every pytest run of every project that installs maka_es, so loading it imports nothing heavy:
no Hypothesis (the state machines do, when a test imports them), no ``maka_es.app`` and no
eventsourcing until a test asks for a fixture (ADR 0040). Its fixture names all start with
``maka_`` so they never shadow a host's own. Disable it with ``pytest -p no:maka_es``.
Usage: docs/testing.md.

Fixtures:

* ``maka_tools``: the tool catalogue ``maka_app`` is opened with; empty here, override it in
  your ``conftest.py`` (or test module) with your own tools and reconcilers;
* ``maka_store``: a :class:`TemporaryStore`, a SQLite file under ``tmp_path``; ``open()`` it
  as often as a restarted host would, every application it opened is closed at teardown;
* ``maka_app``: ``maka_store.open(tools=maka_tools)``;
* ``maka_crash``: an :class:`~maka_es.testing.crash.AgentCrashHarness`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported by the fixtures that need them, when a test asks
    from maka_es.app import RuntimeApplication
    from maka_es.testing.crash import AgentCrashHarness
    from maka_es.tooljournal.model.tools import Tool


class TemporaryStore:
    """A SQLite store file for one test; every application opened on it closes at teardown."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._opened: list[RuntimeApplication] = []

    def open(self, **options: Any) -> RuntimeApplication:
        """A new application on the file (``tools=``, ``env=``, ``clock=`` ... as for
        ``RuntimeApplication.open_sqlite``): call it again to play a restarted host."""
        from maka_es.app import RuntimeApplication

        app = RuntimeApplication.open_sqlite(str(self.path), **options)
        self._opened.append(app)
        return app

    def close(self) -> None:
        while self._opened:
            self._opened.pop().close()


@pytest.fixture
def maka_tools() -> Sequence[Tool[Any]]:
    """The tools ``maka_app`` gets: override this fixture with your own catalogue."""
    return ()


@pytest.fixture
def maka_store(tmp_path: Path) -> Iterator[TemporaryStore]:
    """A fresh SQLite store file under ``tmp_path``."""
    store = TemporaryStore(tmp_path / "maka_es.sqlite")
    yield store
    store.close()


@pytest.fixture
def maka_app(maka_store: TemporaryStore, maka_tools: Sequence[Tool[Any]]) -> RuntimeApplication:
    """An application on ``maka_store`` with ``maka_tools`` as its catalogue."""
    return maka_store.open(tools=list(maka_tools))


@pytest.fixture
def maka_crash() -> AgentCrashHarness:
    """The SIGKILL harness: ``kill_at("module:function", "tool.before_t2", store_path)``."""
    from maka_es.testing.crash import AgentCrashHarness

    return AgentCrashHarness()
