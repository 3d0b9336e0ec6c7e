"""Child process of the SIGKILL crash harness.

Run as ``python -m maka_es.testing.crash_child``. It reads one JSON scenario from stdin, performs
its steps through a real :class:`RuntimeApplication` on a SQLite file, prints ``READY`` only
after the last command *returned* (so the facts are committed), and then blocks until the parent
kills it. With ``arm_inside_save`` it instead prints ``INSIDE`` from within the SQLite write
transaction of the last step (rows inserted, COMMIT not reached) and blocks there; with
``failpoint: {name, nth}`` it prints ``INSIDE`` at the nth hit of any named failpoint (inside a
save, after T1, after a probe tool's side effect, before or after T2) and blocks there.

Continuations: the application is opened with the optional scenario section ``app``
(``{env, id_prefix, observation, tools_root}``: extra environment such as the feature flag, a
deterministic id prefix for ``id_factory``, a :class:`HostObservation` for a
``StaticHostInspector``, and the root of the probe tools given to the application as its
catalogue, ``tools=``). Because
the parent harness forwards only ``steps``, an ``{"op": "app", ...}`` step does the same: it
(re)opens the application with that configuration (as the first step, before anything else).
The ``continue`` step plans ``plan_continuation(session_id)`` (or takes a ready ``plan``) and
executes it with a provider answering one text item (or the scripted ``turns``, a list of
output lists, one per provider call of the continuation's agent loop), which first appends one
line to ``calls_file`` (fsync'd) so the parent can prove whether the provider was ever called.
With ``hang_in_provider`` the provider says ``INSIDE`` after recording its call and blocks:
the process is then killed during its model call. ``fork`` forks a run before an operation
(``fork_run``) and ``execute_fork`` runs that fork with the same recording provider.
The ``startup_recover`` step runs startup recovery (``RuntimeApplication.recover()``), and
``app_tool`` runs a call through the application's own ``tool_runtime``.

A ``finally`` block writes ``marker``: after SIGKILL that file must NOT exist, which proves the
process really died abruptly rather than unwinding.

Not covered by coverage gates: a SIGKILLed process writes no coverage data.

With ``--race`` (``python -m maka_es.testing.crash_child --race``) it is a worker of the
continuation race harness instead: it serves rounds until its stdin closes. Each round is one
JSON line ``{db, app, plan, calls_file, outputs?}``: the worker opens its own
:class:`RuntimeApplication` on ``db`` (``app`` as in :func:`open_app`), prints ``READY`` and
waits for the parent's ``GO`` line, so every worker is released at the same moment without any
sleeping. It then executes ``plan`` (a :class:`ContinuationPlan` dumped as JSON) with a
provider that records each call in ``calls_file`` and prints one JSON result line:

* ``{"status": ..., "targetRunId": ...}`` when execution returned;
* ``{"code": ..., "error": ..., "message": ..., "detail"?: ...}`` when it raised (``code``
  and ``detail`` of a :class:`~maka_es.errors.MakaError`; ``code`` is ``null`` for any other
  exception, e.g. SQLite's "database is locked").
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.errors import MakaError
from maka_es.providers.protocol import ProviderRequest, ProviderTurn, ScriptedProvider
from maka_es.testing.probes import probe_tools
from maka_es.tooljournal.runtime import ToolRuntime

#: The child's fixed clock (ms): deterministic timestamps across parent and child.
CHILD_CLOCK_MS = 1_000.0


def _say(word: str) -> None:
    sys.stdout.write(word + "\n")
    sys.stdout.flush()


def _block_forever() -> None:
    # The parent keeps our stdin open and never writes again: this read only ends with the kill.
    sys.stdin.buffer.read()


def _inside(_: str) -> None:
    _say("INSIDE")
    _block_forever()


def _arm_nth(name: str, nth: int) -> None:
    """Say INSIDE and block at the ``nth`` hit of the failpoint ``name``."""
    hits = 0

    def action(hit_name: str) -> None:
        nonlocal hits
        hits += 1
        if hits == nth:
            _inside(hit_name)

    failpoints.arm(name, action)


def open_app(db: str, config: Mapping[str, Any] | None = None) -> RuntimeApplication:
    """The application a child (or the parent, to look afterwards) opens on ``db``.

    ``config`` is the scenario's ``app`` section: ``env`` (extra environment, e.g.
    ``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME=1`` or ``SQLITE_LOCK_TIMEOUT``), ``id_prefix`` (ids
    ``<prefix>1``, ``<prefix>2``, ... for ``id_factory``), ``observation`` (a
    :class:`HostObservation` as a dict, served by a :class:`StaticHostInspector`) and
    ``tools_root`` (the application's catalogue: the probe tools logging into that root).
    """
    config = config or {}
    kwargs: dict[str, Any] = {"clock": lambda: CHILD_CLOCK_MS}
    if config.get("env"):
        kwargs["env"] = {str(k): str(v) for k, v in dict(config["env"]).items()}
    if config.get("id_prefix") is not None:
        prefix = str(config["id_prefix"])
        counter = itertools.count(1)
        kwargs["id_factory"] = lambda: f"{prefix}{next(counter)}"
    if config.get("observation") is not None:
        observation = HostObservation.model_validate(config["observation"])
        kwargs["host_inspector"] = StaticHostInspector(observation)
    if config.get("tools_root") is not None:
        kwargs["tools"] = probe_tools(Path(str(config["tools_root"])))
    return RuntimeApplication.open(db, **kwargs)


class RecordingProvider:
    """A :class:`ScriptedProvider` with one turn (or ``turns``) that first records the call
    durably.

    Each call appends ``<pid> <run_id>`` to ``calls_file`` and fsyncs it *before* answering,
    so after a SIGKILL the file says exactly whether (and by whom) the provider was called.
    """

    def __init__(
        self,
        calls_file: str | None,
        outputs: list[dict[str, Any]] | None = None,
        turns: list[list[dict[str, Any]]] | None = None,
        *,
        hang: bool = False,
    ) -> None:
        self.calls_file = calls_file
        self.hang = hang
        answer = outputs if outputs is not None else [{"kind": "text", "text": "continued"}]
        script = turns if turns is not None else [answer]
        self.scripted = ScriptedProvider([ProviderTurn(outputs=tuple(turn)) for turn in script])

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        if self.calls_file is not None:
            with open(self.calls_file, "a", encoding="utf-8") as calls:
                calls.write(f"{os.getpid()} {request.run_id}\n")
                calls.flush()
                os.fsync(calls.fileno())
        if self.hang:  # the model call is in flight when the parent kills us
            _inside("provider")
        return self.scripted.complete(request)


def _provider(step: Mapping[str, Any]) -> RecordingProvider:
    return RecordingProvider(
        step.get("calls_file"),
        step.get("outputs"),
        step.get("turns"),
        hang=bool(step.get("hang_in_provider")),
    )


def run_continuation(app: RuntimeApplication, step: Mapping[str, Any]) -> ContinuationOutcome:
    """The ``continue`` step: plan (unless ``plan`` is given as JSON) and execute."""
    if step.get("plan") is not None:
        plan = ContinuationPlan.model_validate(step["plan"])
    else:
        plan = app.plan_continuation(step["session_id"], step.get("source_run_id"))
    if plan.continuation is None:
        raise MakaError(
            f"the continuation plan parked: {list(plan.rejection_reasons)}",
            code="continuation_plan_parked",
        )
    return app.execute_continuation(plan, _provider(step))


def _fork_step(app: RuntimeApplication, step: Mapping[str, Any]) -> None:
    """``fork`` (``fork_run``) or ``execute_fork`` (with the recording provider)."""
    if step["op"] == "fork":
        app.fork_run(
            step["run_id"],
            before_operation=step["before_operation"],
            actor=step["actor"],
            note=step.get("note", ""),
        )
    else:
        app.execute_fork(step["fork_run_id"], _provider(step))


def _step(app: RuntimeApplication, step: dict[str, Any]) -> None:
    op = step["op"]
    if op == "open_session":
        app.open_session(step["session_id"], step["cwd"], step.get("workspace_identity"))
    elif op == "create_run":
        app.ledger.create_run(step["header"])
    elif op == "append":
        app.ledger.append_events(step["run_id"], step["events"])
    elif op == "update_header":
        app.ledger.update_run_header(step["run_id"], step["patch"])
    elif op == "t1":
        app.tool_journal.commit_tool_prepared(
            step["run_id"],
            step["call"],
            recovery_mode=step.get("recovery_mode", "never_auto_retry"),
            metadata=step.get("metadata"),
        )
    elif op == "t2":
        app.tool_journal.commit_tool_outcome(step["run_id"], step["response"])
    elif op == "run_tool":
        ToolRuntime(app.tool_journal, probe_tools(Path(step["root"]))).execute(
            step["run_id"], step["call"]
        )
    elif op == "app_tool":
        app.tool_runtime.execute(step["run_id"], step["call"])
    elif op == "recover":
        ToolRuntime(app.tool_journal, probe_tools(Path(step["root"]))).recover(step["run_id"])
    elif op == "startup_recover":
        app.recover()
    elif op == "continue":
        run_continuation(app, step)
    elif op in {"fork", "execute_fork"}:
        _fork_step(app, step)
    elif op == "bundle":
        app.tool_journal.commit_tool_recovery_bundle(
            step["run_id"],
            step["operation_id"],
            reconcile=step["reconcile"],
            decision=step["decision"],
            outcome=step.get("outcome"),
        )
    else:
        raise ValueError(f"unknown step {op!r}")


def main() -> int:
    scenario = json.loads(sys.stdin.readline())
    marker = Path(scenario["marker"])
    try:
        steps: list[dict[str, Any]] = scenario["steps"]
        # a leading "app" step configures the first open instead of reopening
        config = steps[0] if steps and steps[0]["op"] == "app" else scenario.get("app")
        app = open_app(scenario["db"], config)
        armed = scenario.get("failpoint")
        for index, step in enumerate(steps):
            if armed and index == int(armed.get("step", 0)):
                _arm_nth(armed["name"], int(armed.get("nth", 1)))
            if scenario.get("arm_inside_save") and index == len(steps) - 1:
                failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, _inside)
            if step["op"] == "app":
                if index > 0:
                    app.close()
                    app = open_app(scenario["db"], step)
                continue
            _step(app, step)
        _say("READY")
        _block_forever()
    finally:
        marker.write_text("finally ran\n")
    return 0


# === the race worker (``--race``) ====================================================


def _race_round(scenario: dict[str, Any]) -> bool:
    """One race round; ``False`` when the parent closed stdin instead of saying GO."""
    app = open_app(scenario["db"], scenario.get("app"))
    try:
        _say("READY")
        go = sys.stdin.readline()
        if go.strip() != "GO":
            return False
        try:
            outcome = run_continuation(app, scenario)
        except MakaError as exc:
            result: dict[str, Any] = {
                "code": exc.code,
                "error": type(exc).__name__,
                "message": str(exc),
                "detail": dict(exc.detail),
            }
        except Exception as exc:
            result = {"code": None, "error": type(exc).__name__, "message": str(exc)}
        else:
            result = {"status": outcome.status, "targetRunId": outcome.target_run_id}
        _say(json.dumps(result))
        return True
    finally:
        app.close()


def serve_race_rounds() -> int:
    """``--race``: serve race rounds until stdin closes (module docstring)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        if not _race_round(json.loads(line)):
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(serve_race_rounds() if sys.argv[1:] == ["--race"] else main())
