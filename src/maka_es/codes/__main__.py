"""``python -m maka_es.codes``: print ``docs/exceptions.md`` (``make docs-codes`` writes it)."""

from __future__ import annotations

import sys

from maka_es.codes import REGISTRY
from maka_es.codes.model import render_markdown


def main() -> int:
    sys.stdout.write(render_markdown(REGISTRY))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
