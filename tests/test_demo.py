"""``make demo`` kills the example agent inside its Write, recovers and continues, and checks
what it claims (docs/adr/0019-startup-recovery-reconciles-before-it-seals.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.cli.demo import main


def test_demo_kills_recovers_without_rewriting_and_continues_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "inside its Write with SIGKILL (returncode -9)" in out  # a real kill, not a fake
    assert '"disposition": "blocked", "rejectionReasons": ["dangling_tool_state"]' in out
    assert "('r1', 'tools_recovered'), ('r1', 'terminal_recovered')" in out
    assert "(reconciled)" in out  # the write was settled from the file
    assert "plan: continue []" in out
    assert "answer: Done: port.txt holds the configured port." in out
    assert "writes: 1; same inode: True" in out
    assert "every call paired with exactly one result: True ['call_1', 'call_2']" in out
    assert "planning the same boundary again: park ['continuation_already_exists']" in out
    assert (tmp_path / "demo" / "writes.log").read_text().splitlines() == ["port.txt"]
    assert (tmp_path / "demo" / "workspace" / "port.txt").read_text() == "4000\n"
