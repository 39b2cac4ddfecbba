# system_info: uptime, heap, flash use, WiFi signal, firmware version, model and agent counters.
import os

from mimi import VERSION, platform
from mimi.tools.registry import Tool


def _flash_use(root):
    """(total, free) bytes of the filesystem holding root, or None where unknown."""
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return None
    try:
        st = statvfs(root)
    except OSError:
        return None
    block = st[1] or st[0]  # f_frsize, else f_bsize
    return block * st[2], block * st[4]


def _wifi(app):
    wifi = getattr(app, "wifi", None)
    if wifi is None or not wifi.is_up():
        return {"connected": False}
    info = {"connected": True}
    try:
        info["ip"] = wifi.wlan.ifconfig()[0]
    except (OSError, AttributeError):
        pass
    try:
        info["rssi_dbm"] = wifi.wlan.status("rssi")
    except (OSError, ValueError, TypeError):
        pass
    ssid = app.config.get("wifi_config", "ssid")
    if ssid:
        info["ssid"] = ssid
    return info


class SystemInfo(Tool):
    name = "system_info"
    description = (
        "Report the board's state: firmware version, uptime, free heap, flash space, WiFi signal "
        "(RSSI in dBm), the model in use (the profile that answered last) and how many conversation turns were "
        "served."
    )
    schema = {"type": "object", "properties": {}, "required": []}
    tier, acting, level = "observer", False, "autonomous"

    def run(self, input):
        app = self.app
        info = {
            "firmware": "MimiClaw-Py " + VERSION,
            "uptime_s": platform.ticks_diff(platform.ticks_ms(), app.started_ms) // 1000,
            "model": app.config.get("llm_config", "model"),
        }
        answered = app.models.answered
        if answered is not None:  # the profile and model of the last answer (llm/models.py)
            info["profile"], info["model"] = answered[0], answered[1]
        free, used = platform.heap_info()
        if free is not None:
            info["heap_free"] = free
            info["heap_used"] = used
        flash = _flash_use(app.flash.root)
        if flash is not None:
            info["flash_total"] = flash[0]
            info["flash_free"] = flash[1]
        info["wifi"] = _wifi(app)
        agent = getattr(app, "agent", None)
        if agent is not None:
            info["agent_turns"] = agent.turns
            info["agent_failures"] = agent.failures
        return info


TOOLS = (SystemInfo,)
