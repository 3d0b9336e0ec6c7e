"""The API reference is complete: every public verb of the host object and of the asyncio
facade, every service attribute's method, every provider and every extension point has a
docstring and a rendered entry on the built site (issue 22, part 7).

Why on the built site and not on docs/api.md's text: mkdocstrings leaves out members without a
docstring and members a directive does not reach (an inherited method, a name outside a
module's ``__all__``), so only the rendered anchors say what a reader finds. The site is built
once per module, in strict mode, as tests/test_docs_blocks.py builds it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import maka_es
from maka_es import aio
from maka_es.app import RuntimeApplication, ToolJournalService
from maka_es.continuation import host
from maka_es.continuation.claims import Claims
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.service import Ledger, RunStarts
from maka_es.providers import anthropic as provider_anthropic
from maka_es.providers import formats as provider_formats
from maka_es.providers import openai_chat as provider_openai_chat
from maka_es.providers import openai_responses as provider_openai_responses
from maka_es.providers import protocol as provider
from maka_es.providers import sdk as sdk_providers
from maka_es.tooljournal import runtime
from maka_es.tooljournal.model import tools
from tests.test_docs_blocks import ROOT, _build

#: Classes whose every public member a host may call: the host object, the facade and the
#: service attributes (docs/api.md, "The host object").
SURFACES: tuple[type, ...] = (
    RuntimeApplication,
    aio.AsyncRuntimeApplication,
    Ledger,
    RunStarts,
    ToolJournalService,
    Claims,
    HostLeases,
    runtime.ToolRuntime,
    aio.AsyncLedger,
    aio.AsyncRunStarts,
    aio.AsyncToolJournal,
    aio.AsyncClaims,
    aio.AsyncOwnership,
)
#: Modules whose exported names are providers or extension points.
EXTENSION_MODULES: tuple[ModuleType, ...] = (
    sdk_providers,
    provider,
    provider_formats,
    provider_openai_chat,
    provider_openai_responses,
    provider_anthropic,
    host,
    tools,
)
ANCHOR = re.compile(r'id="(maka_es\.[A-Za-z0-9_.]+)"')


@pytest.fixture(scope="module")
def anchors(mkdocs_command: list[str], tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The ids of every rendered API entry on the built site."""
    out = tmp_path_factory.mktemp("site")
    built = _build(mkdocs_command, ROOT / "mkdocs.yml", out)
    assert built.returncode == 0, built.stderr
    return set(ANCHOR.findall((out / "api" / "index.html").read_text()))


def _defining_class(cls: type, name: str) -> type:
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def _members() -> Iterator[tuple[str, Any]]:
    """``(ClassName.member, object)`` for every public member of every surface class."""
    for cls in SURFACES:
        for name in sorted(n for n in dir(cls) if not n.startswith("_")):
            owner = _defining_class(cls, name)
            if owner.__module__.startswith("maka_es"):
                yield f"{owner.__name__}.{name}", inspect.getattr_static(owner, name)


def _exported() -> Iterator[tuple[str, Any]]:
    """``(name, object)`` for the root's and the extension modules' exported classes and
    functions (constants and type aliases have no entry of their own)."""
    modules: tuple[ModuleType, ...] = (maka_es, *EXTENSION_MODULES)
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield name, obj


def _doc(obj: Any) -> str:
    target = obj.__func__ if isinstance(obj, classmethod | staticmethod) else obj
    return inspect.getdoc(target) or ""


def test_every_surface_member_and_export_has_a_docstring() -> None:
    missing = [name for name, obj in [*_members(), *_exported()] if not _doc(obj).strip()]
    assert missing == []


def test_every_surface_member_has_a_rendered_entry(anchors: set[str]) -> None:
    suffixes = {anchor.rsplit(".", 2)[-2] + "." + anchor.rsplit(".", 1)[-1] for anchor in anchors}
    missing = [name for name, _ in _members() if name not in suffixes]
    assert missing == []


def test_every_provider_and_extension_point_has_a_rendered_entry(anchors: set[str]) -> None:
    names = {anchor.rsplit(".", 1)[-1] for anchor in anchors}
    missing = sorted({name for name, _ in _exported() if name not in names})
    assert missing == []


def test_the_check_sees_a_member_without_an_entry(anchors: set[str]) -> None:
    """The suffix check is not vacuous: a name no page renders is reported."""
    suffixes = {anchor.rsplit(".", 2)[-2] + "." + anchor.rsplit(".", 1)[-1] for anchor in anchors}
    assert "RuntimeApi.run_turn" in suffixes
    assert "RuntimeApi.no_such_verb" not in suffixes
    assert Path(inspect.getfile(RuntimeApplication)).name == "app.py"
