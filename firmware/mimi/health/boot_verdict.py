# A healthy boot, as health/watchdog.py judges it in the early boot window: the crash count is cleared and an
# OTA image confirmed. Loaded once, at the verdict, in a boot's scope that lets it go (health/__init__.py LET_GO).
from mimi import platform
from mimi.health import crashes
from mimi.ota import mark_valid


def give(health, up_s):
    """The boot is healthy: clear the early-crash count, confirm the running OTA image, say so."""
    health.healthy = True
    crashes.clear()
    valid = mark_valid()  # the OTA image is confirmed: no rollback at the next reset
    platform.log("health: healthy boot ({}); crash count cleared{}".format(
        "a turn completed" if health.app.agent.turns else "up {} s".format(up_s),
        ", firmware marked valid" if valid else ""))
