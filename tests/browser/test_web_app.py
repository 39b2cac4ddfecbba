# The board's web app (#23) in headless Chromium at a phone's size, against the firmware under both runtimes:
# every view shows the running firmware's data, changes go through the console's checks, no frame the page
# receives holds a secret, and the page's files come back 304 when unchanged. Screenshots: build/browser/.
import contextlib
import json
import os
import re
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


@contextlib.contextmanager
def _booted(runtime, tmp_path, fake):
    """The firmware with 30 days of usage, an API key and a watcher: (device, port, flash)."""
    flash = tmp_path / "flash"
    _usage_file(flash)
    port = free_port()
    device = Device(RUNTIMES[runtime], flash, "--anthropic-api", fake.url, "--ws-port", str(port))
    try:
        device.ready()
        listening(device, port)
        assert "saved" in device.command("set_api_key " + API_KEY)
        assert "watching" in device.command("watch_add attic temperature 3600 tell me if the attic gets hot")
        # Its first reading is judged a few seconds after it is added: wait for that turn, or on a slow machine it
        # takes the answer a test scripts next for its own chat.
        deadline = time.monotonic() + WAIT_MS / 1000
        listed = device.command("watch_list")
        while "last: " not in listed and time.monotonic() < deadline:
            time.sleep(0.5)
            listed = device.command("watch_list")
        assert "last: " in listed, "the attic watcher never judged its first reading:\n" + listed
        yield device, port, flash
    finally:
        device.stop()


@pytest.fixture(params=sorted(RUNTIMES))
def board(request, tmp_path, fake):
    with _booted(request.param, tmp_path, fake) as (device, port, flash):
        yield device, port, flash, request.param


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



# -- each view as a person finds it at a phone's size and a desktop's (issue 33), on the board's runtime --
SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}
MEASURE = 800  # px: on a desktop the chat column and the forms are at most this wide, centred
SCROLLBAR = 20  # px a view's scroll bar may take from one side of a centred column
OPEN_FIRST = ["WiFi", "Telegram", "Models"]  # the settings' sections open when the view opens
WHOLE_WORDS = """sel => { // the words of the elements matched that a line break cut in two
  const cut = [];
  document.querySelectorAll(sel).forEach(e => {
    const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) cut.push(m[0]);
      }
    }
  });
  return cut;
}"""
EXTENT = """sel => { // left and right of everything `sel` matches, together
  let l = 1e9, r = -1e9;
  document.querySelectorAll(sel).forEach(e => {
    const b = e.getBoundingClientRect();
    if (b.width) { l = Math.min(l, b.left); r = Math.max(r, b.right); }
  });
  return [l, r];
}"""


@pytest.fixture
def firmware_board(tmp_path, fake):
    with _booted("micropython", tmp_path, fake) as found:
        yield found


@pytest.fixture(params=sorted(SIZES))
def screen(request, browser):
    context = browser.new_context(viewport=SIZES[request.param])
    page = context.new_page()
    frames, answers = [], []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    page.on("response", lambda response: answers.append((response.url, response.status)))
    yield page, request.param, frames, answers
    context.close()


def _measure(page, size, selector):
    """On a desktop what `selector` matches is at most MEASURE px wide and centred; on a phone it is the phone's
    width."""
    left, right = page.evaluate(EXTENT, selector)
    width = page.evaluate("document.documentElement.clientWidth")
    if size == "desktop":
        assert right - left <= MEASURE, (selector, left, right)
        assert abs(left - (width - right)) <= SCROLLBAR, (selector, left, right)
    else:
        assert right - left >= width - 48, (selector, left, right)


def _box(locator):
    return locator.bounding_box()


def _last(frames, kind):
    found = [json.loads(f) for f in frames if '"type": "{}"'.format(kind) in f]
    return found[-1]


def test_each_view_reads_well_on_a_phone_and_a_desktop(firmware_board, screen, fake):
    device, port, flash = firmware_board
    page, size, frames, answers = screen
    base = "http://127.0.0.1:{}/".format(port)
    page.goto(base + "?token=" + token_of(device))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)

    # The favicon: an SVG the browser draws (gzipped in the built firmware: tests/e2e/test_web_assets.py), also
    # by the name browsers ask for unlinked; nothing the page asks for is missing.
    assert page.evaluate("""() => new Promise(done => { const i = new Image();
        i.onload = () => done(i.naturalWidth); i.onerror = () => done(0);
        i.src = document.querySelector("link[rel=icon]").href; })""") > 0
    with urllib.request.urlopen(base + "favicon.ico") as answer:
        assert answer.headers["Content-Type"] == "image/svg+xml" and answer.read().startswith(b"<svg")
    assert [a for a in answers if a[1] >= 400] == []

    # Chat: the tool's note inside the reply where the tool ran, "running" while it runs, done once it answered.
    page.evaluate("""() => { window.seen = []; new MutationObserver(() => document.querySelectorAll("#log .tool")
        .forEach(n => { const s = n.className + ": " + n.textContent; if (!seen.includes(s)) seen.push(s); }))
        .observe(document.getElementById("log"), {subtree: true, childList: true, characterData: true,
                                                  attributes: true}); }""")
    fake.script(tool_use("get_current_time", {}, text="Let me look at the clock."), text("It is late.", delay=0.2))
    page.fill("#text", "what time is it?")
    page.press("#text", "Enter")
    page.wait_for_selector(".msg.bot:not(.streaming) >> text=It is late.", timeout=WAIT_MS)
    assert page.locator(".msg.bot").count() == 1 and page.locator("#log > .tool, #log > .note").count() == 0
    reply = page.locator(".msg.bot")
    assert reply.evaluate("b => [...b.children].map(c => c.className + ': ' + c.textContent)") == [
        "part: Let me look at the clock.", "tool done: ran get_current_time", "part: It is late."]
    assert page.evaluate("seen") == ["tool run: running get_current_time\u2026", "tool done: ran get_current_time"]
    _measure(page, size, ".msg")
    _measure(page, size, "#send > *")
    _shot(page, size, "chat")

    # Status: the heap in KB everywhere, the spark line's range too.
    _tab(page, "status")
    page.wait_for_selector("#v-status th >> text=Queues", timeout=WAIT_MS)
    status = _last(frames, "status")
    free = status["heap_free"] // 1024
    _shot(page, size, "status")
    status["heap"] = [free - 40, free - 12, free]  # the board samples a minute apart: an hour's ring, as sent
    page.evaluate("onView", status)
    shown = page.inner_text("#v-status")
    assert "Heap {:,} KB free".format(free) in shown
    assert "free heap, last 3 min: {:,}\u2013{:,} KB; now {:,} KB".format(free - 40, free, free) in shown
    assert "bytes" not in shown and not re.search(r"\d{6}", shown.replace(",", ""))  # no figure in bytes
    _measure(page, size, "#v-status > *")

    # Settings: human headings, the common ones open, a save answered beside its field, a reset to the default.
    _tab(page, "settings")
    field = _setting(page, "llm_config.max_tokens")
    field.wait_for(timeout=WAIT_MS)
    headings = page.locator("#v-settings > details > summary").evaluate_all("s => s.map(x => x.firstChild.nodeValue)")
    assert headings[:3] == OPEN_FIRST and not [h for h in headings if "_" in h]
    assert page.locator("#v-settings > details[open] > summary").evaluate_all(
        "s => s.map(x => x.firstChild.nodeValue)") == OPEN_FIRST
    assert page.locator("details[data-group=Models] form.set[data-name^=llm_profiles]").count() == 12
    assert not _setting(page, "llm_profiles.p1").is_visible()  # six profiles and their keys: a closed part of Models
    assert not _setting(page, "mqtt_config.host").is_visible()
    field.locator("input").fill("lots")
    field.locator("button >> text=Save").click()
    answer = field.locator(".said.bad")
    answer.wait_for(timeout=WAIT_MS)
    assert answer.inner_text() == device.command("config_set llm_config.max_tokens lots").strip().splitlines()[-1]
    saved, said = _box(field.locator("button >> text=Save")), _box(answer)
    assert 0 <= said["y"] - (saved["y"] + saved["height"]) < 40 and said["y"] + said["height"] <= SIZES[size]["height"] + 1
    field.locator("input").fill("2048")
    field.locator("button >> text=Save").click()
    field.locator(".said.ok >> text=2048 (saved").wait_for(timeout=WAIT_MS)
    field.locator("button >> text=Reset").click()
    field.locator(".said.ok >> text=the default").wait_for(timeout=WAIT_MS)
    assert field.locator(".said").inner_text().startswith("llm_config.max_tokens = 4096 (the default")
    assert "llm_config.max_tokens = 4096" in device.command("config_show")
    page.wait_for_function("() => document.getElementById('set-llm_config-max_tokens').value == '4096'",
                           timeout=WAIT_MS)
    assert field.locator("button >> text=Reset").is_hidden()  # the default again: nothing to reset
    _measure(page, size, "#v-settings details")
    secret = _setting(page, "mqtt_config.password")
    page.click("details[data-group='MQTT and Home Assistant'] summary")
    secret.locator("input").fill(SECRET)
    secret.locator("button >> text=Save").click()
    secret.locator(".said.ok").wait_for(timeout=WAIT_MS)
    assert secret.locator("input").input_value() == "" and secret.locator("input").get_attribute("type") == "password"
    # A namespace of a later firmware, unknown to this page, lands under Other.
    page.evaluate("onView", {"type": "settings", "settings": [["later_config", "knob", "3", 0, "int", "A knob", "3", 0]]})
    assert _setting(page, "later_config.knob").evaluate("f => f.closest('details').dataset.group") == "Other"
    allow = _setting(page, "tg_config.allowlist")  # for the picture: the view's top, a refusal under its field
    allow.locator("input").fill("ana")
    allow.locator("button >> text=Save").click()
    allow.locator(".said.bad").wait_for(timeout=WAIT_MS)
    page.evaluate("document.getElementById('v-settings').scrollTop = 0")
    allow.locator(".said").scroll_into_view_if_needed()
    _shot(page, size, "settings")

    # Memory: the editor fills the screen (12 lines at least), grows with its text, says its size and state.
    _tab(page, "memory")
    page.click(".files button >> text=MEMORY.md")
    page.wait_for_selector(".editor h3 >> text=MEMORY.md", timeout=WAIT_MS)
    area = page.locator(".editor textarea")
    line = area.evaluate("a => parseFloat(getComputedStyle(a).lineHeight)")
    on_flash = (flash / "data" / "memory" / "MEMORY.md").read_bytes()
    assert _box(area)["height"] >= 12 * line
    assert _box(page.locator(".savebar"))["y"] + _box(page.locator(".savebar"))["height"] > SIZES[size]["height"] - 100
    assert page.inner_text(".savebar .state") == "saved" and page.locator(".savebar button").is_disabled()
    assert page.inner_text(".savebar .size") == "{} of 16,384 bytes".format(len(on_flash))
    area.fill(on_flash.decode() + "- Ana waters the balcony plants on Sundays.\n")
    assert page.inner_text(".savebar .state") == "unsaved changes" and page.locator(".savebar button").is_enabled()
    _shot(page, size, "memory")
    longer = "# Memory\n" + "".join("- fact {} about Ana\n".format(n) for n in range(60))
    area.fill(longer)
    assert page.inner_text(".savebar .state") == "unsaved changes"
    assert page.inner_text(".savebar .size") == "{:,} of 16,384 bytes".format(len(longer))
    assert area.evaluate("a => a.scrollHeight <= a.clientHeight + 1")  # every line shown: the editor grew
    assert _box(area)["height"] >= 61 * line
    _measure(page, size, "#v-memory > *")
    page.click(".savebar button >> text=Save")
    page.wait_for_selector('.savebar .state >> text="saved"', timeout=WAIT_MS)
    assert (flash / "data" / "memory" / "MEMORY.md").read_text() == longer
    assert page.locator(".savebar button").is_disabled()

    # Rules: the model's watcher judged quiet, and a local rule (README's fan) checked from the page. The view is
    # open before either happens: it is live, each verdict shows as it comes (within its 5 s refresh).
    _tab(page, "rules")
    attic = page.locator('.card[data-name="attic"]')
    attic.wait_for(timeout=WAIT_MS)
    assert "WATCH_OK" not in attic.inner_text(), attic.inner_text()
    fake.script(text("WATCH_OK"))
    assert "attic" in device.command("watch_check attic")
    assert "GPIO pins the agent may use: 5" in device.command("gpio_allow 5")
    assert "watching: fan" in device.command("watch_add fan temperature 5 the chip's fan")
    assert "rule set: fan" in device.command('watch_rule fan {"when": {"above": 60}, "rearm": {"below": 55}, "do": '
                                             '[{"tool": "gpio_write", "input": {"pin": 5, "value": 1}}, {"say": "chip '
                                             'at {value} C: fan on"}], "otherwise": [{"tool": "gpio_write", "input": '
                                             '{"pin": 5, "value": 0}}]}')
    deadline = time.monotonic() + 20
    while "-> rule:" not in device.command("watch_list") and time.monotonic() < deadline:  # read every 5 s
        time.sleep(0.5)
    attic.locator("text=WATCH_OK").wait_for(timeout=WAIT_MS)
    page.locator('.card[data-name="fan"] >> text=rule: quiet').wait_for(timeout=WAIT_MS)
    page.locator('.card[data-name="fan"] button >> text=Check now').click()
    page.locator("#v-rules .said.ok >> text=watch fan: reading").wait_for(timeout=WAIT_MS)
    _measure(page, size, "#v-rules .card")
    _shot(page, size, "rules")

    # Usage: the chart scaled to the largest day, every day with use a visible bar, values on hover or tap;
    # the budget far above these days is a note; the audit log in whole words, cards on a phone.
    _tab(page, "usage")
    page.wait_for_selector("#v-usage table.audit td >> text=get_current_time", timeout=WAIT_MS)
    chart = _box(page.locator("#v-usage svg.chart"))
    bars = [_box(b) for b in page.locator("#v-usage rect.bar").all()]
    assert len(bars) == len(USED_DAYS) and min(b["height"] for b in bars) >= 4
    assert max(b["height"] for b in bars) >= 0.85 * chart["height"]
    assert page.locator("#v-usage line.budget").count() == 0
    assert "budget 2M: off the scale" in page.inner_text("#v-usage")
    biggest = time.strftime("%Y-%m-%d", time.gmtime(time.time() - USED_DAYS[-1] * 86400))
    bar = page.locator("#v-usage g:has(rect.bar)").first
    bar.click() if size == "phone" else bar.hover()
    assert page.inner_text("#v-usage .pick").startswith("{}: {:,} tokens".format(biggest, 10000 * (USED_DAYS[-1] + 1)))
    cells = "#v-usage .audit td.t, #v-usage .audit td.o, #v-usage .audit td.w, #v-usage .audit td.u"
    assert page.evaluate(WHOLE_WORDS, cells) == []
    table, row = _box(page.locator("#v-usage table.audit")), _box(page.locator("#v-usage .audit tbody tr").first)
    assert page.evaluate(EXTENT, "#v-usage .audit td")[1] <= table["x"] + table["width"] + 1  # no column off screen
    if size == "phone":  # a card: tool and outcome on its first line, who and when below
        assert page.locator("#v-usage .audit thead").is_hidden()
        tool, outcome = _box(page.locator(".audit td.t").first), _box(page.locator(".audit td.o").first)
        one_line = page.locator(".audit td.t").first.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
        assert abs(tool["y"] - outcome["y"]) < 2 and tool["height"] < 1.6 * one_line
        assert _box(page.locator(".audit td.w").first)["y"] > tool["y"] and row["width"] <= SIZES[size]["width"]
    else:
        assert page.locator("#v-usage .audit thead").is_visible()
    _measure(page, size, "#v-usage > *")
    _shot(page, size, "usage")
    assert "day_tokens = 300000" in device.command("config_set safety_config.day_tokens 300000")
    _tab(page, "usage")  # asked again: a budget within the largest day's reach is the dashed line
    page.wait_for_selector("#v-usage line.budget", state="attached", timeout=WAIT_MS)
    line_y = _box(page.locator("#v-usage line.budget"))["y"]
    assert chart["y"] <= line_y <= chart["y"] + chart["height"]
    assert "daily budget 300k (the dashed line)" in page.inner_text("#v-usage")
