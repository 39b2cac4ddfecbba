# WiFi onboarding, reconnects and the NTP clock on a simulated radio (MIMI_SIM_WIFI), both runtimes
import base64
import json
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request

import pytest

from host_sim.fake_anthropic import text
from tests.e2e.conftest import API_KEY, free_port

WIFI_PASSWORD = "hunter2-home-wifi"
BOT_TOKEN = "123456789:AAE-onboarding-secret-token-xyz"


def _radio(tmp_path, *networks):
    """The access points in reach of the simulated board; rewrite the file to change them."""
    path = tmp_path / "radio.txt"
    path.write_text("".join("{} {}\n".format(ssid, password) for ssid, password in networks))
    return path


def _nvs(flash):
    """{"ns.key": text} of what the firmware committed to its NVS stand-in."""
    raw = json.loads((flash / "nvs.json").read_text())
    values = {}
    for ns, keys in raw.items():
        for key, (kind, value) in keys.items():
            values[ns + "." + key] = base64.b64decode(value).decode() if kind == "blob" else value
    return values


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def _post(url, fields):
    data = urllib.parse.urlencode(fields).encode()
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_setup_page_saves_wifi_token_and_key_then_the_station_joins(boot, flash, fake, tmp_path):
    radio = _radio(tmp_path, ("HomeNet", WIFI_PASSWORD))
    port = free_port()
    dev = boot("--setup-port", str(port), env={"MIMI_SIM_WIFI": str(radio)})
    # printed during boot, before the "no network yet" that boot() waits for
    match = re.search(r"setup: no WiFi configured\. Join the open WiFi '(MimiClaw-[0-9A-F]{4})'",
                      dev.output)
    assert match, dev.output
    ap_name = match.group(1)
    page_url = "http://127.0.0.1:{}/".format(port)

    status, page = _get(page_url)
    assert status == 200
    for field in ('name="ssid"', 'name="password"', 'name="bot_token"', 'name="api_key"'):
        assert field in page
    assert "src=" not in page and "<link" not in page  # self-contained: no external assets
    assert "not configured" in dev.command("wifi_status") and ap_name in dev.command("wifi_status")

    status, answer = _post(page_url + "save", {"ssid": "", "password": "x"})
    assert status == 400 and "WiFi name is needed" in answer

    status, answer = _post(page_url + "save", {"ssid": "HomeNet", "password": WIFI_PASSWORD,
                                               "bot_token": BOT_TOKEN, "api_key": API_KEY})
    assert status == 200 and "joining 'HomeNet'" in answer
    for secret in (WIFI_PASSWORD, BOT_TOKEN, API_KEY):
        assert secret not in answer
    dev.expect(r"WiFi: connected to 'HomeNet'")
    dev.expect(r"setup: access point '{}' closed".format(ap_name))
    dev.expect(r"ready: network up")

    stored = _nvs(flash)
    assert stored["wifi_config.ssid"] == "HomeNet"
    assert stored["wifi_config.password"] == WIFI_PASSWORD
    assert stored["tg_config.bot_token"] == BOT_TOKEN
    assert stored["llm_config.api_key"] == API_KEY
    with pytest.raises(OSError):  # the page is gone with the access point
        _get(page_url)
    fake.script(text("Set up and talking."))  # the fake answers only the key from the page
    assert "mimi: Set up and talking." in dev.command("chat hello after setup", timeout=30)
    for secret in (WIFI_PASSWORD, BOT_TOKEN, API_KEY):
        assert secret not in dev.output


def test_wrong_password_and_unknown_network_are_told_apart(boot, tmp_path):
    radio = _radio(tmp_path, ("HomeNet", WIFI_PASSWORD))
    dev = boot("--setup-port", str(free_port()), env={"MIMI_SIM_WIFI": str(radio)})
    dev.command("wifi_set HomeNet not-the-password")
    dev.expect(r"WiFi: cannot join 'HomeNet': wrong password; next try in 2 s")
    assert "not connected to 'HomeNet': wrong password" in dev.command("wifi_status")
    assert "clock not set yet" in dev.command("status")

    dev.command("wifi_set NoSuchNet whatever")
    dev.expect(r"WiFi: cannot join 'NoSuchNet': network not found")
    assert "not connected to 'NoSuchNet': network not found" in dev.command("wifi_status")

    dev.command("wifi_set HomeNet " + WIFI_PASSWORD)  # at once, not after the backoff wait
    dev.expect(r"WiFi: connected to 'HomeNet'", timeout=5)
    dev.expect(r"ready: network up")
    out = dev.command("wifi_status")
    assert "connected to 'HomeNet'" in out and "clock synced" in out
    assert WIFI_PASSWORD not in dev.output and "not-the-password" not in dev.output


def test_a_dropped_link_is_noticed_and_rejoined_with_backoff(boot, tmp_path):
    radio = _radio(tmp_path, ("HomeNet", WIFI_PASSWORD))
    dev = boot(env={"MIMI_SIM_WIFI": str(radio)})
    dev.command("wifi_set HomeNet " + WIFI_PASSWORD)
    dev.expect(r"WiFi: connected to 'HomeNet'")
    dev.expect(r"ready: network up")

    radio.write_text("")  # the access point goes away
    dev.expect(r"WiFi: lost the link to 'HomeNet' \(the access point stopped answering\); "
               r"reconnecting")
    dev.expect(r"WiFi: cannot join 'HomeNet': network not found[^;]*; next try in 2 s")
    assert "not connected to 'HomeNet'" in dev.command("wifi_status")
    dev.expect(r"WiFi: cannot join 'HomeNet': network not found[^;]*; next try in 4 s")

    radio.write_text("HomeNet {}\n".format(WIFI_PASSWORD))  # back in range
    dev.expect(r"WiFi: connected to 'HomeNet'", timeout=10)
    assert "connected to 'HomeNet'" in dev.command("wifi_status")


def test_https_waits_for_the_clock_and_ntp_is_retried(boot, flash, tls_fake):
    fake, paths = tls_fake
    certs = flash / "data" / "certs"
    certs.mkdir(parents=True)
    shutil.copy(paths["ca.der"], certs / "test_ca.der")
    dev = boot(api=fake.url, env={"MIMI_SIM_NTP_FAILS": "3"})  # at boot, after 2 s, after 4 s
    assert ("clock: NTP failed (no answer from the time server); https waits for the clock; "
            "next try in 2 s") in dev.output  # at link up, before boot() saw "ready"
    dev.command("set_api_key " + API_KEY)
    assert "clock not set yet (NTP: no answer from the time server" in dev.command("status")

    before = len(fake.requests)
    out = dev.command("chat before the clock", timeout=30)
    assert "error: Cannot reach the Anthropic API: the clock is not set yet" in out
    assert "certificate" in out and "not trusted" not in out
    assert len(fake.requests) == before  # nothing went out

    dev.expect(r"clock: set from NTP: \d{4}-\d\d-\d\d", timeout=20)
    for wait in (4, 8):  # the retries back off
        assert "clock: NTP failed (no answer from the time server); next try in {} s".format(
            wait) in dev.output
    assert "clock synced" in dev.command("wifi_status")
    fake.script(text("Secure hello."))
    assert "mimi: Secure hello." in dev.command("chat over tls", timeout=30)
