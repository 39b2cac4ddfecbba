# The Health lines of the status command: safe mode or the watchdog, the firmware image, the code's origin.
from mimi import platform
from mimi.health import crashes
from mimi.ota import image


def tell(health):
    out = health.app.console.commands.out
    if health.safe_mode:
        out("  Health: SAFE MODE ({} crashes soon after boot): console and gateway only; restart to leave".format(
            health.crashes_at_boot))
    else:
        out("  Health: normal; boot {}; watchdog {}; {} early crashes".format(
            "healthy" if health.healthy else "not yet proven healthy",
            "fed" if health.problem is None else "STARVED ({})".format(health.problem), crashes.count()))
    out("  Firmware: {}".format(image.describe()))
    out("  Code: {}".format(platform.code_origin()))
