"""docs/testing.md is a user's test module: run it through the installed pytest plugin.

Why pytester in a subprocess: a host's suite loads the plugin from its entry point, in a fresh
interpreter, with none of this project's conftest; the page's fixtures (``maka_tools``,
``maka_store``, ``maka_app``, ``maka_crash``) and state machine must work exactly there.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_plugin_is_registered_under_pytest11() -> None:
    [plugin] = [e for e in entry_points(group="pytest11") if e.name == "maka_es"]
    assert plugin.value == "maka_es.testing.pytest_plugin"


def test_loading_the_plugin_imports_no_hypothesis() -> None:
    probe = "import sys, maka_es.testing.pytest_plugin; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_testing_page_passes_as_a_user_test_module(pytester: pytest.Pytester) -> None:
    module = "\n\n".join(PYTHON_BLOCK.findall(PAGE.read_text(encoding="utf-8")))
    pytester.makepyfile(test_label_agent=module)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)


def test_a_user_test_that_breaks_the_invariant_fails_through_the_plugin(
    pytester: pytest.Pytester,
) -> None:
    """The kit can fail: a never-retried tool whose crash is 'recovered' by running it again."""
    module = "\n\n".join(PYTHON_BLOCK.findall(PAGE.read_text(encoding="utf-8")))
    module += """

def test_running_the_label_twice_is_seen(maka_store, maka_crash, maka_tools, tmp_path):
    store = str(maka_store.path)
    maka_crash.kill_at(f"{__file__}:agent", "tool.before_t2", store, str(tmp_path / "tickets"))
    (tmp_path / "tickets" / "T-1.label").write_text("someone else")
    app = maka_store.open(tools=maka_tools)
    app.recover()
    assert app.tool_journal.tool_operations("r1")[0].state == "recovery_completed"
"""
    pytester.makepyfile(test_label_agent=module)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*recovery_parked*"])
