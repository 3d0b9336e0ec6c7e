"""The ``maka-es`` command line (docs/cli.md; ADR 0029) and ``make demo`` (``cli/demo.py``)."""
