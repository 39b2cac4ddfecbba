# Every difference between the chip and the laptop lives here, and only here.
import socket
import sys
import time

try:
    from micropython import const
except ImportError:  # CPython

    def const(value):
        return value


import esp32  # noqa: E402  (the real module on the chip, host_sim/standins on the laptop)
import machine  # noqa: E402
import network  # noqa: E402

NVS = esp32.NVS

# The ESP32 RTC counts from 2000-01-01; Unix time from 1970-01-01.
_EPOCH_OFFSET = 946684800 if time.gmtime(0)[0] == 2000 else 0

if hasattr(time, "ticks_ms"):
    ticks_ms = time.ticks_ms
    ticks_diff = time.ticks_diff
    ticks_add = time.ticks_add
else:  # CPython: monotonic milliseconds, no wrap-around

    def ticks_ms():
        return time.monotonic_ns() // 1000000

    def ticks_diff(a, b):
        return a - b

    def ticks_add(a, delta):
        return a + delta


def unix_time():
    """Seconds since 1970-01-01 UTC, on both epochs."""
    return int(time.time()) + _EPOCH_OFFSET


def utc_date(unix=None):
    """'YYYY-MM-DD' (UTC) for a Unix time, default now."""
    t = time.gmtime((unix_time() if unix is None else unix) - _EPOCH_OFFSET)
    return "{:04d}-{:02d}-{:02d}".format(t[0], t[1], t[2])


def utc_stamp(unix=None):
    """'YYYY-MM-DD HH:MM UTC' for a Unix time, default now."""
    t = time.gmtime((unix_time() if unix is None else unix) - _EPOCH_OFFSET)
    return "{:04d}-{:02d}-{:02d} {:02d}:{:02d} UTC".format(t[0], t[1], t[2], t[3], t[4])


try:
    import gc

    _mem_free = gc.mem_free
    _mem_alloc = gc.mem_alloc
except AttributeError:  # CPython has no GC heap figures
    _mem_free = _mem_alloc = None


def heap_info():
    """(free, allocated) bytes of the GC heap, or (None, None) where unknown."""
    if _mem_free is None:
        return None, None
    return _mem_free(), _mem_alloc()


def heap_room():
    """Bytes free in ESP-IDF's data heaps: the RAM the chip's MicroPython grows its split heap into (PSRAM
    included, when the board has it) and mbedTLS and lwIP take from; 0 where there are none (the laptop)."""
    info = getattr(esp32, "idf_heap_info", None)
    if info is None:
        return 0
    return sum(region[1] for region in info(esp32.HEAP_DATA))


def collect():
    gc.collect()


def collect_every(nbytes):
    """A collection after every nbytes allocated, besides the one a full heap forces: garbage goes back before
    the heap fills, so the blocks that live on are not scattered between dead ones (fewer, larger holes). Where
    the runtime has no such setting (CPython), nothing."""
    threshold = getattr(gc, "threshold", None)
    if threshold is not None:
        threshold(nbytes)


def thread_safe_flag():
    """An asyncio flag an interrupt handler may set: MicroPython's ThreadSafeFlag; on CPython (the laptop) an
    Event set through the loop, from its own thread or another, cleared by the one waiter's wait()."""
    import asyncio

    if hasattr(asyncio, "ThreadSafeFlag"):
        return asyncio.ThreadSafeFlag()
    else:  # the laptop: a class the chip never makes (check_api accepts the fallback)
        class LoopFlag:
            def __init__(self):
                self.event, self.loop = asyncio.Event(), None

            def set(self):
                try:
                    running = asyncio.get_running_loop()
                except RuntimeError:
                    running = None
                if self.loop is None or running is self.loop:
                    self.event.set()
                else:
                    self.loop.call_soon_threadsafe(self.event.set)

            async def wait(self):
                self.loop = asyncio.get_running_loop()
                await self.event.wait()
                self.event.clear()

        return LoopFlag()


def reset():
    """Reboot the chip (on the laptop: restart the firmware process's main)."""
    machine.reset()


def wlan():
    return network.WLAN(network.STA_IF)


def wlan_trying(status):
    """True while the station status says the driver is still at it (connecting, or not started yet)."""
    return status == getattr(network, "STAT_CONNECTING", None) or status == getattr(network, "STAT_IDLE", None)


# MicroPython's socket module may lack the names; the numbers are those of Linux and lwIP alike.
_IPPROTO_TCP = getattr(socket, "IPPROTO_TCP", 6)
_TCP_NODELAY = getattr(socket, "TCP_NODELAY", 1)


def tcp_nodelay(writer):
    """Turn Nagle's algorithm off on an asyncio stream's socket (small frames leave at once).

    Silently does nothing where the platform cannot: it only costs latency, never correctness.
    """
    sock = getattr(writer, "s", None)  # MicroPython's Stream
    try:
        if sock is None:
            sock = writer.get_extra_info("socket")  # CPython's StreamWriter
        sock.setsockopt(_IPPROTO_TCP, _TCP_NODELAY, 1)
    except (AttributeError, KeyError, OSError, TypeError, ValueError):
        pass


_WRITE_KEEPS_BUFFER = sys.implementation.name != "micropython"


def writable(view):
    """What to hand a stream's write() for a view of a buffer that is reused after the write: MicroPython
    writes it (or copies what is left into its own buffer) before write() returns, so the view itself;
    CPython's transports may hold on to the object until later, so a copy."""
    return bytes(view) if _WRITE_KEEPS_BUFFER else view


def print_exception(exc):
    try:
        sys.print_exception(exc)
    except AttributeError:  # CPython
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)


def console_write(text):
    """Write to the serial console at once (also when stdout is a pipe)."""
    sys.stdout.write(text)
    flush = getattr(sys.stdout, "flush", None)
    if flush:
        flush()


_log_line = print  # where log() lines go: the console's note() once the console is made (log_to)


def log(line):
    """One line of the firmware's own (a service's news, a warning) on the console: never inside a reply the
    console is streaming (the console breaks the reply's line first; the reply goes on below)."""
    _log_line(line)


def log_to(note):
    """The console (channels/console.py) takes the firmware's lines: note(line) shows one on a line of its own."""
    global _log_line
    _log_line = note


async def console_reader():
    """An asyncio stream over the console's input; read(1) never blocks the loop."""
    import asyncio

    loop = asyncio.get_event_loop()
    connect = getattr(loop, "connect_read_pipe", None)
    if connect is None:  # MicroPython: the stdin stream is pollable
        return asyncio.StreamReader(sys.stdin.buffer)
    import os

    # CPython: a duplicate of stdin, so closing this loop (a soft reset) leaves stdin open.
    pipe = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    reader = asyncio.StreamReader()
    try:
        await connect(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except ValueError:  # stdin is a regular file: reads never block, so plain reads will do

        class FileReader:  # made here: only CPython with stdin from a file needs it
            async def read(self, n):
                return pipe.read(n)

        return FileReader()
    return reader


# The chip's serial console does not echo what is typed; the laptop's terminal does, unless
# `make sim` hands the firmware a terminal without echo (MIMI_CONSOLE_ECHO=1) for line editing.
try:
    import os

    CONSOLE_ECHO = sys.platform == "esp32" or os.getenv("MIMI_CONSOLE_ECHO") == "1"
except (ImportError, AttributeError):  # the chip has no environment
    CONSOLE_ECHO = sys.platform == "esp32"


def code_origin():
    """Where the firmware's modules run from (`status`): the ROMFS image, frozen code, or files."""
    import mimi

    path = getattr(mimi, "__file__", None) or ""
    if path.startswith("/rom/"):
        return "ROMFS image in /rom (bytecode run in place from flash; it wins over /lib)"
    if not path or path.startswith((".frozen", "mimi/")):
        return "frozen into the firmware image"
    return "files in {}".format(path.rsplit("/", 2)[0])  # /lib on the board: loaded into RAM
