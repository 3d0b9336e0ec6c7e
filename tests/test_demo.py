"""``make demo`` runs the whole story on a real SQLite file and says what it claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.cli.demo import main


def test_demo_recovers_refuses_and_continues_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert '"disposition": "blocked", "rejectionReasons": ["dangling_tool_state"]' in out
    assert "terminal_recovered" in out
    assert "continuation of r-finished: continue" in out
    assert "executed once: completed" in out
    assert out.count('"role": "user"') == 1  # the provider saw the user message once
    assert "planning the same boundary again: park ['continuation_already_exists']" in out
    assert (tmp_path / "demo" / "runtime.sqlite").exists()
