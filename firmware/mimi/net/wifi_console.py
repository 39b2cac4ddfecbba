# The WiFi status line (status, wifi_status) and the wifi_set and wifi_status commands (loaded when typed).
from mimi import platform
from mimi.settings import mask
from mimi.net import ntp


def summary(wifi):
    """The keeper's state in one line: connected, not configured (and the setup page), or why not."""
    ssid = wifi.ssid()
    if wifi.is_up():
        text = "connected{} ({})".format(" to '{}'".format(ssid) if ssid else "", wifi.ip())
    elif not ssid:
        text = "not configured (wifi_set <ssid> <password>"
        if wifi.setup is not None and wifi.setup.is_open():
            text += ", or the setup page: {}".format(wifi.setup.describe())
        text += ")"
    else:
        failure = wifi.failure
        if not failure:
            from mimi.net.wifi_failure import status_text

            failure = status_text(wifi.wlan.status())
        text = "not connected to '{}': {}".format(ssid, failure)
        if wifi.next_try_ms is not None:
            left = max(0, platform.ticks_diff(wifi.next_try_ms, platform.ticks_ms())) // 1000
            text += " ({} failed attempts; next try in {} s)".format(wifi.attempts, left)
    return text + "; " + ntp.summary()


def describe(wifi):
    lines = ["WiFi: " + summary(wifi)]
    if wifi.is_up():
        try:
            lines.append("  signal: {} dBm".format(wifi.wlan.status("rssi")))
        except (OSError, ValueError, TypeError):
            pass
    if wifi.setup is not None and wifi.setup.is_open():
        lines.append("  setup access point: {}".format(wifi.setup.describe()))
    return lines


async def wifi_set(app, ssid, password):
    app.config.set("wifi_config", "ssid", ssid)
    app.config.set("wifi_config", "password", password)
    app.console.commands.out("WiFi credentials saved for '{}' (password {}); reconnecting".format(
        ssid, mask(password, True)))


async def wifi_status(app):
    for line in describe(app.wifi):
        app.console.commands.out(line)
