"""Shared fixtures and the Hypothesis profiles (``dev`` default, ``ci`` for make test,
``thorough`` for make test-deep). The profile is chosen explicitly from HYPOTHESIS_PROFILE so a
CI run (CI=true) is derandomized and bounded."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from maka_es.app import RuntimeApplication

#: pytester runs user test modules through the installed maka_es plugin (tests/plugin/).
pytest_plugins = ["pytester"]

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


class FixedClock:
    """Deterministic clock: starts at ``start`` ms and advances 1 ms per call."""

    def __init__(self, start: float = 1_700_000_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1
        return self.now


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runtime.sqlite"


@pytest.fixture
def sqlite_app(db_path: Path, clock: FixedClock) -> Iterator[RuntimeApplication]:
    app = RuntimeApplication.open_sqlite(str(db_path), clock=clock)
    yield app
    app.close()


@pytest.fixture
def memory_app(clock: FixedClock) -> Iterator[RuntimeApplication]:
    app = RuntimeApplication.in_memory(clock=clock)
    yield app
    app.close()


@pytest.fixture(params=["memory", "sqlite"])
def any_app(
    request: pytest.FixtureRequest, db_path: Path, clock: FixedClock
) -> Iterator[RuntimeApplication]:
    """The store contract runs on the in-memory store and on a real SQLite file."""
    if request.param == "memory":
        app = RuntimeApplication.in_memory(clock=clock)
    else:
        app = RuntimeApplication.open_sqlite(str(db_path), clock=clock)
    yield app
    app.close()
