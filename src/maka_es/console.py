"""The ``maka-es`` console script's entry point (``[project.scripts]``; ADR 0040).

Why not ``maka_es.cli.main`` itself: the command line is the ``cli`` extra, and a script whose
module cannot be imported prints a traceback. Here a core-only install gets the command line's
one-line error instead (docs/cli.md#exit-codes): ``error [extra_missing]: ... what to do: pip
install 'maka_es[cli]'`` on stderr, exit 1.
"""

from __future__ import annotations

import sys

from maka_es.errors import MissingExtraError

#: docs/cli.md#exit-codes: an error that is no usage error.
EXIT_ERROR = 1


def main() -> None:
    """Run ``maka-es`` with ``sys.argv``, or say which extra to install."""
    try:
        from maka_es.cli.main import main as cli_main
    except MissingExtraError as exc:
        detail = exc.detail
        sys.stderr.write(
            f"error [{exc.code}]: {detail['part']} needs the {detail['extra']} extra "
            f"({detail['module']} is not installed). "
            f"what to do: pip install 'maka_es[{detail['extra']}]'\n"
        )
        raise SystemExit(EXIT_ERROR) from None
    cli_main()
