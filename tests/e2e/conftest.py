# End-to-end fixtures: the fake Anthropic API and the firmware as a subprocess, under both runtimes.
import socket

import pytest

from host_sim.fake_anthropic import FakeAnthropic
from host_sim.fake_telegram import FakeTelegram
from host_sim.fake_web import FakeWeb
from tests.certs import make_test_ca, server_context
from tests.e2e.device import Device
from tests.runtimes import RUNTIMES

API_KEY = "sk-ant-api03-e2e" + "k" * 40 + "SECRETTAIL"
TG_TOKEN = "123456789:AAE-e2e-telegram-token-SECRETPART"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture(params=sorted(RUNTIMES))
def runtime(request):
    return RUNTIMES[request.param]


@pytest.fixture
def flash(tmp_path):
    return tmp_path / "flash"


@pytest.fixture
def boot(runtime, flash, fake):
    """boot(*extra_args) starts the firmware on this flash, pointed at the fake API."""
    devices = []

    def start(*args, api=None, env=None, own_ws_port=True):
        # Every firmware gets its own gateway port (tests run side by side), unless the test says not.
        if own_ws_port and "--ws-port" not in args:
            args = args + ("--ws-port", str(free_port()))
        device = Device(runtime, flash, "--anthropic-api", api or fake.url, *args, env=env)
        devices.append(device)
        return device.ready()

    yield start
    for device in devices:
        device.stop()


@pytest.fixture
def device(boot):
    """A booted firmware with the API key set through the console, as a user would."""
    dev = boot()
    out = dev.command("set_api_key " + API_KEY)
    assert "saved" in out
    return dev


@pytest.fixture(scope="module")
def tls_fake(tmp_path_factory):
    """A fake Anthropic API on https, its certificate signed by a throwaway CA: (fake, CA paths)."""
    paths = make_test_ca(tmp_path_factory.mktemp("ca"))
    fake = FakeAnthropic(api_key=API_KEY, ssl_context=server_context(paths))
    fake.start()
    yield fake, paths
    fake.stop()


@pytest.fixture
def tg():
    """A fresh fake Telegram for one test (its bot token is TG_TOKEN)."""
    fake = FakeTelegram(token=TG_TOKEN)
    fake.start()
    yield fake
    fake.stop()


OWNER_ID = 42  # the Telegram user the owner_bot fixture admits as the owner


@pytest.fixture
def owner_bot(boot, tg):
    """owner_bot() boots the firmware with the API key, the bot token and user 42 as the owner."""

    def start():
        dev = boot("--telegram-api", tg.url)
        for line in ("set_api_key " + API_KEY, "set_tg_token " + TG_TOKEN, "tg_allow {} owner".format(OWNER_ID)):
            dev.command(line)
        return dev

    return start


@pytest.fixture(scope="session")
def web_server():
    server = FakeWeb()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def web(web_server):
    """The fake outside web (pages, search and weather APIs), reset around each test."""
    web_server.reset()
    yield web_server
    web_server.reset()


@pytest.fixture
def gateway(boot):
    """A booted firmware with its gateway listening and the API key set (tests/e2e/gateway_client.py)."""
    from tests.e2e.gateway_client import Gateway, start

    port = free_port()
    return Gateway(start(boot, port), port)
