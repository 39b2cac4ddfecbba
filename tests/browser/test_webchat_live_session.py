# The web chat page when the board changes the rules under a live connection (issue 41), in headless Chromium
# against the firmware under MicroPython: a new token closes the page's connection (1008) and the page says why
# and asks for the token, rather than "connection lost; retrying"; a new role reaches the open page at once (the
# owner's views go, the owner's chat leaves the screen).
from host_sim.fake_anthropic import text
from tests.browser.conftest import API_KEY
from tests.e2e.test_gateway import free_port, token_of

WAIT_MS = 30_000
NEW_TOKEN = "the-owners-new-token-1"


def _open(page, firmware):
    port = free_port()
    device = firmware(port)
    assert "saved" in device.command("set_api_key " + API_KEY)
    page.goto("http://127.0.0.1:{}/?token={}".format(port, token_of(device)))
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)
    page.wait_for_selector("#tab-settings", state="visible", timeout=WAIT_MS)  # the owner's views
    return device


def test_a_new_token_closes_the_page_which_says_why_and_asks_for_it(page, firmware):
    device = _open(page, firmware)
    assert "saved" in device.command("set_ws_token " + NEW_TOKEN)
    page.wait_for_selector("#auth", state="visible", timeout=WAIT_MS)
    why = page.inner_text("#authwhy")
    assert "token changed" in why and "ws_token" in why, why
    assert "retrying" not in page.inner_text("#state")
    assert page.locator(".msg.note", has_text="token changed").count() == 1
    page.fill("#token", NEW_TOKEN)
    page.click("#authform button")
    page.wait_for_selector("#state.ok", timeout=WAIT_MS)


def test_a_new_role_reaches_the_open_page_at_once(page, firmware, fake):
    device = _open(page, firmware)
    fake.script(text("Noted: 4711."))
    page.fill("#text", "the safe's code is 4711")
    page.press("#text", "Enter")
    page.wait_for_selector(".msg.bot:not(.streaming)", timeout=WAIT_MS)
    assert "now" in device.command("ws_role observer")
    page.wait_for_selector("#tabs", state="hidden", timeout=WAIT_MS)
    page.wait_for_selector(".msg.note >> text=observer", timeout=WAIT_MS)
    assert "4711" not in page.inner_text("#log")  # the owner's chat is no longer this page's to show
    assert page.is_visible("#text")
