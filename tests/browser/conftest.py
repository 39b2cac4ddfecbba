# Browser fixtures: Debian's chromium driven by Playwright, and the firmware under MicroPython.
import os

import pytest

from host_sim.fake_anthropic import FakeAnthropic
from tests.e2e.device import Device
from tests.e2e.test_gateway import listening
from tests.runtimes import MICROPYTHON_FIRMWARE

API_KEY = "sk-ant-api03-browser" + "b" * 40 + "TAIL"
CHROMIUM = os.environ.get("MIMI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def fake_server():
    fake = FakeAnthropic(api_key=API_KEY)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(fake_server):
    fake_server.reset()
    yield fake_server
    fake_server.reset()


@pytest.fixture(scope="module")  # Playwright's loop must be gone before other tests use asyncio
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("no chromium at {}: apt-get install -y chromium (or set MIMI_CHROMIUM)".format(CHROMIUM))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 420, "height": 720})
    yield context.new_page()
    context.close()


@pytest.fixture
def firmware(tmp_path, fake):
    """firmware(port) boots the firmware under MicroPython on one flash; call again to power it back on."""
    devices = []

    def start(port):
        device = Device(MICROPYTHON_FIRMWARE, tmp_path / "flash", "--anthropic-api", fake.url, "--ws-port", str(port))
        devices.append(device)
        device.ready()
        listening(device, port)
        return device

    yield start
    for device in devices:
        device.stop()
