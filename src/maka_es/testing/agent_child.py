"""Child process of the agent crash harness: runs a host's own function, dies at a failpoint.

Run as ``python -m maka_es.testing.agent_child TARGET POINT NTH [ARG ...]``. ``TARGET`` is
``package.module:function`` or ``path/to/file.py:function``; the function is called with the
string ``ARG``s. When ``POINT`` is not ``-``, the named failpoint (``tool.after_t1``,
``tool.before_t2``, ``store.save.inside_transaction``, or one the host hits itself with
``maka_es.failpoints.hit``) is armed: at its ``NTH`` hit the child prints :data:`INSIDE` and
blocks until the parent's SIGKILL. A function that returns prints :data:`FINISHED` and its
return value (``repr``). Why a child and a real kill: see ``maka_es.testing.crash`` and
docs/adr/0006-failpoints-and-crash-harness.md.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Callable
from typing import Any

from maka_es import failpoints

#: The child's line at the kill point (prefixed so a host's own output cannot be mistaken for it).
INSIDE = "@@maka-es INSIDE"
#: The child's line when the function returned without reaching the kill point.
FINISHED = "@@maka-es FINISHED"


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def resolve_target(target: str) -> Callable[..., Any]:
    """The function ``target`` names (``module:function`` or ``file.py:function``)."""
    where, _, name = target.rpartition(":")
    if not where or not name:
        raise SystemExit(f"target {target!r} is not 'module:function' or 'file.py:function'")
    if where.endswith(".py"):
        namespace = runpy.run_path(where, run_name="maka_es_agent_child")
        function = namespace.get(name)
    else:
        function = getattr(importlib.import_module(where), name, None)
    if not callable(function):
        raise SystemExit(f"target {target!r}: no function {name!r}")
    return function  # type: ignore[no-any-return]


def arm(point: str, nth: int) -> None:
    """Say INSIDE and block (until SIGKILL) at the ``nth`` hit of ``point``."""
    hits = 0

    def action(_: str) -> None:
        nonlocal hits
        hits += 1
        if hits == nth:
            _say(INSIDE)
            sys.stdin.buffer.read()  # the parent never writes: only the kill ends this

    failpoints.arm(point, action)


def main(argv: list[str]) -> None:
    target, point, nth, *args = argv
    function = resolve_target(target)
    if point != "-":
        arm(point, int(nth))
    result = function(*args)
    _say(f"{FINISHED} {result!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
