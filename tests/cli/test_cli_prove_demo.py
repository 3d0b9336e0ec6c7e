"""``maka-es crash-matrix`` and ``maka-es demo``: real children killed with SIGKILL, driven
through the installed console script (docs/cli.md#prove; ADR 0029)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.cli.data import SUITES, mismatches
from maka_es.cli.demo import KILL_POINTS
from maka_es.testing import crash_matrix
from maka_es.testing.example_child import POINTS
from tests.cli.stores import cli

pytestmark = pytest.mark.crash


def test_crash_matrix_continuation_suite_matches_every_expected_decision(tmp_path: Path) -> None:
    ran = cli("crash-matrix", "--suite", "continuation", "--json", store=tmp_path / "s.sqlite")
    assert ran.code == 0, ran.err
    report = ran.json()
    assert report["mismatches"] == 0
    cases = {case["case"]: case for case in report["cases"]}
    assert len(cases) == 6
    assert cases["after_terminal_event"]["observed"] == {
        "disposition": "park",
        "reasons": ["continuation_claim_repair_required"],
    }
    assert all(case["observed"] == case["expected"] for case in cases.values())
    assert not (tmp_path / "s.sqlite").exists()  # the operator's store is never touched


@pytest.mark.slow
def test_crash_matrix_every_suite_two_seeds() -> None:
    ran = cli("crash-matrix", "--seeds", "2", timeout=3600)
    assert ran.code == 0, ran.err
    assert "0 mismatch(es)" in ran.out
    assert "after_parked_bundle" in ran.out


def test_a_mismatch_is_reported_and_the_suites_agree_with_the_harness() -> None:
    good = {"suite": "phase0", "case": "P0", "seed": 0, "expected": 1, "observed": 1, "ok": True}
    bad = {**good, "case": "P1", "observed": 2, "ok": False}
    assert mismatches([good, bad]) == [bad]
    assert SUITES == crash_matrix.SUITES
    assert len(crash_matrix.cases(SUITES, 1)) == 12 + 8 + 6


def test_crash_matrix_refuses_an_unknown_suite() -> None:
    ran = cli("crash-matrix", "--suite", "nope")
    assert ran.code == 2
    assert ran.err.startswith("error [usage]: unknown suite(s) ['nope']")


def test_demo_kill_points_are_the_example_childs() -> None:
    assert KILL_POINTS == POINTS


def test_demo_killed_before_the_write_settles_not_applied_and_writes_once(tmp_path: Path) -> None:
    """The reconciler proves the file untouched: recovery settles the Write as not applied,
    the continued model writes again, once (ADR 0019 and ADR 0024, amendments)."""
    ran = cli("demo", "--crash-at", "before_write", "--workspace", str(tmp_path / "demo"))
    assert ran.code == 0, ran.out + ran.err
    assert "inside its Write with SIGKILL (returncode -9) at kill point before_write" in ran.out
    assert "port.txt after the kill: not written" in ran.out
    assert "port.txt: '4000\\n'; writes: 1" in ran.out
    assert "every call paired with exactly one result: True ['call_1', 'call_2', 'call_3']" in (
        ran.out
    )
    assert (tmp_path / "demo" / "workspace" / "port.txt").read_text() == "4000\n"
    assert cli("demo", "--crash-at", "nowhere").code == 2
