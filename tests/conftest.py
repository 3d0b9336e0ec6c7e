"""Shared fixtures and the Hypothesis profiles (``dev`` default, ``ci`` for make test,
``thorough`` for make test-deep). The profile is chosen explicitly from HYPOTHESIS_PROFILE so a
CI run (CI=true) is derandomized and bounded."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, settings

from maka_es.app import RuntimeApplication
from tests.support.restart import Restart, restarted

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


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_app(
    request: pytest.FixtureRequest, db_path: Path, clock: FixedClock
) -> Iterator[RuntimeApplication]:
    """The store contract runs on the in-memory store, a real SQLite file and PostgreSQL."""
    if request.param == "memory":
        app = RuntimeApplication.in_memory(clock=clock)
    elif request.param == "sqlite":
        app = RuntimeApplication.open_sqlite(str(db_path), clock=clock)
    else:
        app = RuntimeApplication.open(request.getfixturevalue("pg_store_url"), clock=clock)
    yield app
    app.close()


# --- PostgreSQL (ADR 0028) -------------------------------------------------------------------
#: The server the PostgreSQL tests use (``scripts/pg-throwaway.sh`` exports it; ``make test``
#: starts that throwaway server itself when the binaries are on PATH).
PG_URL_ENV = "MAKA_ES_TEST_PG_URL"
_pg_unavailable: list[str] = []
_pg_used: list[str] = []
#: Under pytest-xdist, how many PostgreSQL tests each finished worker ran.
_pg_worker_tests: list[int] = []


def _pg_server_problem(url: str | None) -> str | None:
    if not url:
        return (
            f"{PG_URL_ENV} is not set (run `make test` with PostgreSQL's initdb on PATH, or "
            "start scripts/pg-throwaway.sh and export its settings)"
        )
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        return f"the server at {PG_URL_ENV} cannot be reached: {exc}"
    return None


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """The test server's URL; skipped loudly when there is none, and a failure in CI."""
    url = os.environ.get(PG_URL_ENV)
    problem = _pg_server_problem(url)
    if problem is not None:
        _pg_unavailable.append(problem)
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"CI=true: the PostgreSQL tests must run, but {problem}", pytrace=False)
        pytest.skip(f"POSTGRESQL TESTS SKIPPED: {problem}")
    assert url is not None
    return url


@pytest.fixture
def pg_store_url(pg_server_url: str) -> Iterator[str]:
    """A store URL on a fresh schema of the test server, dropped after the test."""
    schema = f"t_{uuid.uuid4().hex[:20]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    _pg_used.append(schema)
    joiner = "&" if "?" in pg_server_url else "?"
    yield f"{pg_server_url}{joiner}schema={schema}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '20s'")
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, db_path: Path) -> str:
    """One store setting per store kind: a SQLite file path, or a PostgreSQL URL (its own
    schema). Every store-backed tier runs through this (``RuntimeApplication.open``)."""
    if request.param == "sqlite":
        return str(db_path)
    return str(request.getfixturevalue("pg_store_url"))


@pytest.fixture
def store_app(store_url: str, clock: FixedClock) -> Iterator[RuntimeApplication]:
    """An application on each real store (SQLite file, PostgreSQL schema)."""
    app = RuntimeApplication.open(store_url, clock=clock)
    yield app
    app.close()


@pytest.fixture
def restart() -> Iterator[Restart]:
    """``restart(app)``: the same host's next incarnation on ``app``'s store (it holds none of
    ``app``'s runs, so its ``recover()`` ends them, ADR 0021); closed after the test."""
    apps: list[RuntimeApplication] = []

    def open_restarted(app: RuntimeApplication) -> RuntimeApplication:
        apps.append(restarted(app))
        return apps[-1]

    yield open_restarted
    for app in apps:
        app.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands its PostgreSQL tallies to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["maka_pg_used"] = len(_pg_used)
        workeroutput["maka_pg_unavailable"] = list(_pg_unavailable[:1])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller adds up what each xdist worker reported (``pytest_sessionfinish``)."""
    output = getattr(node, "workeroutput", {})
    _pg_worker_tests.append(int(output.get("maka_pg_used", 0)))
    _pg_unavailable.extend(output.get("maka_pg_unavailable", []))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly whether the PostgreSQL half of the suite ran (in every worker, under xdist)."""
    if _pg_unavailable:
        terminalreporter.write_sep(
            "!", f"POSTGRESQL TESTS SKIPPED: {_pg_unavailable[0]}", red=True, bold=True
        )
    elif ran := len(_pg_used) + sum(_pg_worker_tests):
        terminalreporter.write_line(
            f"PostgreSQL: {ran} tests ran on a fresh schema of the test server"
        )


# --- the docs site (ADR 0031) ---------------------------------------------------------------
def _docs_extra_installed() -> bool:
    return all(find_spec(name) is not None for name in ("mkdocs", "material", "mkdocstrings"))


@pytest.fixture(scope="session")
def mkdocs_command() -> list[str]:
    if not _docs_extra_installed():
        if os.environ.get("CI"):
            pytest.fail("CI=true but the docs extra is not installed: the site must build in CI")
        pytest.skip("DOCS SITE NOT BUILT: the docs extra is missing (pip install -e '.[docs]')")
    return [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
    ]  # never --quiet: it hides the warnings strict counts
