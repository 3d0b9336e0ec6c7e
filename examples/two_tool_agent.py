"""A complete two-tool agent that survives ``kill -9`` anywhere: read a config, write a file.

The agent itself is ``maka_es.example_agent`` (src/maka_es/example_agent.py): it ships in the
package so that ``maka-es demo`` runs it from an installed wheel too (ADR 0040). This file is
the same agent where a reader of ``examples/`` looks for it:

    python examples/two_tool_agent.py DATA_DIR
"""

from __future__ import annotations

import sys

from maka_es.example_agent import (
    HOST,
    PROMPT,
    RUN,
    SESSION,
    ReadArgs,
    ScriptedChatClient,
    main,
    open_app,
    read_config_tool,
    start,
)

__all__ = [
    "HOST",
    "PROMPT",
    "RUN",
    "SESSION",
    "ReadArgs",
    "ScriptedChatClient",
    "main",
    "open_app",
    "read_config_tool",
    "start",
]

if __name__ == "__main__":
    start(sys.argv[1:])
