# The board's web app (#23) in headless Chromium at a phone's size, against the firmware under both runtimes:
# every view shows the running firmware's data, changes go through the console's checks, no frame the page
# receives holds a secret, and the page's files come back 304 when unchanged. Screenshots: build/browser/.
import json
import os
import time
import urllib.error
import urllib.request

import pytest

from host_sim.fake_anthropic import text, tool_use
from tests.browser.conftest import API_KEY
from tests.e2e.device import Device
from tests.e2e.test_gateway import free_port, listening, token_of
from tests.runtimes import RUNTIMES

WAIT_MS = 30_000
PHONE = {"width": 390, "height": 844}
SHOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "browser")
SECRET = "sk-ant-api03-pagesecret" + "Q" * 30 + "WXYZ"
USED_DAYS = (0, 1, 2, 5, 9, 13, 20, 28)  # days back from today with usage in the written usage.json


def _usage_file(flash):
    """usage.json as the firmware keeps it, with use on USED_DAYS of the last 30 days."""
    now = time.time()
    days = {}
    for back in USED_DAYS[1:]:
        day = time.strftime("%Y-%m-%d", time.gmtime(now - back * 86400))
        days[day] = [10000 * (back + 1), 2500 * (back + 1)]
    today = time.strftime("%Y-%m-%d", time.gmtime(now))
    state = {"v": 1, "day": today, "today": {"claude-sonnet-4-5": [700, 300, 0, 0, 0]}, "month": {},
             "marks": {}, "cost": 6600, "days": days}
    (flash / "data").mkdir(parents=True, exist_ok=True)
    (flash / "data" / "usage.json").write_text(json.dumps(state))


@pytest.fixture(params=sorted(RUNTIMES))
def board(request, tmp_path, fake):
    flash = tmp_path / "flash"
    _usage_file(flash)
    port = free_port()
    device = Device(RUNTIMES[request.param], flash, "--anthropic-api", fake.url, "--ws-port", str(port))
    try:
        device.ready()
        listening(device, port)
        assert "saved" in device.command("set_api_key " + API_KEY)
        assert "watching" in device.command("watch_add attic temperature 3600 tell me if the attic gets hot")
        yield device, port, flash, request.param
    finally:
        device.stop()


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    yield page, frames
    context.close()


def _tab(page, name):
    page.click("#tab-" + name)


def _shot(page, runtime, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "{}-{}.png".format(runtime, name)))


def _setting(page, name):
    return page.locator('form.set[data-name="{}"]'.format(name))


def test_every_view_shows_the_running_board_and_changes_go_through_the_console(board, phone, fake):
    device, port, flash, runtime = board
    page, frames = phone
    page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)

    # Chat: tool activity shows as it does on Telegram, inside the reply.
    fake.script(tool_use("get_current_time", {}), text("It is late."))
    page.fill("#text", "what time is it?")
    page.press("#text", "Enter")
    page.wait_for_selector(".msg.bot .tool >> text=get_current_time", timeout=WAIT_MS)
    page.wait_for_selector(".msg.bot >> text=It is late.", timeout=WAIT_MS)
    assert page.locator("#attach svg").count() == 1  # an inline icon, no emoji glyph
    _shot(page, runtime, "chat")

    # Status: the status command's lines, the heap.
    _tab(page, "status")
    page.wait_for_selector("#v-status th >> text=Queues", timeout=WAIT_MS)
    shown = page.inner_text("#v-status")
    assert "inbound 0/" in shown and "listening on port {}".format(port) in shown and "Firmware" in shown
    if runtime == "micropython":  # CPython has no heap figures
        assert "KB free" in shown
    _shot(page, runtime, "status")

    # Settings: the console's checks and words; config_show sees the change.
    _tab(page, "settings")
    field = _setting(page, "llm_config.max_tokens")
    field.locator("input").fill("lots")
    field.locator("button >> text=Save").click()
    console_error = device.command("config_set llm_config.max_tokens lots").strip().splitlines()[-1]
    field.locator(".said.bad").wait_for(timeout=WAIT_MS)
    assert field.locator(".said").inner_text() == console_error
    field = _setting(page, "llm_config.max_tokens")
    field.locator("input").fill("2048")
    field.locator("button >> text=Save").click()
    field.locator(".said.ok >> text=saved").wait_for(timeout=WAIT_MS)
    assert "llm_config.max_tokens = 2048 (saved" in field.locator(".said").inner_text()
    assert "llm_config.max_tokens = 2048" in device.command("config_show")
    secret = _setting(page, "web_config.search_key")
    page.click("details[data-group='Web search and web services'] summary")  # a closed section, opened
    assert secret.locator("input").get_attribute("type") == "password"
    secret.locator("input").fill(SECRET)
    secret.locator("button >> text=Save").click()
    page.wait_for_function("() => document.querySelector('form.set[data-name=\"web_config.search_key\"] .said')"
                           ".textContent.startsWith('web_config.search_key')", timeout=WAIT_MS)
    page.wait_for_selector('form.set[data-name="web_config.search_key"] input[placeholder^="sk-a"]', timeout=WAIT_MS)
    assert "web_config.search_key = sk-a\u2026WXYZ" in device.command("config_show")
    _shot(page, runtime, "settings")

    # Memory: the files, one edited and saved.
    _tab(page, "memory")
    page.click(".files button >> text=SOUL.md")
    page.wait_for_selector(".editor h3 >> text=SOUL.md", timeout=WAIT_MS)
    assert "Mimi" in page.input_value(".editor textarea")
    page.click(".files button >> text=USER.md")
    page.wait_for_selector(".editor h3 >> text=USER.md", timeout=WAIT_MS)
    page.fill(".editor textarea", "# User\nName: Ana; likes green tea.\n")
    page.click(".editor button >> text=Save")
    page.wait_for_selector(".editor .said.ok >> text=saved USER.md", timeout=WAIT_MS)
    assert (flash / "data" / "config" / "USER.md").read_text() == "# User\nName: Ana; likes green tea.\n"
    _shot(page, runtime, "memory")

    # Rules and watchers: pause in the page pauses the watcher.
    _tab(page, "rules")
    card = page.locator('.card[data-name="attic"]')
    card.wait_for(timeout=WAIT_MS)
    assert "temperature" in card.inner_text()
    card.locator("button >> text=Pause").click()
    page.wait_for_selector('.card.paused[data-name="attic"]', timeout=WAIT_MS)
    assert "[paused]" in device.command("watch_list")
    _shot(page, runtime, "rules")

    # Usage: one bar per day with usage, the budget (far above these days), the audit log with the chat's tool call.
    _tab(page, "usage")
    page.wait_for_selector("#v-usage svg.chart", timeout=WAIT_MS)
    assert page.locator("#v-usage rect.bar").count() == len(USED_DAYS)
    assert page.locator("#v-usage line.budget").count() == 0 and "budget 2M: off the scale" in page.inner_text("#v-usage")
    page.wait_for_selector("#v-usage table.audit td >> text=get_current_time", timeout=WAIT_MS)
    _shot(page, runtime, "usage")

    everything = "\n".join(frames)
    assert '"type": "usage"' in everything and '"type": "settings"' in everything
    assert SECRET not in everything and SECRET[4:-4] not in everything and API_KEY[4:-4] not in everything


def test_the_page_is_gzip_ready_and_an_unchanged_file_is_a_304(board, phone):
    device, port, _, _ = board
    page, _ = phone
    base = "http://127.0.0.1:{}/".format(port)
    for name in ("", "attach.js", "views.js"):
        with urllib.request.urlopen(base + name) as answer:
            etag = answer.headers["ETag"]
            assert answer.headers["Vary"] == "Accept-Encoding" and etag.startswith('"')
        request = urllib.request.Request(base + name, headers={"If-None-Match": etag})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 304
    statuses = []
    page.on("response", lambda response: statuses.append((response.url, response.status)))
    page.goto(base)
    page.wait_for_selector("#tabs button", timeout=WAIT_MS)
    statuses.clear()
    page.reload()
    page.wait_for_selector("#tabs button", timeout=WAIT_MS)
    assert (base + "views.js", 304) in statuses and (base + "attach.js", 304) in statuses

