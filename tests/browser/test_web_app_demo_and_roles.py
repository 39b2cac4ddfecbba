# The web app's honesty about what it costs and whom it serves (issue 33), in headless Chromium on a phone's screen
# against the firmware under MicroPython: make sim's offline demo's tokens are labelled as the demo's and cost $0 in
# the Usage view; a client that is not the owner is offered the chat alone (its hello frame names its role). Each
# view at a phone's and a desktop's size: test_web_app.py.
import json
import time

import pytest

from tests.browser.test_web_app import PHONE, SIZES, _shot, _tab
from tests.e2e.device import Device
from tests.e2e.test_gateway import free_port, listening, token_of
from tests.runtimes import MICROPYTHON_FIRMWARE

WAIT_MS = 30_000
DEMO = "offline demo (make sim's stand-in: not billed)"


def _boot(flash, fake, *extra):
    port = free_port()
    device = Device(MICROPYTHON_FIRMWARE, flash, "--anthropic-api", fake.url, "--ws-port", str(port), *extra)
    device.ready()
    listening(device, port)
    return device, port


def _usage_with_a_demo_day(flash):
    """usage.json: a past day of Claude's, billed, and today's tokens all the offline demo's."""
    now = time.time()
    past = time.strftime("%Y-%m-%d", time.gmtime(now - 2 * 86400))
    state = {"v": 1, "day": time.strftime("%Y-%m-%d", time.gmtime(now)), "today": {"offline-demo": [700, 300, 0, 0, 0]},
             "month": {}, "marks": {}, "cost": 0, "days": {past: [12000, 39400]}}
    (flash / "data").mkdir(parents=True, exist_ok=True)
    (flash / "data" / "usage.json").write_text(json.dumps(state))


def test_the_offline_demo_s_tokens_are_labelled_as_the_demo_s_and_cost_nothing(tmp_path, browser, fake):
    flash = tmp_path / "flash"
    _usage_with_a_demo_day(flash)
    device, port = _boot(flash, fake, "--model", "offline-demo")  # as make sim runs its demo
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
        page.wait_for_selector("#state.ok", timeout=WAIT_MS)
        _tab(page, "usage")
        page.wait_for_selector("#v-usage svg.chart", timeout=WAIT_MS)
        shown = page.inner_text("#v-usage")
        assert "The offline demo answers on this board" in shown and "never billed ($0)" in shown
        assert "13,000 tokens, about $0.0394 (today 1,000 of them the {}, $0)".format(DEMO) in shown
        assert page.locator("#v-usage rect.bar.demo").count() == 1  # today's bar drawn as the demo's
        page.locator("#v-usage g").last.click()  # today
        assert page.inner_text("#v-usage .pick").endswith(": 1,000 tokens, 1,000 of them the {}, $0".format(DEMO))
        page.locator("#v-usage g", has=page.locator("rect.bar")).first.click()  # the billed day: its estimate
        assert page.inner_text("#v-usage .pick").endswith(": 12,000 tokens, about $0.0394")
        _shot(page, "phone", "usage-demo")
    finally:
        context.close()
        device.stop()


def test_a_client_that_is_not_the_owner_is_offered_the_chat_alone(tmp_path, browser, fake):
    device, port = _boot(tmp_path / "flash", fake)
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
        page.wait_for_selector("#state.ok", timeout=WAIT_MS)
        # the owner: every view, once views.js has drawn the tabs (it may run after the connection is up)
        page.wait_for_selector("#tab-settings", state="visible", timeout=WAIT_MS)
        assert "off" in device.command("set_ws_token off")  # now every client is an observer
        # views.js held back a while: the connection's hello (its role) comes before the views exist
        page.route("**/views.js", lambda route: (time.sleep(1.5), route.continue_()))
        page.reload()
        page.wait_for_selector("#state.ok", timeout=WAIT_MS)
        page.wait_for_selector("#tabs", state="attached", timeout=WAIT_MS)  # views.js ran
        page.wait_for_selector("#tabs", state="hidden", timeout=WAIT_MS)
        assert page.is_visible("#text") and not page.is_visible("#v-settings")
    finally:
        context.close()
        device.stop()


@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_usage_view_does_not_say_the_demo_answers_when_another_profile_does(tmp_path, browser, fake, size):
    device, port = _boot(tmp_path / "flash", fake, "--model", "offline-demo")
    device.command("llm_add lan openai http://127.0.0.1:4000/v1 qwen2.5:7b")
    assert "chain: lan" in device.command("llm_use lan")
    context = browser.new_context(viewport=SIZES[size])
    try:
        page = context.new_page()
        page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
        page.wait_for_selector("#state.ok", timeout=WAIT_MS)
        _tab(page, "usage")
        page.wait_for_selector("#v-usage svg.chart", timeout=WAIT_MS)
        assert "offline demo answers" not in page.inner_text("#v-usage")
        assert "chain: claude" in device.command("llm_use claude")
        _tab(page, "status")
        _tab(page, "usage")  # asked again
        page.wait_for_selector("#v-usage >> text=The offline demo answers on this board", timeout=WAIT_MS)
    finally:
        context.close()
        device.stop()
