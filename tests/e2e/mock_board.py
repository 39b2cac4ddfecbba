# The board of the flashing tests: tools/mock_board.py (esp32-mock-bootloader: esptool's real ROM
# bootloader protocol, an in-memory flash) on a free loopback port, and the venv's real esptool
# pointed at it, as a user points it at /dev/ttyACM0.
import os
import shlex
import subprocess
import sys
import time

from tests.e2e.conftest import API_KEY
from tests.runtimes import ROOT
from tools import partition_table

ESPTOOL = os.path.join(ROOT, ".venv", "bin", "esptool")
READER = [sys.executable, os.path.join(ROOT, "tests", "e2e", "esptool_socket.py")]
START_S = 20
MB = 1024 * 1024
TABLE_16 = os.path.join(ROOT, "partitions.csv")
TABLE_8 = os.path.join(ROOT, "partitions-8MiB.csv")
PARTS_16 = partition_table.read(TABLE_16)
PARTS_8 = partition_table.read(TABLE_8)


def _micropython_table(factory_size):
    """MicroPython's own partition table for ESP32_GENERIC_S3 (ports/esp32/partitions-8MiB.csv), the one
    every image micropython.org publishes for it carries: no otadata, no second app slot, no romfs."""
    Part = partition_table.Partition
    return [Part("nvs", "data", "nvs", 0x9000, 0x6000, ""), Part("phy_init", "data", "phy", 0xF000, 0x1000, ""),
            Part("factory", "app", "factory", 0x10000, factory_size, ""),
            Part("vfs", "data", "fat", 0x10000 + factory_size, 8 * 1024 * 1024 - 0x10000 - factory_size, "")]


STOCK_PARTS = _micropython_table(0x300000)  # vfs at 0x310000, 0x4f0000 bytes
STOCK_PARTS_OLD = _micropython_table(0x1F0000)  # older releases: vfs at 0x200000, 0x600000 bytes
STOCK_VERSION = "v1.26.1"  # the stock image's app description
VERSION = "v1.26.0-mimi.1"  # the firmware flashed (its app description)
WIFI_PASSWORD = "flashed-wifi-pass"
ERASED = 0xFF


def part(name, parts=PARTS_16):
    return partition_table.find(parts, name)


def region(data, p):
    return data[p.offset:p.offset + p.size]


def erased(data):
    return data == bytes([ERASED]) * len(data)


def provision_csv(path):
    """provision.example.csv with the WiFi password and the API key filled in, as a user does."""
    with open(os.path.join(ROOT, "provision.example.csv")) as f:
        text = f.read()
    for key, value in (("wifi_config,password", WIFI_PASSWORD), ("llm_config,api_key", API_KEY)):
        text = text.replace(key + ",\n", "{},{}\n".format(key, value))
    path.write_text(text)
    return path


class MockBoard:
    """An ESP32-S3 (or `chip`) in its ROM bootloader with `flash_size` of erased flash, until stop()."""

    def __init__(self, folder, flash_size="16MB", chip="esp32s3"):
        self.chip = chip
        port_file = os.path.join(str(folder), "mock-{}-{}.port".format(chip, flash_size))
        self.log = port_file[:-len(".port")] + ".log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, os.path.join(ROOT, "tools", "mock_board.py"), "--port", "0",
                 "--port-file", port_file, "--chip", chip, "--flash-size", flash_size],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_S
        while True:
            try:
                with open(port_file) as f:
                    self.url = "socket://127.0.0.1:{}".format(int(f.read()))
                return
            except (OSError, ValueError):  # not written yet
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(self.log) as f:
                    raise RuntimeError("tools/mock_board.py did not start:\n" + f.read())
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def esptool(self, *args):
        """The venv's esptool on this board: CompletedProcess, output captured."""
        return _run([ESPTOOL, "--chip", self.chip, "--port", self.url] + list(args))

    def read(self, offset, size, path):
        """`esptool read-flash` (size "ALL": the whole flash esptool detects): the bytes read."""
        done = _run(READER + ["--chip", self.chip, "--port", self.url, "read-flash", hex(offset),
                              size if size == "ALL" else hex(size), str(path)])
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        with open(str(path), "rb") as f:
            return f.read()

    def verify(self, *pieces):
        """`esptool verify-flash offset file ...` (the board's MD5 of each region): CompletedProcess."""
        args = []
        for offset, path in pieces:
            args += [hex(offset), str(path)]
        return self.esptool("verify-flash", *args)

    def run_printed(self, output):
        """Run every `esptool ... write-flash ...` command a tool printed for this board, as a user
        pastes it; the CompletedProcesses."""
        done = []
        for line in output.splitlines():
            if not line.strip().startswith("esptool "):
                continue
            words = shlex.split(line)
            if "write-flash" in words:
                assert words[words.index("--port") + 1] == self.url, line
                done.append(_run([ESPTOOL] + words[1:]))
                assert done[-1].returncode == 0, done[-1].stdout[-3000:] + done[-1].stderr[-3000:]
        return done


def _run(cmd):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def make(*args):
    """`make ARGS` from the repository, as the README says (the venv taken as made: `make test`
    made it); CompletedProcess."""
    env = dict((k, v) for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL"))
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed"] + list(args),
                          cwd=ROOT, env=env, capture_output=True, text=True)


def tool(script, *args):
    """tools/SCRIPT ARGS under this Python; CompletedProcess."""
    return _run([sys.executable, os.path.join(ROOT, "tools", script)] + list(args))
