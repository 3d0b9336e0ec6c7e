"""The HTML report read from a real SQLite store: contents, escaping, no network, determinism,
and refusals that write nothing (ADR 0030). The browser checks are in test_report_browser.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from maka_es.errors import MakaError, ReportOutputError
from maka_es.report import (
    render_run_report,
    render_session_report,
    write_run_report,
    write_session_report,
)
from maka_es.testing.probes import store_snapshot
from tests.integration.report.scenario import HOSTILE, Store, open_app


class _Elements(HTMLParser):
    """Every start tag with its attributes, as the parser (not a regex) sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.tags


def _attr(html: str, name: str) -> list[str]:
    return [a[name] or "" for _, a in _elements(html) if name in a]


def _section(html: str, run_id: str) -> str:
    start = html.index(f'data-run-id="{run_id}"')
    end = html.find("<section", start)
    return html[start : end if end != -1 else len(html)]


def test_the_session_page_shows_every_event_operation_decision_and_edge(store: Store) -> None:
    with open_app(store.db) as app:
        html = render_session_report(app, "s1")
        event_ids = {e.id for r in app.list_runs("s1") for e in app.read_run_events(r.run_id)}
    assert set(_attr(html, "data-event-id")) == event_ids
    assert set(_attr(html, "data-run-id")) == {
        store.crashed_run_id,
        store.fork_run_id,
        store.continuation_run_id,
    }
    crashed = _section(html, store.crashed_run_id)
    # the indeterminate operation: T1 only, journal "prepared", resolver "indeterminate"
    assert f'data-operation-id="{store.indeterminate_operation_id}"' in crashed
    assert 'class="attention"' in crashed
    assert "state-prepared" in crashed
    assert "decision-indeterminate" in crashed
    assert "dispatch_without_response" in crashed
    # the Phase 0 plan and the continuation decision, their blocking reasons highlighted
    assert re.search(r'<li class="blocking"><code class="code">dangling_tool_state', crashed)
    assert "Continuation decision" in crashed
    fork = _section(html, store.fork_run_id)
    assert "decision-completed" in fork
    assert "state-outcome_committed" in fork
    assert re.search(r'<li class="blocking"><code class="code">continuation_already_exists', fork)
    # lineage: a fork edge r1 -> fork (with who and why), a continuation edge fork -> next
    anchors = set(_attr(html, "id"))
    links = [h[1:] for h in _attr(html, "href")]
    assert set(links) <= anchors, "every link points to an element of the page"
    assert "kind-fork" in html
    assert "kind-continuation" in html
    assert "alice" in html
    assert "not sent?" in html


def test_a_run_page_holds_the_run_in_full_and_its_lineage_as_neighbours(store: Store) -> None:
    with open_app(store.db) as app:
        html = render_run_report(app, store.fork_run_id)
        fork_ids = {e.id for e in app.read_run_events(store.fork_run_id)}
    assert set(_attr(html, "data-event-id")) == fork_ids
    assert html.count('class="run full') == 1
    assert html.count('class="run card') == 2
    assert f"maka_es run {store.fork_run_id}" in html


def test_hostile_event_text_is_escaped_and_only_the_report_script_exists(store: Store) -> None:
    with open_app(store.db) as app:
        html = render_session_report(app, "s1")
    assert HOSTILE not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert [tag for tag, _ in _elements(html) if tag == "script"] == ["script"]
    assert not [t for t, attrs in _elements(html) if t == "img" or "onerror" in attrs]
    assert "Content-Security-Policy" in html
    assert "default-src 'none'" in html


def test_the_page_loads_nothing_from_anywhere(store: Store) -> None:
    with open_app(store.db) as app:
        html = render_session_report(app, "s1")
    refs = _attr(html, "href") + _attr(html, "src")
    assert refs
    assert all(ref.startswith("#") for ref in refs)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert not re.search(r"url\(|@import", html)


def test_the_same_store_renders_byte_identical_html(store: Store, out_dir: Path) -> None:
    with open_app(store.db) as app:
        first = write_session_report(app, "s1", out_dir / "a.html").read_bytes()
        run_first = write_run_report(app, store.crashed_run_id, out_dir / "r.html").read_bytes()
    with open_app(store.db, clock_ms=1) as app:  # another process, another clock
        assert write_session_report(app, "s1", out_dir / "b.html").read_bytes() == first
        assert render_run_report(app, store.crashed_run_id).encode() == run_first


def test_reporting_writes_nothing_to_the_store(store: Store, out_dir: Path) -> None:
    with open_app(store.db) as app:
        before = store_snapshot(app)
        write_session_report(app, "s1", out_dir / "s.html")
        write_run_report(app, store.crashed_run_id, out_dir / "r.html")
        assert store_snapshot(app) == before


@pytest.mark.parametrize("where", ["directory", "missing_parent"])
def test_an_unwritable_path_is_a_typed_refusal_that_leaves_no_file(
    store: Store, out_dir: Path, where: str
) -> None:
    target = out_dir if where == "directory" else out_dir / "absent" / "r.html"
    before = sorted(out_dir.rglob("*"))
    with open_app(store.db) as app, pytest.raises(ReportOutputError) as refused:
        write_run_report(app, store.crashed_run_id, target)
    assert refused.value.code == "report_output_invalid"
    assert sorted(out_dir.rglob("*")) == before


def test_an_unknown_run_is_the_ledgers_typed_error_and_no_file(store: Store, out_dir: Path) -> None:
    with open_app(store.db) as app, pytest.raises(MakaError):
        write_run_report(app, "no-such-run", out_dir / "r.html")
    assert list(out_dir.iterdir()) == []
