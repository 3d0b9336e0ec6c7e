"""Worker process of the continuation race harness.

Run as ``python -m maka_es.testing.race_child``. The worker serves rounds until its stdin
closes. Each round is one JSON line ``{db, app, plan, calls_file, outputs?}``: the worker opens
its own :class:`RuntimeApplication` on ``db`` (``app`` as in
:func:`maka_es.testing.crash_child.open_app`), prints ``READY`` and waits for the parent's
``GO`` line, so every worker is released at the same moment without any sleeping. It then
executes ``plan`` (a :class:`ContinuationPlan` dumped as JSON) with a provider that records each
call in ``calls_file`` and prints one JSON result line:

* ``{"status": ..., "targetRunId": ...}`` when execution returned;
* ``{"code": ..., "error": ..., "message": ..., "detail"?: ...}`` when it raised (``code``
  and ``detail`` of a :class:`~maka_es.errors.MakaError`; ``code`` is ``null`` for any other
  exception, e.g. SQLite's "database is locked").

Not covered by coverage gates: it runs in a separate process.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from maka_es.errors import MakaError
from maka_es.testing.crash_child import open_app, run_continuation


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _round(scenario: dict[str, Any]) -> bool:
    """One round; ``False`` when the parent closed stdin instead of saying GO."""
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


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        if not _round(json.loads(line)):
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
