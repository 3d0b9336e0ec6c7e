"""Test kit shipped with maka_es for hosts' own suites: builders, strategies, crash child.

Import what you need from the submodules (``maka_es.testing.builders``, ...); nothing here is
used by the runtime itself.
"""
