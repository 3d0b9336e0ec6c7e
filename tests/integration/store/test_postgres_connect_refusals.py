"""PostgreSQL refusing a connection (ADR 0028, amendment of issue 20): a wrong password, a role
that may not log in, a missing database fail at open at once, with their own code and the
server's reason, never after ``connect_timeout`` as ``unreachable``, and never with the
password in the message. Real server; the CLI through the installed ``maka-es`` script."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest

from maka_es.adapters.event_store import postgres_env_from_url
from maka_es.adapters.recovery_status import PostgresRecoveryStatusBackend
from maka_es.app import RuntimeApplication
from maka_es.errors import StoreAuthFailedError, StoreDatabaseMissingError, StoreUnavailableError
from tests.cli.stores import cli

#: The configured connect timeout, and the bound a refusal must beat by far.
CONNECT_TIMEOUT_S = 10
PROMPT_S = 5.0
WRONG_PASSWORD = "not-the-password-" + uuid.uuid4().hex[:12]


def _with(url: str, *, user: str | None = None, password: str | None = None, db: str = "") -> str:
    """``url`` with another user, password or database, and ``connect_timeout`` set."""
    parts = urlsplit(url)
    host = f"{parts.hostname}:{parts.port}"
    login = quote(user if user is not None else parts.username or "")
    secret = quote(password if password is not None else parts.password or "")
    path = f"/{db}" if db else parts.path
    query = "&".join(q for q in (parts.query, f"connect_timeout={CONNECT_TIMEOUT_S}") if q)
    return urlunsplit((parts.scheme, f"{login}:{secret}@{host}", path, query, ""))


def _refused(url: str) -> tuple[StoreUnavailableError, float]:
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as info:
        RuntimeApplication.open(url)
    return info.value, time.monotonic() - started


def _assert_no_secret(error: BaseException, *secrets: str) -> None:
    text = f"{error} {error.args} {getattr(error, 'detail', {})}"
    for secret in secrets:
        assert secret not in text


@pytest.fixture
def no_login_role(pg_server_url: str) -> Iterator[tuple[str, str]]:
    """A role with a password that is not permitted to log in (dropped after the test)."""
    role, password = f"nologin_{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} NOLOGIN PASSWORD '{password}'")
    yield role, password
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_a_wrong_password_is_store_auth_failed_at_once(pg_store_url: str) -> None:
    error, elapsed = _refused(_with(pg_store_url, password=WRONG_PASSWORD))
    assert isinstance(error, StoreAuthFailedError)
    assert error.code == "store_auth_failed"
    assert error.detail["reason"] == "authentication_failed"
    assert elapsed < PROMPT_S, elapsed
    assert "password authentication failed" in str(error)  # the server's reason
    _assert_no_secret(error, WRONG_PASSWORD, str(urlsplit(pg_store_url).password))


def test_a_role_that_may_not_log_in_is_store_auth_failed_at_once(
    pg_store_url: str, no_login_role: tuple[str, str]
) -> None:
    role, password = no_login_role
    error, elapsed = _refused(_with(pg_store_url, user=role, password=password))
    assert isinstance(error, StoreAuthFailedError)
    assert elapsed < PROMPT_S, elapsed
    assert f'role "{role}" is not permitted to log in' in str(error)
    _assert_no_secret(error, password)


def test_a_missing_database_is_store_database_missing_at_once(pg_store_url: str) -> None:
    missing = f"no_such_db_{uuid.uuid4().hex[:8]}"
    error, elapsed = _refused(_with(pg_store_url, db=missing))
    assert isinstance(error, StoreDatabaseMissingError)
    assert error.code == "store_database_missing"
    assert error.detail["reason"] == "database_missing"
    assert elapsed < PROMPT_S, elapsed
    assert f'database "{missing}" does not exist' in str(error)
    _assert_no_secret(error, str(urlsplit(pg_store_url).password))


def test_the_read_models_own_connection_classifies_the_refusal_alike(pg_store_url: str) -> None:
    env = postgres_env_from_url(_with(pg_store_url, password=WRONG_PASSWORD))
    started = time.monotonic()
    with pytest.raises(StoreAuthFailedError) as info:
        PostgresRecoveryStatusBackend.from_env(env)
    assert time.monotonic() - started < PROMPT_S
    _assert_no_secret(info.value, WRONG_PASSWORD)


def test_the_cli_reports_a_wrong_password_with_its_code_and_exit_1(pg_store_url: str) -> None:
    started = time.monotonic()
    ran = cli("sessions", "--json", store=_with(pg_store_url, password=WRONG_PASSWORD))
    elapsed = time.monotonic() - started
    assert ran.code == 1, ran.err
    assert ran.err.startswith("error [store_auth_failed]: "), ran.err
    assert "password authentication failed" in ran.err
    assert WRONG_PASSWORD not in ran.err + ran.out
    assert elapsed < PROMPT_S + 5, elapsed  # the script's own start-up on top
