# Laptop stand-in for the machine module: reset as an exception, a watchdog that bites, a fixed identity.
#
# Scripted sensors (host only): with MIMI_SIM_SENSORS=<file> in the environment, or after
# use_sensors(<file>), readings come from that JSON file, read again at every reading so a test
# can change it while the firmware runs: {"adc": {"4": <millivolts>}, "gpio": {"5": 0 or 1},
# "temperature": <degrees C>} (esp32.mcu_temperature). Pins the file does not name behave as before.
# A pin with an irq() handler is watched: when the file changes that pin's level (looked at every 10 ms),
# the handler runs as on the chip, for the edges it asked for; what an output pin was set to reads back.
# Injected MemoryErrors (host only): MIMI_SIM_MEMORY_ERRORS, see memory_error_if_asked.
import json
import os
import time

# reset_cause() values of the ESP32 port
PWRON_RESET = 1
HARD_RESET = 2
WDT_RESET = 3
DEEPSLEEP_RESET = 4
SOFT_RESET = 5

_CPU_HZ = 240000000
_UNIQUE_ID = b"\x24\x6f\x28\x4d\x49\x4d"  # an Espressif-style MAC; stands for the chip's base MAC
_WDT_TIMEOUT_MS = 5000

_state = {"reset_cause": PWRON_RESET, "freq": _CPU_HZ}

SENSORS_ENV = "MIMI_SIM_SENSORS"
_sensors = [os.getenv(SENSORS_ENV) or None]  # the scripted readings file, or None
_read = [None]  # the file's last readings parsed whole


def use_sensors(path):
    """Host only: take scripted readings from this JSON file (None: no scripted readings); what edge() forced
    and the outputs' writes are forgotten."""
    _sensors[0] = path
    _read[0] = None
    _forced.clear()
    _written.clear()


def scripted(kind, key=None):
    """Host only: the file's reading for kind ("adc", "gpio", "temperature") and pin, or None."""
    if _sensors[0] is None:
        return None
    try:
        with open(_sensors[0]) as f:
            readings = _read[0] = json.load(f)
    except OSError:  # missing: as if nothing were scripted
        return None
    except ValueError:  # half-written by a test rewriting it in place: the readings before stay
        readings = _read[0]
        if readings is None:
            return None
    value = readings.get(kind)
    if key is not None:
        value = value.get(str(key)) if isinstance(value, dict) else None
    return value


class ResetRequested(SystemExit):
    """machine.reset() on the laptop: ends the event loop (a SystemExit passes through every task);
    the host runner catches it and starts the firmware again."""


def reset():
    _state["reset_cause"] = SOFT_RESET  # the ESP32 port reports a software restart as SOFT_RESET
    _watchdog[0] = None
    raise ResetRequested("machine.reset()")


def soft_reset():
    raise ResetRequested("machine.soft_reset()")


def reset_cause():
    return _state["reset_cause"]


def unique_id():
    """6 bytes; a different flash folder (esp32.set_flash_dir) gives a different device."""
    import esp32

    folder = esp32._flash_dir[0]
    if folder is None:
        return _UNIQUE_ID
    import hashlib

    return _UNIQUE_ID[:3] + hashlib.sha256(folder.encode()).digest()[:3]


def freq(hz=None):
    if hz is None:
        return _state["freq"]
    _state["freq"] = hz


def _ticks_ms():
    ticks = getattr(time, "ticks_ms", None)
    if ticks:
        return ticks()
    return time.monotonic_ns() // 1000000


def _ticks_us():
    ticks = getattr(time, "ticks_us", None)
    if ticks:
        return ticks()
    return time.monotonic_ns() // 1000


IRQ_POLL_MS = 10  # how often the scripted sensors file is looked at for the edges of pins with a handler
_irqs = {}  # pin number -> [Pin, handler, trigger bits, last level]
_watching = [None]  # the task looking at the file
_written = {}  # pin number -> (level, ticks_us) an output was last set to: what a test or bench reads back
_forced = {}  # pin number -> level set by edge() (the bench's pin), before the sensors file


class Pin:
    """A GPIO whose level lives in memory: what is written is read back."""

    IN = 1
    OUT = 3
    OPEN_DRAIN = 7
    PULL_UP = 2
    PULL_DOWN = 1
    IRQ_RISING = 1  # the ESP32 port's values
    IRQ_FALLING = 2

    def __init__(self, id, mode=-1, pull=-1, value=None):
        self.id = id
        self.mode = mode
        self.pull = pull
        self._value = 0 if value is None else int(bool(value))
        if value is not None and mode == Pin.OUT:
            _written[id] = (self._value, _ticks_us())

    def value(self, x=None):
        if x is None:
            level = None if self.mode == Pin.OUT else _forced.get(self.id, scripted("gpio", self.id))
            return self._value if level is None else int(bool(level))
        self._value = int(bool(x))
        _written[self.id] = (self._value, _ticks_us())

    def __call__(self, x=None):
        return self.value(x)

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def irq(self, handler=None, trigger=IRQ_RISING | IRQ_FALLING):
        """Run handler(pin) at the pin's edges (handler None: no more); on the laptop the edges are the
        scripted sensors file's changes of the pin's level (watch_irqs)."""
        if handler is None:
            _irqs.pop(self.id, None)
            return
        _irqs[self.id] = [self, handler, trigger, self.value()]
        if _watching[0] is None:
            import asyncio

            _watching[0] = asyncio.create_task(watch_irqs())


def written(pin):
    """Host only: (level, ticks_us) an output pin was last set to, or None."""
    return _written.get(pin)


def edge(pin, level):
    """Host only: the pin's level is now `level` (over the sensors file), its handler run at once when the
    change is an edge it asked for, as the chip's interrupt would (the bench's way to press a button)."""
    _forced[pin] = int(bool(level))
    entry = _irqs.get(pin)
    if entry is not None and entry[3] != _forced[pin]:
        entry[3] = _forced[pin]
        if entry[2] & (Pin.IRQ_RISING if level else Pin.IRQ_FALLING):
            entry[1](entry[0])


async def watch_irqs():
    """Host only: the edges of pins with a handler, from the scripted sensors file (read every IRQ_POLL_MS)."""
    import asyncio

    try:
        while _irqs:
            await asyncio.sleep(IRQ_POLL_MS / 1000)
            for entry in list(_irqs.values()):
                level = entry[0].value()
                if level != entry[3]:
                    entry[3] = level
                    if entry[2] & (Pin.IRQ_RISING if level else Pin.IRQ_FALLING):
                        entry[1](entry[0])
    finally:
        _watching[0] = None


class ADC:
    """An ADC channel on a Pin: reads the scripted millivolts of its pin, else 0 V."""

    ATTN_0DB = 0
    ATTN_2_5DB = 1
    ATTN_6DB = 2
    ATTN_11DB = 3
    _FULL_SCALE_MV = 3100  # at 11 dB

    def __init__(self, pin, atten=ATTN_0DB):
        self.pin = pin
        self.atten = atten

    def _millivolts(self):
        value = scripted("adc", getattr(self.pin, "id", self.pin))
        return min(max(int(value or 0), 0), self._FULL_SCALE_MV)

    def read_uv(self):
        return self._millivolts() * 1000

    def read_u16(self):
        return self._millivolts() * 65535 // self._FULL_SCALE_MV

    def read(self):
        return self._millivolts() * 4095 // self._FULL_SCALE_MV


class WDTReset(ResetRequested):
    """The watchdog bit: the host runner restarts the firmware, which then sees WDT_RESET."""


_watchdog = [None]  # the started WDT of this boot (a reset stops it, as on the chip)


class WDT:
    """Records feeds; bites through wdt_watch(), which the host runner runs beside the firmware
    (on the chip it cannot be stopped once started; a reset ends it)."""

    def __init__(self, id=0, timeout=_WDT_TIMEOUT_MS):
        self.timeout = timeout
        self.last_feed = _ticks_ms()
        self.feeds = 0
        _watchdog[0] = self

    def feed(self):
        memory_error_if_asked("wdt_feed")  # the main loop's watchdog tick
        self.last_feed = _ticks_ms()
        self.feeds += 1


MEMORY_ERRORS_ENV = "MIMI_SIM_MEMORY_ERRORS"
_memory_errors = {}  # point -> MemoryErrors raised there so far


def memory_error_if_asked(point):
    """Host only, a test's fault: with MIMI_SIM_MEMORY_ERRORS=<file> holding {"<point>": N} (read at each call),
    the first N calls at that point raise MemoryError, as a tick that finds no heap would. Points: wdt_feed
    (WDT.feed: the main loop), wlan_isconnected (network.WLAN.isconnected: the WiFi keeper's tick)."""
    path = os.getenv(MEMORY_ERRORS_ENV)
    if not path:
        return
    try:
        with open(path) as f:
            wanted = json.load(f).get(point, 0)
    except (OSError, ValueError):
        return
    done = _memory_errors.get(point, 0)
    if done < wanted:
        _memory_errors[point] = done + 1
        print("sim: MemoryError injected at {} ({} of {})".format(point, done + 1, wanted))
        raise MemoryError("memory allocation failed, allocating 4096 bytes (injected by the test at {})".format(point))


def wdt_expired():
    """Host only: has the started watchdog gone unfed longer than its timeout?"""
    wdt = _watchdog[0]
    if wdt is None:
        return False
    diff = getattr(time, "ticks_diff", None)
    waited = diff(_ticks_ms(), wdt.last_feed) if diff else _ticks_ms() - wdt.last_feed
    return waited > wdt.timeout


def wdt_bite():
    """Host only: the watchdog resets the chip: raises WDTReset, reset_cause() is WDT_RESET."""
    _watchdog[0] = None
    _state["reset_cause"] = WDT_RESET
    raise WDTReset("watchdog timeout")


async def wdt_watch(period_s=0.05):
    """Host only: a task the host runner starts each boot; an unfed WDT ends the event loop."""
    import asyncio

    while True:
        await asyncio.sleep(period_s)
        if wdt_expired():
            wdt_bite()


class RTC:
    """Minimal: reads the laptop's UTC clock; setting it is accepted and ignored (it is right)."""

    def __init__(self, id=0):
        pass

    def datetime(self, value=None):
        if value is not None:
            return None
        t = time.gmtime()
        # (year, month, day, weekday, hours, minutes, seconds, subseconds)
        return (t[0], t[1], t[2], t[6], t[3], t[4], t[5], 0)
