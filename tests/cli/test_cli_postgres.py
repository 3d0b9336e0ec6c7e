"""The installed ``maka-es`` script on a real PostgreSQL server (``--store postgresql://...``;
docs/cli.md; ADR 0028, ADR 0029): the same commands, shapes and exit codes as on SQLite."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.cli.stores import build_store, cli


def test_inspect_plan_attest_and_recover_on_postgres(tmp_path: Path, pg_store_url: str) -> None:
    _, operation = build_store(tmp_path, dies=True, store=pg_store_url)

    sessions = cli("sessions", "--json", store=pg_store_url)
    assert sessions.code == 0, sessions.err
    assert [s["sessionId"] for s in sessions.json()] == ["s1"]
    assert [r["runId"] for r in cli("runs", "s1", "--json", store=pg_store_url).json()] == ["r1"]

    plan = cli("plan", "r1", "--json", store=pg_store_url)
    assert plan.code == 3, plan.err  # a Send that may or may not have run blocks the replay
    assert plan.json()["disposition"] == "blocked"
    ops = cli("ops", "r1", "--json", store=pg_store_url).json()
    assert [o["operationId"] for o in ops] == [operation]

    attest = ("attest", "r1", operation, "--not-applied", "--actor", "alice", "--note", "unsent")
    first = cli(*attest, "--json", store=pg_store_url)
    assert first.code == 0, first.err
    assert first.json()["created"] is True
    assert cli(*attest, "--json", store=pg_store_url).json()["created"] is False

    verify = cli("verify", store=pg_store_url)
    assert verify.code == 0, verify.err


def test_verify_exits_4_on_a_corrupted_row_on_postgres(
    tmp_path: Path, pg_server_url: str, pg_store_url: str
) -> None:
    build_store(tmp_path, dies=False, store=pg_store_url)
    assert cli("verify", store=pg_store_url).code == 0
    schema = pg_store_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schema}".maka_es_events SET state = %s WHERE notification_id = '
            f'(SELECT max(notification_id) FROM "{schema}".maka_es_events)',
            (b"{not json",),
        )
    broken = cli("verify", "--json", store=pg_store_url)
    assert broken.code == 4, broken.err
    assert broken.json()["storeIntegrity"] == "not_applicable"
    assert len(broken.json()["corruptRows"]) == 1


@pytest.mark.crash
def test_crash_matrix_on_postgres_uses_scratch_schemas_and_matches(
    pg_server_url: str, pg_store_url: str
) -> None:
    """The tool-journal suite on the chosen PostgreSQL server: every case SIGKILLed in its own
    schema, decided by a fresh application, and the schema dropped afterwards."""

    operator_schema = pg_store_url.rsplit("schema=", 1)[1]

    def schemas() -> set[str]:
        """The operator's schema and every crash-matrix scratch schema (other tests, on other
        xdist workers, create and drop their own schemas meanwhile)."""
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            found = conn.execute("SELECT nspname FROM pg_namespace").fetchall()
        names = {row[0] for row in found}
        return {n for n in names if n == operator_schema or n.startswith("crash_matrix_")}

    before = schemas()
    assert before == {operator_schema}
    ran = cli("crash-matrix", "--suite", "tooljournal", "--json", store=pg_store_url)
    assert ran.code == 0, ran.err
    report = ran.json()
    assert report["mismatches"] == 0
    cases = {case["case"]: case["observed"] for case in report["cases"]}
    assert len(cases) == 8
    assert cases["inside_t2"] == {"journal": ["prepared"], "disposition": "blocked"}
    assert cases["after_t2"] == {"journal": ["outcome_committed"], "disposition": "safe_replay"}
    assert schemas() == before  # scratch schemas dropped; the operator's schema untouched
