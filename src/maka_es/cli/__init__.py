"""The ``maka-es`` command line (docs/cli.md; ADR 0029) and ``make demo`` (``cli/demo.py``).

It is the ``cli`` extra (ADR 0040): imported without typer, rich or jinja2 it raises
``MissingExtraError`` (``extra_missing``) naming ``pip install 'maka_es[cli]'``.
"""

from maka_es.extras import CLI_MODULES, require_extra

require_extra("cli", "the maka-es command line (maka_es.cli)", CLI_MODULES)
