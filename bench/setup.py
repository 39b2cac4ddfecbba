# Shared ground for every figure: runtimes, the bundle, the standard flash, a firmware process.
import atexit
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

from host_sim import standins_rom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")
MICROPYTHON_BIN = os.path.join(VENV_BIN, "micropython")
if not os.path.exists(MICROPYTHON_BIN):
    MICROPYTHON_BIN = shutil.which("micropython") or "micropython"
# MIMI_MICROPYTHON=<path>: another MicroPython binary for the chip's figures (e.g. ../shared/tools/micropython32:
# 32-bit, mbedTLS in the GC heap), run beside the default one; its figures are named after its file.
OTHER_MICROPYTHON = os.environ.get("MIMI_MICROPYTHON") or None
# Each run builds its own bundle (removed when it ends): `make bench` and `make soak` side by side never
# import a half-rebuilt module of the other's.
BUNDLE = os.path.join(ROOT, "build", "bench-bundle-{}".format(os.getpid()))
BUNDLE_LIB = os.path.join(BUNDLE, "lib")
SOURCE_LIB = os.path.join(ROOT, "firmware")
# The same modules as a ROMFS image (tools/romfs.py), mounted at /rom and run in place (run.py --romfs).
ROMFS_IMAGE = os.path.join(ROOT, "build", "bench-romfs-{}.img".format(os.getpid()))
# The stand-ins for the chip's built-in modules, run in place from an image of their own in that form.
STANDINS_IMAGE = os.path.join(ROOT, "build", "standins-romfs.img")
FLASH_BLOCK = 4096  # run.py --romfs reads the image into whole flash blocks of RAM
WORK = os.environ.get("BENCH_WORK") or os.path.join(ROOT, "build", "bench-work")  # flashes, data

# The heap of every MicroPython timing run: the recommended board's (an ESP32-S3 with 8 MB of PSRAM), whose
# speed the timing goals are for. Under 2 MB (no PSRAM) the firmware puts the heap before speed: it collects
# early and loads the model clients' code for each call (app.py); BENCHMARKS.md gives that cost too.
TIMING_HEAP = "8M"
API_KEY = "sk-ant-api03-bench" + "b" * 40 + "BENCHTAIL"
KEY_ENV = "MIMI_BENCH_API_KEY"
TG_TOKEN = "123456789:AAE-bench-telegram-token"

# The standard flash: 4 KB each of SOUL/USER/MEMORY, a 20-message history and the WiFi saved.
STANDARD_FILE_BYTES = 4096
HISTORY_MESSAGES = 20
HISTORY_USER_CHARS = 120
HISTORY_ASSISTANT_CHARS = 1024
BENCH_SSID = "bench-wifi"  # the laptop's radio stand-in joins any network at once
BENCH_WS_TOKEN = "bench-gateway-token-0123"

QUICK = bool(os.environ.get("BENCH_QUICK"))


UNLIMITED = (("safety_config.user_per_min", 1000), ("safety_config.llm_per_hour", 100000),
             ("safety_config.day_tokens", 0))


def reps(full, quick=1):
    """How many repetitions: `full` normally, `quick` under BENCH_QUICK=1."""
    return quick if QUICK else full


def micropython(heap=TIMING_HEAP, binary=None):
    return [binary or MICROPYTHON_BIN, "-X", "heapsize=" + heap]


def binaries():
    """The MicroPython binaries the chip's figures run under: the default one, and MIMI_MICROPYTHON's."""
    return [MICROPYTHON_BIN] + ([os.path.abspath(OTHER_MICROPYTHON)] if OTHER_MICROPYTHON else [])


def binary_name(binary):
    """A binary's figures are published under its file name ("micropython", "micropython32")."""
    return os.path.basename(binary or MICROPYTHON_BIN)


def runtime_command(name, heap=TIMING_HEAP, binary=None):
    """(interpreter command, --firmware dir) of a runtime: "mpy" (the .mpy bundle under
    MicroPython), "py" (the .py sources under MicroPython), "romfs" (the ROMFS image under
    MicroPython: "romfs:<image>" instead of a folder) or "cpython"."""
    if name == "romfs":
        return micropython(heap, binary), "romfs:" + ROMFS_IMAGE
    if name == "mpy":
        return micropython(heap, binary), BUNDLE_LIB
    if name == "py":
        return micropython(heap, binary), SOURCE_LIB
    return [sys.executable], SOURCE_LIB


def build_bundle():
    """tools/bundle.py into build/bench-bundle-<pid> (what ships to the board, .mpy), removed at exit."""
    atexit.register(shutil.rmtree, BUNDLE, True)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bundle.py"), "--out",
                           BUNDLE], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit("tools/bundle.py failed:\n" + (done.stdout + done.stderr)[-2000:])


def build_romfs():
    """tools/romfs.py into build/bench-romfs-<pid>.img (the same .mpy modules as an image), removed at exit."""
    stem = os.path.splitext(ROMFS_IMAGE)[0]
    for path in (ROMFS_IMAGE, ROMFS_IMAGE + ".sha256"):
        atexit.register(lambda p=path: os.path.exists(p) and os.remove(p))
    atexit.register(shutil.rmtree, stem + "-src.bundle", True)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "romfs.py"), "build", "--out",
                           ROMFS_IMAGE], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit("tools/romfs.py failed:\n" + (done.stdout + done.stderr)[-2000:])
    standins_rom.build(STANDINS_IMAGE, ROOT)


def image_heap_bytes():
    """What the ROMFS images cost the unix port's heap under run.py --romfs --standins-rom: one bytearray
    of whole 4 KB flash blocks each (host_sim/romfs_host.py, host_sim/standins_rom.py), a multiple of the
    GC block too. On the chip the firmware's image is mapped flash and the stand-ins are C modules."""
    return sum((os.path.getsize(path) + FLASH_BLOCK - 1) // FLASH_BLOCK * FLASH_BLOCK
               for path in (ROMFS_IMAGE, STANDINS_IMAGE))


def chat_replies(fake, replies):
    """The fake answers chat requests (those carrying tools) with `replies` in order, and any other
    request (the summary call of memory consolidation, issue 14) with a short summary, so the
    scripted conversation stays in step whatever the firmware asks on the side."""
    from collections import deque

    from host_sim.fake_anthropic import text

    queue = deque(replies)

    def brain(body, chunk, delay):
        if body.get("tools") and queue:
            return queue.popleft()
        return text("SUMMARY: the owner asked about the garden and the weather.", chunk, delay)

    fake.brain = brain
    return queue


def chat_requests(requests):
    """The recorded requests of the conversation itself (with tools), without side calls."""
    return [r for r in requests if not isinstance(r.get("body"), dict) or r["body"].get("tools")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def claim_work():
    """One run at a time in WORK (make bench, make soak, python -m bench.heap): a second one would remake the
    first's flashes and test CA under it, and the first's chats over TLS would then fail on an untrusted
    certificate. SystemExit naming the run that holds it; a claim whose process is gone is taken over."""
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "running.pid")
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            holder = _claim_holder(path)
            if holder:
                raise SystemExit("bench: another run (pid {}) is using {}; wait for it, or give this one a folder "
                                 "of its own: BENCH_WORK=/tmp/bench-2".format(holder, WORK))
            try:
                os.remove(path)  # left by a run that was killed
            except FileNotFoundError:
                pass
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        atexit.register(lambda: os.path.exists(path) and os.remove(path))
        return


def _claim_holder(path):
    """The pid in a claim file while that process lives, else None."""
    try:
        with open(path) as f:
            text = f.read().strip()
        if not text:  # made by a run this instant, its pid not yet written: held, unless it is old
            return "starting" if time.time() - os.path.getmtime(path) < 10 else None
        pid = int(text)
        os.kill(pid, 0)
    except PermissionError:  # alive, another user's
        return pid
    except (OSError, ValueError):  # unreadable or its process gone
        return None
    return pid


def fresh_dir(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def _filler(title, size):
    """Markdown-ish prose of exactly `size` bytes (ASCII)."""
    line = "- {} note: the owner likes short answers, tea at five and trains. ".format(title)
    text = "# {}\n\n".format(title)
    while len(text) < size:
        text += line + str(len(text)) + "\n"
    return text[:size - 1] + "\n"


def session_line(role, content, ts=1767225600):
    return json.dumps({"role": role, "content": content, "ts": ts}, separators=(",", ":"))


def standard_history(messages=HISTORY_MESSAGES):
    """The standard session: alternating user/assistant lines, oldest first."""
    lines = []
    for i in range(messages):
        if i % 2 == 0:
            text = "Question {}: ".format(i) + "what about the garden? " * 10
            text = text[:HISTORY_USER_CHARS]
            lines.append(session_line("user", text))
        else:
            text = ("Answer {}: ".format(i) + "water the tomatoes twice a week. " * 40)
            lines.append(session_line("assistant", text[:HISTORY_ASSISTANT_CHARS]))
    return lines


def _blob(text):
    return ["blob", base64.b64encode(text.encode()).decode()]  # a string setting in nvs.json (esp32 stand-in)


def standard_flash(name, sessions=(), prepare=None):
    """A flash with the standard SOUL/USER/MEMORY and the standard history in each of
    `sessions` (file stems like "cli_console"); returns the flash folder. prepare(flash), when given, may
    add files and returns more settings for NVS ({namespace: {key: text}})."""
    flash = fresh_dir(name)
    data = os.path.join(flash, "data")
    for rel, title in (("config/SOUL.md", "SOUL"), ("config/USER.md", "USER"),
                       ("memory/MEMORY.md", "MEMORY")):
        path = os.path.join(data, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(_filler(title, STANDARD_FILE_BYTES))
    os.makedirs(os.path.join(data, "sessions"), exist_ok=True)
    nvs = {"wifi_config": {"ssid": _blob(BENCH_SSID)},  # a board set up and booted before: its WiFi saved,
           "gw_config": {"ws_token": _blob(BENCH_WS_TOKEN)}}  # its web chat token made
    for ns, values in (prepare(flash) if prepare else {}).items():
        nvs.setdefault(ns, {}).update({key: _blob(value) for key, value in values.items()})
    with open(os.path.join(flash, "nvs.json"), "w") as f:
        json.dump(nvs, f)
    for stem in sessions:
        with open(os.path.join(data, "sessions", stem + ".jsonl"), "w") as f:
            f.write("\n".join(standard_history()) + "\n")
    return flash


class Firmware:
    """host_sim/run.py as a subprocess; every chunk of console output is timestamped on arrival."""

    def __init__(self, runtime, flash, *args, heap=TIMING_HEAP, binary=None):
        cmd, lib = runtime_command(runtime, heap, binary)
        code = ["--romfs", lib[len("romfs:"):], "--standins-rom", STANDINS_IMAGE] if lib.startswith("romfs:") \
            else ["--firmware", lib]
        self.cmd = cmd + ["host_sim/run.py", "--flash", flash] + code + [
                          "--api-key-env", KEY_ENV] + [str(a) for a in args]
        env = dict(os.environ)
        env[KEY_ENV] = API_KEY
        env["MIMI_SIM_HOST_HEAP"] = "1"  # MicroPython: the laptop side's heap printed at boot (host_heap())
        self.started = time.time()
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        self._out = bytearray()
        self._marks = []  # (time.time() of arrival, offset of the chunk's end)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.pos = 0
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self):
        while True:
            data = self.proc.stdout.read1(65536)
            with self._lock:
                if data:
                    self._out.extend(data)
                    self._marks.append((time.time(), len(self._out)))
                self._changed.notify_all()
            if not data:
                return

    @property
    def output(self):
        with self._lock:
            return self._out.decode("utf-8", "replace")

    def arrival(self, offset):
        """When the byte at `offset` of the output arrived (time.time())."""
        with self._lock:
            for when, end in self._marks:
                if end > offset:
                    return when
        return None

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, pattern, timeout=30):
        """Wait for a regex after the last match; the match (its start's arrival: arrival())."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                text = self._out.decode("utf-8", "replace")
                match = regex.search(text, self.pos)
                if match:
                    self.pos = match.end()
                    return match
                if not self._reader.is_alive():
                    raise RuntimeError("firmware exited before {!r}:\n{}".format(
                        pattern, text[-2000:]))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no {!r} within {} s:\n{}".format(
                        pattern, timeout, text[-2000:]))
                self._changed.wait(min(left, 0.5))

    def expect_time(self, pattern, timeout=30):
        """expect(), then when the match's first byte arrived (time.time())."""
        match = self.expect(pattern, timeout)
        offset = len(self.output[:match.start()].encode("utf-8"))
        return self.arrival(offset)

    def command(self, line, timeout=30):
        self.pos = len(self.output)
        start = self.pos
        self.send(line)
        self.expect(r"mimi> ", timeout)
        return self.output[start:self.pos]

    def host_heap(self):
        """The laptop side's heap before the firmware first started, from run.py's "host heap:" line and
        the qstr_info() line after it (MicroPython only): (bytes, of which the ROMFS images, of which the
        qstr pools themselves), or None. The firmware's names go on in those pools: they count as its own."""
        from bench.drivers_run import pools_bytes

        match = re.search(r"host heap: (\d+) bytes, of which (\d+) the ROMFS images\s*\n(qstr pool: [^\n]*)",
                          self.output)
        return (int(match.group(1)), int(match.group(2)), pools_bytes(match.group(3))) if match else None

    def ready(self, timeout=60):
        self.expect(r"ready: network up|no network yet", timeout)
        return self

    def unlimit(self, timeout=30):
        """Lift the device's rate limits and token budget: a benchmark or soak sends far more turns than
        a person (10 a minute per user, 200 Claude calls an hour); the limits have their own tests."""
        for name, value in UNLIMITED:
            out = self.command("config_set {} {}".format(name, value), timeout)
            if "saved" not in out:
                raise SystemExit("bench: config_set {} failed: {}".format(name, out))
        return self

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)
        return self.output

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
