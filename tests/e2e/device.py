# Drives the firmware as a user would: a subprocess with a serial console on stdin/stdout.
import os
import re
import subprocess
import threading
import time

from tests.runtimes import CPYTHON, ROOT, is_romfs, micropython_firmware, romfs_firmware

PROMPT = "mimi> "


class Device:
    def __init__(self, runtime_cmd, flash, *args, env=None):
        extra = [] if list(runtime_cmd) == CPYTHON else micropython_firmware()
        if is_romfs(runtime_cmd):  # the ROMFS form: the image mounted at /rom (tests/runtimes.py)
            extra = romfs_firmware(flash)
        self.cmd = list(runtime_cmd) + ["host_sim/run.py", "--flash", str(flash)] + extra + list(args)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            self.cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=full_env,
        )
        self._out = bytearray()
        self._lock = threading.Lock()
        self.pos = 0  # expect() searches from here
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self):
        while True:
            data = self.proc.stdout.read1(4096)
            if not data:
                return
            with self._lock:
                self._out.extend(data)

    @property
    def output(self):
        with self._lock:
            return self._out.decode("utf-8", "replace")

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, pattern, timeout=20):
        """Wait for a regex in the output after the last match; return the match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.output
            match = regex.search(text, self.pos)
            if match:
                self.pos = match.end()
                return match
            if self.proc.poll() is not None and not self._reader.is_alive():
                raise AssertionError("firmware exited ({}) before {!r}:\n{}".format(
                    self.proc.returncode, pattern, text[-3000:]))
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for {!r}; output so far:\n{}".format(pattern, text[-3000:]))
            time.sleep(0.02)

    def command(self, line, timeout=20):
        """Type a command, wait for the next prompt, return what it printed."""
        start = len(self.output)
        self.pos = max(self.pos, start)
        self.send(line)
        self.expect(re.escape(PROMPT), timeout)
        return self.output[start:self.pos - len(PROMPT)]

    def ready(self, timeout=30):
        """Wait until boot has finished: the prompt is up and the startup report printed."""
        self.expect(r"ready: network up|no network yet", timeout)
        return self

    def restart(self, timeout=30):
        """Type restart and wait until the new boot has finished (services print their lines before ready)."""
        self.command("restart")
        return self.ready(timeout)

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
