# The web chat page in headless Chromium against the firmware under MicroPython.
from host_sim.fake_anthropic import text
from tests.browser.conftest import API_KEY
from tests.e2e.test_gateway import free_port, token_of

REPLY = "Here is **bold** news and <script>window.pwned = 1</script> a script shown as text."
WAIT_MS = 30_000


def _power_on(firmware, port):
    device = firmware(port)
    assert "saved" in device.command("set_api_key " + API_KEY)
    return device


def _send(page, message):
    page.fill("#text", message)
    page.press("#text", "Enter")


def test_chat_streams_renders_markdown_safely_and_reconnects_after_a_power_cycle(page, firmware, fake):
    port = free_port()
    device = _power_on(firmware, port)
    token = token_of(device)
    page.goto("http://127.0.0.1:{}/".format(port))
    page.wait_for_selector("#auth", state="visible", timeout=WAIT_MS)  # no token yet: it asks
    page.fill("#token", token)
    page.click("#authform button")
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)

    fake.script(text(REPLY, chunk=4, delay=0.1))
    _send(page, "tell me the news")
    page.wait_for_selector(".msg.user >> text=tell me the news")
    # While the reply streams, part of it is already on the page.
    page.wait_for_function(
        "() => { const b = document.querySelector('.bot');"
        " return b && b.textContent.length > 0 && b.textContent.length < 40; }", timeout=WAIT_MS)
    page.wait_for_selector(".msg.bot.streaming", timeout=WAIT_MS)
    page.wait_for_selector(".msg.bot:not(.streaming)", timeout=WAIT_MS)  # the response frame came
    bot = page.locator(".msg.bot").last
    assert bot.inner_text().endswith("as text.")
    assert bot.locator("strong, b").inner_text() == "bold"
    assert "<script>window.pwned = 1</script>" in bot.inner_text()
    assert bot.locator("script").count() == 0
    assert page.evaluate("() => window.pwned") is None
    assert "**" not in bot.inner_text()
    page.screenshot(path="/tmp/webchat.png")

    device.stop()  # power cut: the page says so and keeps trying
    page.wait_for_selector("#state.bad", timeout=WAIT_MS)
    page.wait_for_selector(".note >> text=reconnecting", timeout=WAIT_MS)
    assert "retrying" in page.inner_text("#state")
    _power_on(firmware, port)
    page.wait_for_selector(".note >> text=reconnected", timeout=WAIT_MS)
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)

    fake.script(text("Still *here*."))
    _send(page, "are you back?")
    page.wait_for_selector(".msg.bot em >> text=here", timeout=WAIT_MS)
    second = fake.requests[-1]["body"]["messages"]
    assert len(second) == 3  # the page kept its chat: the first turn is in the history


def test_a_token_in_the_address_is_remembered_and_a_wrong_one_is_asked_for_again(page, firmware, fake):
    port = free_port()
    device = _power_on(firmware, port)
    token = token_of(device)
    page.goto("http://127.0.0.1:{}/?token=wrong-token-123".format(port))
    page.wait_for_selector("#auth", state="visible", timeout=WAIT_MS)
    assert "refused" in page.inner_text("#authwhy")
    assert "token=" not in page.url  # taken out of the address bar
    page.fill("#token", token)
    page.click("#authform button")
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)
    page.goto("http://127.0.0.1:{}/".format(port))  # a later visit needs no token
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)
    assert not page.is_visible("#auth")
