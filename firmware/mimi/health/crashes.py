# Early crashes counted in NVS across resets; three in a row before a healthy boot mean safe mode.
import machine
from mimi import platform
from mimi.platform import const

_SAFE_MODE_AFTER = const(3)  # crashes in a row, each before the boot proved healthy
CRASH_FILE = "crash_at_boot"  # test hook, in the board's root: "N" makes the next N normal boots raise
_NAMESPACE = "health"
_KEY = "early_crashes"

# This boot's verdict, decided once by guarded() before the firmware starts.
state = {"safe_mode": False, "crashes": 0, "watchdog_reset": False}


def _nvs():
    return platform.NVS(_NAMESPACE)


def count():
    """Crashes since the last healthy boot."""
    try:
        return _nvs().get_i32(_KEY)
    except OSError:  # never stored
        return 0


def _store(n):
    nvs = _nvs()
    nvs.set_i32(_KEY, n)
    nvs.commit()


def record_crash():
    n = count() + 1
    _store(n)
    return n


def clear():
    """The boot is healthy: the crash count starts again from zero."""
    if count():
        _store(0)


def decide():
    """At boot: count a watchdog reset as a crash, then choose normal or safe mode."""
    state["watchdog_reset"] = machine.reset_cause() == machine.WDT_RESET
    if state["watchdog_reset"]:
        platform.log("health: the watchdog reset the device (crash {} in a row)".format(record_crash()))
    n = count()
    state["crashes"] = n
    state["safe_mode"] = n >= _SAFE_MODE_AFTER
    if state["safe_mode"]:
        _store(0)  # safe mode once: the next reset tries a normal start again
    return state["safe_mode"]


def guarded(start):
    """Run the firmware; an exception that escapes it is a crash: print, count, reset."""
    decide()
    try:
        start()
    except Exception as exc:  # SystemExit (a reset) and KeyboardInterrupt (to the REPL) pass through
        platform.log("crash: {}: {} (crash {} in a row soon after boot); restarting".format(
            exc.__class__.__name__, exc, record_crash()))
        platform.print_exception(exc)
        platform.reset()


def inject_crash_if_asked(root):
    """Test hook: while <root>/crash_at_boot holds N > 0, a normal start raises (and N counts down)."""
    from mimi.storage import files

    path = files.join(root, CRASH_FILE)
    text = files.read_text(path, 16)
    if text is None:
        return
    try:
        left = int(text.strip() or "1")
    except ValueError:
        left = 1
    if left <= 1:
        files.remove(path)
    else:
        files.write_atomic(path, str(left - 1))
    raise RuntimeError("crash injected at boot by {} (test hook)".format(path))
