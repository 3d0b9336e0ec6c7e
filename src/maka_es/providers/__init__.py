"""Providers: the seam a model is called through, and the provider formats both ways.

Why a package of its own, below ``continuation``: a host's first turn (``continuation.turns``)
and a continuation (``continuation.executor``) call a provider the same way, so neither owns
it. Here are the :class:`~maka_es.providers.protocol.Provider` protocol with its request and
turn (``protocol``), the per-event replay items (``replay_items``), the message exporters
(``export``), the parsed model step every format shares (``formats``), the three wire formats
(``openai_chat``, ``openai_responses``, ``anthropic``) and ready-made providers over the SDK
clients (``sdk``). The formats are pure and never import an SDK.
"""
