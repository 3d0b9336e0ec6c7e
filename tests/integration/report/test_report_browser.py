"""The report in a real headless Chromium (Debian's ``chromium``, installed by ``.ci/run``).

Checked through the browser, not the HTML string: the page loads with no console error and no
request beyond its own file, every committed event id is in the DOM, the hostile user message
ran no script, the report's own script runs (its CSP hash matches), and the screenshot is not
blank (ADR 0030). Without chromium the tests skip loudly, except under CI, where they fail.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from maka_es.report import write_run_report, write_session_report
from tests.integration.report.browser import Browser, chromium_executable
from tests.integration.report.scenario import Store, open_app

DOM_EVENT_IDS = "Array.from(document.querySelectorAll('[data-event-id]'), e => e.dataset.eventId)"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_executable()
    if executable is None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail("chromium is not installed, and CI must run the browser tests")
        pytest.skip("SKIPPED LOUDLY: chromium is not installed (apt-get install -y chromium)")
    with Browser(executable) as opened:
        yield opened


def _shown(browser: Browser, page: Path) -> None:
    """Open ``page``; no error on the console, nothing requested but the page itself."""
    before = len(browser.events)
    browser.open(page)
    assert browser.evaluate("document.readyState") == "complete"
    assert browser.console_errors() == []
    requested = browser.requested_urls()
    assert requested[-1] == page.resolve().as_uri()
    assert all(url.startswith("file://") for url in requested)
    assert len(browser.events) > before


def test_the_session_report_renders_every_event_and_runs_no_hostile_script(
    store: Store, browser: Browser, tmp_path: Path
) -> None:
    with open_app(store.db) as app:
        page = write_session_report(app, "s1", tmp_path / "session.html")
        events = [e.id for r in app.list_runs("s1") for e in app.read_run_events(r.run_id)]
    _shown(browser, page)
    assert sorted(browser.evaluate(DOM_EVENT_IDS)) == sorted(events)
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.scripts.length") == 1
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    hostile = browser.evaluate("document.querySelector('[data-event-id] summary').textContent")
    assert "<script>window.__pwned = 1</script>" in hostile
    # the report's script ran: unticking a lane hides its events
    hidden = (
        "(() => { const box = document.querySelector('.lane-toggles input[data-lane=\"2\"]');"
        " box.click(); const ev = document.querySelector('.timeline .event.lane-2');"
        " return getComputedStyle(ev).display; })()"
    )
    assert browser.evaluate(hidden) == "none"
    assert browser.console_errors() == []


def test_the_run_report_renders_and_its_screenshot_is_not_blank(
    store: Store, browser: Browser, tmp_path: Path
) -> None:
    with open_app(store.db) as app:
        page = write_run_report(app, store.crashed_run_id, tmp_path / "run.html")
        events = [e.id for e in app.read_run_events(store.crashed_run_id)]
    _shown(browser, page)
    assert sorted(browser.evaluate(DOM_EVENT_IDS)) == sorted(events)
    links = browser.evaluate(
        "Array.from(document.querySelectorAll('a[href]'), a => a.getAttribute('href'))"
    )
    assert links
    assert all(link.startswith("#") for link in links)
    assert all(browser.evaluate(f"!!document.getElementById({link[1:]!r})") for link in links)
    image = Image.open(io.BytesIO(browser.screenshot())).convert("L")
    assert image.size == (1280, 900)
    (variance,) = ImageStat.Stat(image).var
    assert variance > 100, f"the screenshot looks blank (pixel variance {variance:.1f})"
    assert sum(1 for count in image.histogram() if count) > 16, "fewer than 17 grey levels"
