"""maka_es under the agent frameworks hosts already use (issue 24).

Why a package of its own: each integration rides one framework's public extension points and
needs that framework's extra (``maka_es[pydantic-ai]``, ``maka_es[openai-agents]``); the core
never imports a framework. Each module here is one framework, whole.
"""
