# The web app as a new user meets it (issue 43), in headless Chromium at a phone's and a desktop's size against
# the firmware under both runtimes: a fresh board, never given a watcher, no usage but today's.
import json

import pytest

from host_sim.fake_anthropic import text
from tests.browser.conftest import API_KEY
from tests.browser.test_web_app import SIZES, _shot, _tab
from tests.e2e.device import Device
from tests.e2e.test_gateway import free_port, listening, token_of
from tests.runtimes import RUNTIMES

WAIT_MS = 30_000


@pytest.fixture(params=sorted(RUNTIMES))
def fresh_board(request, tmp_path, fake):
    port = free_port()
    device = Device(RUNTIMES[request.param], tmp_path / "flash", "--anthropic-api", fake.url, "--ws-port", str(port))
    try:
        device.ready()
        listening(device, port)
        yield device, port, request.param
    finally:
        device.stop()


@pytest.fixture(params=sorted(SIZES))
def screen(request, browser):
    context = browser.new_context(viewport=SIZES[request.param])
    yield context.new_page(), request.param
    context.close()


def test_the_rules_tab_of_a_board_that_never_had_a_watcher_says_so_and_the_page_stays_up(fresh_board, screen):
    device, port, runtime = fresh_board
    page, size = screen
    page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)
    _tab(page, "rules")
    page.wait_for_selector("#v-rules >> text=No watchers yet", timeout=WAIT_MS)
    page.wait_for_timeout(2500)  # the view asks again every few seconds: still up, still saying so
    assert page.is_visible("#state.ok") and page.is_visible("#v-rules >> text=No watchers yet")
    assert "Traceback" not in device.output
    _shot(page, "{}-{}".format(runtime, size), "rules-fresh")


def test_a_first_day_s_usage_is_a_bar_of_a_week_and_the_heap_s_now_is_inside_its_range(fresh_board, screen, fake):
    device, port, runtime = fresh_board
    page, size = screen
    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    assert "saved" in device.command("set_api_key " + API_KEY)
    fake.script(text("Hello there."))
    assert "Hello there." in device.command("chat hello", timeout=30)
    page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)

    # Usage: the board's first day of use, drawn as a week (not a sliver at the edge of 30 days).
    _tab(page, "usage")
    page.wait_for_selector("#v-usage svg.chart", timeout=WAIT_MS)
    assert "Tokens a day, last 7 days" in page.inner_text("#v-usage")
    chart, bar = page.locator("#v-usage svg.chart").bounding_box(), page.locator("#v-usage rect.bar").bounding_box()
    assert page.locator("#v-usage rect.bar").count() == 1
    assert bar["width"] >= chart["width"] / 7 * 0.9 and bar["height"] >= chart["height"] * 0.8
    assert bar["x"] + bar["width"] >= chart["x"] + chart["width"] - 4  # today, at the right
    _shot(page, "{}-{}".format(runtime, size), "usage-first-day")

    # Status: the heap's "now" is the line's last point, inside the range the caption names.
    _tab(page, "status")
    page.wait_for_selector("#v-status th >> text=Queues", timeout=WAIT_MS)
    status = json.loads([f for f in frames if '"type": "status"' in f][-1])
    now = (status["heap_free"] or 1024 * 1024) // 1024
    status["heap_free"] = now * 1024
    status["heap"] = [now + 160, now + 120]  # a minute apart, both above what is free now
    page.evaluate("onView", status)
    assert "free heap, last 2 min: {:,}\u2013{:,} KB; now {:,} KB".format(now, now + 160, now) in page.inner_text(
        "#v-status")
