"""``maka-es report`` shows the decision the host would get (issue 21 §3; ADR 0030): the host
inspector and the safe-boundary flag of ``continue``, and for a parked session the park reasons
and the exact next operator command; never a green ``safe_replay`` for a run that cannot go on."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.stores import build_store, cli


def _plans(html: str) -> list[tuple[str, str, str]]:
    return re.findall(r'<div class="plan (proceeds|stops)">\s*<h4>([^<]*)<span[^>]*>([^<]*)', html)


def test_a_stuck_session_report_names_the_park_and_the_next_command(tmp_path: Path) -> None:
    db, operation = build_store(tmp_path, dies=True)
    assert cli("recover", store=db).code == 0
    page = tmp_path / "s1.html"
    ran = cli("report", "--session", "s1", "--tool", "Send", "-o", str(page), store=db)
    assert ran.code == 0, ran.err
    html = page.read_text()
    assert "resume_feature_disabled" not in html
    assert "no host inspector" not in html
    assert "runtime_ledger_unreadable" in html
    assert f"Send (operation {operation}" in html  # the diagnostic names the tool and op
    # one spelling with ResumeResult.operator_commands (maka_es.recovery.operator_actions)
    assert f"maka-es attest r1 {operation} --applied --result RESULT --actor WHO" in html
    assert f"maka-es attest r1 {operation} --not-applied --actor WHO" in html
    assert f"maka-es fork r1 --before {operation} --actor WHO" in html
    assert "maka-es resume s1" in html


def test_a_start_only_fork_shows_blocked_and_end_run_not_a_green_safe_replay(
    tmp_path: Path,
) -> None:
    db, operation = build_store(tmp_path, dies=True)
    assert cli("recover", store=db).code == 0
    made = cli("fork", "r1", "--before", operation, "--actor", "alice", "--json", store=db)
    fork_run = made.json()["forkRunId"]
    page = tmp_path / "s1.html"
    assert cli("report", "--session", "s1", "--tool", "Send", "-o", str(page), store=db).code == 0
    html = page.read_text()
    assert f"maka-es end-run {fork_run}" in html
    plans = _plans(html)
    assert plans, html[:2000]
    assert not [p for p in plans if p[0] == "proceeds" and p[2] == "safe_replay"], plans
    assert ("stops", "Phase 0 resume plan ", "safe_replay") in plans  # the fork's own prefix

    again = tmp_path / "again.html"
    assert cli("report", "--session", "s1", "--tool", "Send", "-o", str(again), store=db).code == 0
    assert again.read_bytes() == page.read_bytes()


def test_plan_and_continue_say_plainly_that_the_tool_may_have_run(tmp_path: Path) -> None:
    db, operation = build_store(tmp_path, dies=True)
    assert cli("recover", store=db).code == 0
    plan = cli("plan", "r1", store=db)
    assert plan.code == 3
    assert "pending_tool_result" in plan.out
    assert "tool Send, call c1, may have run" in plan.out
    parked = cli("continue", "s1", "--dry-run", "--tool", "Send", "--json", store=db)
    assert parked.code == 3
    diagnostics = parked.json()["plan"]["diagnostics"]
    unsettled = [d for d in diagnostics if d["code"] == "runtime_ledger_unreadable"]
    assert unsettled, diagnostics
    assert f"tool Send (operation {operation}, call c1) may have run" in unsettled[0]["message"]
    assert "runtime_ledger_unreadable" in parked.json()["plan"]["rejectionReasons"]
