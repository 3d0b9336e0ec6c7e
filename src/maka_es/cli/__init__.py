"""Command-line entry points (the ``maka-es`` command arrives with its own issue)."""
