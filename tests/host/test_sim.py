# `make sim` as a new user meets it, in a real terminal (a pty): the guide after boot, the labelled
# demo brain, and line editing drawn by the firmware (Left, Up) because sim hands keys over one by one.
import os
import pty
import re
import select
import sys
import time

from tests.e2e.conftest import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Terminal:
    def __init__(self, argv, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: tools/sim.py on the pty, as `make sim` runs it
            os.chdir(cwd)
            env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN")}
            os.execve(sys.executable, [sys.executable] + argv, env)
        self.raw = b""

    def read_until(self, text, timeout=40, times=1):
        """Read until `text` has been shown `times` times; returns the screen so far."""
        deadline = time.monotonic() + timeout
        while self.screen().count(text) < times:
            if time.monotonic() > deadline:
                raise AssertionError("no {!r} on the terminal:\n{}".format(text, self.screen()[-2000:]))
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.raw += os.read(self.fd, 4096)
                except OSError:
                    break
        return self.screen()

    def screen(self):
        return self.raw.decode("utf-8", "replace").replace("\r", "")

    def type(self, data):
        os.write(self.fd, data)

    def close(self):
        os.write(self.fd, b"\x03")  # Ctrl-C ends the simulation
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                break
            time.sleep(0.1)
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def test_make_sim_greets_labels_the_demo_and_edits_lines(tmp_path):
    ws_port, fake_port = free_port(), free_port()
    term = Terminal(["tools/sim.py", "--flash", str(tmp_path / "flash"), "--ws-port", str(ws_port),
                     "--fake-port", str(fake_port)], ROOT)
    try:
        screen = term.read_until("Ctrl-C quits.")
        after_boot = screen[screen.index("ready: network up"):]
        assert "OFFLINE DEMO" in after_boot
        assert "ANTHROPIC_API_KEY=sk-ant-... make sim" in after_boot
        assert "http://localhost:{}/".format(ws_port) in after_boot
        term.read_until("mimi> ", 5)
        term.type(b"chat helo")
        term.type(b"\x1b[Dl\r")  # Left, then an l: the firmware inserts it and redraws
        reply = "mimi: (offline demo: no API key set) You said: hello\n"
        term.read_until(reply)
        term.type(b"\x1b[A\r")  # Up: the same line again
        screen = term.read_until(reply, times=2)
        assert "[context]" not in screen
        assert "chat hello" in ANSI.sub("", screen.split(reply)[1])  # the recalled line was drawn
        term.type(b"heap_i\t\r")  # Tab completes the command name
        screen = term.read_until("heap: ")
        assert "heap_info " in ANSI.sub("", screen) and "unknown command" not in screen
    finally:
        term.close()
