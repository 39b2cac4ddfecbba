# The web chat remembers: history on load, after a reload, in a second tab, after a device restart;
# "New chat"; Markdown lists, numbered lists, code and links rendered safely. Headless Chromium
# against the firmware under MicroPython.
from host_sim.fake_anthropic import text
from tests.browser.conftest import API_KEY
from tests.e2e.test_gateway import free_port, token_of

WAIT_MS = 30_000
LISTS = (
    "Here is the plan:\n- buy *milk*\n- call [Anna](https://example.com/anna?a=1&b=2)\n"
    "Then, in order:\n3. boil water\n4. pour <b>tea</b>\n\n```\nx = 1 < 2\n```\n"
    "See https://example.org/docs. or javascript:alert(1) or [bad](javascript:alert(1))"
)


def _power_on(firmware, port):
    device = firmware(port)
    assert "saved" in device.command("set_api_key " + API_KEY)
    return device


def _open(page, port, token):
    page.goto("http://127.0.0.1:{}/?token={}".format(port, token))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)


def _send(page, message):
    page.fill("#text", message)
    page.press("#text", "Enter")


def _chat(page):
    """The conversation as shown: [(who, text)] for user and bot bubbles."""
    return [tuple(pair) for pair in page.evaluate(
        "() => Array.from(document.querySelectorAll('.msg.user, .msg.bot'))"
        ".map(d => [d.classList.contains('user') ? 'user' : 'bot', d.innerText.trim()])")]


def test_history_after_reload_in_a_second_tab_and_after_a_device_restart(page, firmware, fake):
    port = free_port()
    device = _power_on(firmware, port)
    _open(page, port, token_of(device))
    fake.script(text("Hi Bob!"), text("Tea, **green**."))
    _send(page, "I'm Bob")
    page.wait_for_selector(".msg.bot:not(.streaming) >> text=Hi Bob!", timeout=WAIT_MS)
    _send(page, "what's my drink?")
    page.wait_for_selector(".msg.bot strong >> text=green", timeout=WAIT_MS)
    said = [("user", "I'm Bob"), ("bot", "Hi Bob!"), ("user", "what's my drink?"), ("bot", "Tea, green.")]
    assert _chat(page) == said

    page.reload()  # the page itself keeps nothing: the turns come from the device
    page.wait_for_selector(".msg.bot strong >> text=green", timeout=WAIT_MS)
    assert _chat(page) == said

    second = page.context.new_page()  # same browser profile: the same conversation
    second.goto("http://127.0.0.1:{}/".format(port))
    second.wait_for_selector(".msg.bot strong >> text=green", timeout=WAIT_MS)
    assert _chat(second) == said
    fake.script(text("Both tabs see this."))
    _send(second, "hello from tab two")
    page.wait_for_selector(".msg.user >> text=hello from tab two", timeout=WAIT_MS)  # live in tab one
    page.wait_for_selector(".msg.bot:not(.streaming) >> text=Both tabs see this.", timeout=WAIT_MS)
    second.close()
    said += [("user", "hello from tab two"), ("bot", "Both tabs see this.")]

    device.stop()  # power cut; the page waits, then shows the chat again from the flash
    page.wait_for_selector(".note >> text=reconnecting", timeout=WAIT_MS)
    _power_on(firmware, port)
    page.wait_for_selector(".note >> text=reconnected", timeout=WAIT_MS)
    assert _chat(page) == said
    page.reload()
    page.wait_for_selector(".msg.bot >> text=Both tabs see this.", timeout=WAIT_MS)
    assert _chat(page) == said

    page.click("#new")  # a new conversation id: an empty page, and it stays empty after a reload
    page.wait_for_selector(".note >> text=new chat", timeout=WAIT_MS)
    assert _chat(page) == []
    fake.script(text("Fresh start."))
    _send(page, "who am I?")
    page.wait_for_selector(".msg.bot:not(.streaming) >> text=Fresh start.", timeout=WAIT_MS)
    assert [m["role"] for m in fake.requests[-1]["body"]["messages"]] == ["user"]  # no old turns
    page.reload()
    page.wait_for_selector(".msg.bot >> text=Fresh start.", timeout=WAIT_MS)
    assert _chat(page) == [("user", "who am I?"), ("bot", "Fresh start.")]


def test_lists_numbered_lists_code_and_links_render_safely(page, firmware, fake):
    port = free_port()
    device = _power_on(firmware, port)
    _open(page, port, token_of(device))
    fake.script(text(LISTS, chunk=7, delay=0.02))
    _send(page, "plan my morning")
    page.wait_for_selector(".msg.bot:not(.streaming) pre", timeout=WAIT_MS)
    bot = page.locator(".msg.bot").last
    assert bot.locator("p").first.inner_text() == "Here is the plan:"
    assert bot.locator("ul > li").all_inner_texts() == ["buy milk", "call Anna"]
    assert bot.locator("ul em").inner_text() == "milk"
    assert bot.locator("ol > li").all_inner_texts() == ["boil water", "pour <b>tea</b>"]
    assert bot.locator("ol").get_attribute("start") == "3"
    assert bot.locator("ol b").count() == 0  # HTML in a reply is shown, never run
    assert bot.locator("pre code").inner_text() == "x = 1 < 2"
    links = bot.locator("a")
    assert links.count() == 2
    assert links.nth(0).get_attribute("href") == "https://example.com/anna?a=1&b=2"
    assert links.nth(0).get_attribute("rel") == "noopener noreferrer"
    assert links.nth(1).get_attribute("href") == "https://example.org/docs"
    assert "javascript:alert(1)" in bot.inner_text()  # shown as text, never a link
    page.screenshot(path="/tmp/webchat_lists.png")
    page.reload()  # the same rendering from the history
    page.wait_for_selector(".msg.bot pre", timeout=WAIT_MS)
    assert page.locator(".msg.bot ol > li").all_inner_texts() == ["boil water", "pour <b>tea</b>"]
    assert page.locator(".msg.bot ul > li").count() == 2
