"""A turn's run and its user message are ONE save: SIGKILL leaves nothing or both (ADR 0036).

Why a real kill: the host's old first-turn loop created the run, then appended the user message,
so a crash between the two left a run with a header and no prompt. ``run_turn`` saves both in
one transaction (``RunStarts.create_run_with_events``). A child process runs ``run_turn`` on the
real store and blocks at a failpoint: inside that save (rows inserted, COMMIT not reached) or
right after it; the parent SIGKILLs it there and reads the store. After the commit, the
restart's ``resume`` continues the turn and the model receives the prompt exactly once.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from maka_es import HostConfig, RuntimeApplication, failpoints
from maka_es.continuation.turns import AFTER_TURN_STARTED
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.wire.events import TextContent

CHILD = """
import sys, time
from maka_es import HostConfig, RuntimeApplication, failpoints
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider

store, cwd, point, nth = sys.argv[1:5]
hits = []

def block(_):
    hits.append(1)
    if len(hits) < int(nth):
        return
    sys.stdout.write("INSIDE\\n")
    sys.stdout.flush()
    while True:
        time.sleep(60)

host = HostConfig(backend_kind="ai-sdk", llm_connection_slug="main", model_id="m",
                  permission_mode="ask", cwd=cwd)
app = RuntimeApplication.open(store, host_config=host)
app.open_session("s1")
failpoints.arm(point, block)
app.run_turn("s1", "hello", ScriptedProvider([ProviderTurn(({"kind": "text", "text": "hi"},))]),
             run_id="r1")
"""


def host(cwd: Path) -> HostConfig:
    return HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(cwd),
    )


def kill_at(store: str, cwd: Path, point: str, nth: int) -> None:
    """Run the child's turn and SIGKILL it at the ``nth`` hit of ``point``."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, store, str(cwd), point, str(nth)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stderr is not None
    try:
        said = child.stdout.readline().strip()
        assert said == "INSIDE", child.stderr.read()
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=60)
        child.stdout.close()
        child.stderr.close()


@pytest.mark.parametrize(
    ("point", "nth"),
    [
        (failpoints.INSIDE_SAVE_BEFORE_COMMIT, 1),
        (failpoints.INSIDE_SAVE_BEFORE_COMMIT, 2),
        (AFTER_TURN_STARTED, 1),
    ],
    ids=["inside-first-save", "inside-second-save", "after-first-save"],
)
def test_sigkill_around_the_turns_first_save_leaves_nothing_or_both(
    store_url: str, tmp_path: Path, point: str, nth: int
) -> None:
    """Killed inside the turn's first save: nothing. Killed later (inside the next save, the
    model's output, or right after the first): the run and its user message, never one alone."""
    cwd = tmp_path / "workspace"
    cwd.mkdir()
    kill_at(store_url, cwd, point, nth)
    provider = ScriptedProvider([ProviderTurn(({"kind": "text", "text": "hi"},))])
    with RuntimeApplication.open(
        store_url, host_config=host(cwd), safe_boundary_resume=True
    ) as app:
        if (point, nth) == (failpoints.INSIDE_SAVE_BEFORE_COMMIT, 1):  # nothing at all
            assert app.list_runs("s1") == []
            assert not app.run_exists("r1")
            assert app.ledger.all_run_ids() == []
            assert app.run_turn("s1", "hello", provider, run_id="r1").answer == "hi"
            return
        # both: the run with exactly its user message, declaring the tool-boundary protocol
        (user,) = app.read_run_events("r1")
        assert (user.role, user.protocol_marker) == ("user", "t1_after_preflight_v1")
        assert isinstance(user.content, TextContent)
        assert user.content.text == "hello"
        assert app.get_run_header("r1").status == "running"
        app.recover()
        resumed = app.resume("s1", provider)
        assert (resumed.status, resumed.answer) == ("continued", "hi")
    (request,) = provider.requests
    assert [m["content"] for m in request.openai_messages()] == ["hello"]  # the prompt, once
