"""The tree drawn in ``maka_es.errors``'s docstring is the real exception hierarchy.

Why: the docstring is where a reader learns what to catch; a class added, moved or re-based
without redrawing the tree would teach the wrong ``except`` clause.
"""

from __future__ import annotations

import re

from maka_es import errors
from maka_es.codes.model import exception_classes

LINE_RE = re.compile(r"^(?P<indent>(?:  )*)- (?P<name>\w+)(?: \(also (?P<also>[\w, ]+)\))?$")


def drawn_tree() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each drawn class with the class it is drawn under and its ``also`` bases."""
    block = (errors.__doc__ or "").split("```text\n")[1].split("```")[0]
    drawn: dict[str, tuple[str, tuple[str, ...]]] = {}
    parents: list[str] = []
    for line in block.splitlines():
        match = LINE_RE.match(line)
        assert match is not None, line
        depth = len(match["indent"]) // 2
        assert depth <= len(parents), line
        del parents[depth:]
        also = tuple(name.strip() for name in (match["also"] or "").split(",") if name.strip())
        drawn[match["name"]] = (parents[-1] if parents else "Exception", also)
        parents.append(match["name"])
    return drawn


def test_the_docstring_draws_every_exception_class_under_its_bases() -> None:
    real = {
        cls.__name__: (cls.__bases__[0].__name__, tuple(b.__name__ for b in cls.__bases__[1:]))
        for cls in exception_classes()
    }
    assert drawn_tree() == real


def test_the_tree_lists_each_class_s_children_in_definition_order() -> None:
    order = [cls.__name__ for cls in exception_classes()]
    drawn = drawn_tree()
    for parent in {parent for parent, _ in drawn.values()}:
        children = [name for name, (under, _) in drawn.items() if under == parent]
        assert children == sorted(children, key=order.index), parent
