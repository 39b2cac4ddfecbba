# Why a WiFi join failed or the link dropped, in the owner's words (loaded by net/wifi.py when that happens).
from mimi.platform import log, wlan_trying

# What a failed attempt means to the owner, by the network module's status name.
_FAILURES = (
    ("STAT_WRONG_PASSWORD", "wrong password"),
    ("STAT_NO_AP_FOUND", "network not found (out of range, or the name is wrong)"),
    ("STAT_HANDSHAKE_TIMEOUT", "handshake timed out (often a wrong password)"),
    ("STAT_ASSOC_FAIL", "the access point refused the connection"),
    ("STAT_BEACON_TIMEOUT", "the access point stopped answering"),
    ("STAT_CONNECT_FAIL", "connection failed"),
    ("STAT_IDLE", "not connected"),
    ("STAT_CONNECTING", "connecting"),
    ("STAT_GOT_IP", "connected"),
)
_STATUS_TEXT = {}


def status_text(code):
    """The station status code in words ("wrong password", "network not found (...)", ...)."""
    if not _STATUS_TEXT:
        import network

        for name, text in _FAILURES:
            if hasattr(network, name):
                _STATUS_TEXT[getattr(network, name)] = text
    return _STATUS_TEXT.get(code, "connection failed (status {})".format(code))


def explain(verdict, wait_s):
    """Why one attempt failed: verdict is the OSError the driver raised, or the station status at the end."""
    if isinstance(verdict, OSError):
        return "the WiFi driver refused to connect ({})".format(verdict)
    if wlan_trying(verdict):
        return "no answer within {} s".format(wait_s)
    return status_text(verdict)


def lost_link(ssid, status):
    """The link to ssid dropped with this station status: why, said on the console too."""
    failure = status_text(status)
    log("WiFi: lost the link to '{}' ({}); reconnecting".format(ssid, failure))
    return failure


def cannot_join(ssid, failure, wait):
    log("WiFi: cannot join '{}': {}; next try in {} s".format(ssid, failure, wait))
