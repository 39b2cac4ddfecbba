# `make sim` as a new user meets it, in a real terminal (a pty): the guide after boot, the labelled
# demo brain, and line editing drawn by the firmware (Left, Up) because sim hands keys over one by one.
import os
import pty
import re
import select
import signal
import socket
import subprocess
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


def _session_processes(sid):
    """{pid: command line} of the live (not zombie) processes in session `sid`."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/{}/stat".format(name)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/{}/cmdline".format(name), "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:  # ended meanwhile
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields after the name: state, ppid, pgrp, session
            found[int(name)] = cmdline
    return found


def _listening(port):
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _make_sim(tmp_path, ws_port):
    # -o: the venv is taken as it is (a fresh checkout's requirements file looks newer than its stamp)
    return ["make", "--no-print-directory", "-o", ".venv/.installed", "sim", "WS_PORT={}".format(ws_port), "FLASH={}".format(tmp_path / "flash")]


def test_closing_the_terminal_of_make_sim_ends_everything_and_frees_both_ports(tmp_path):
    ws_port = free_port()
    pid, fd = pty.fork()
    if pid == 0:  # the child: `make sim` as typed in a terminal, then the terminal window closes
        os.chdir(ROOT)
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN")}
        os.execvpe("make", _make_sim(tmp_path, ws_port), env)
    term = Terminal.__new__(Terminal)
    term.pid, term.fd, term.raw = pid, fd, b""
    term.read_until("Ctrl-C quits.")
    running = _session_processes(pid)
    firmware = [cmd for cmd in running.values() if "host_sim/run.py" in cmd]
    assert len(firmware) == 1, running
    assert any("tools/sim.py" in cmd for cmd in running.values()), running
    fake_port = int(re.search(r"--anthropic-api http://127\.0\.0\.1:(\d+)", firmware[0]).group(1))
    assert _listening(ws_port) and _listening(fake_port)

    # The terminal window closes: the kernel sends SIGHUP to the session's leader only (make, which then
    # waits for its recipe to end); the others see their terminal hang up.
    os.close(fd)
    deadline = time.monotonic() + 20
    left = running
    while time.monotonic() < deadline:
        if pid:
            done, _ = os.waitpid(pid, os.WNOHANG)
            pid = 0 if done else pid
        left = _session_processes(term.pid)
        if not left and not pid:
            break
        time.sleep(0.2)
    try:
        assert not left, "still running after the hang-up: {}".format(left)
        assert not pid, "make itself is still running"
    finally:
        for stray in left:
            os.kill(stray, 9)
    assert not _listening(ws_port) and not _listening(fake_port)


def test_make_sim_with_its_port_taken_says_so_in_one_line_and_fails(tmp_path):
    ws_port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ws_port))
        holder.listen(1)
        done = subprocess.run(_make_sim(tmp_path, ws_port), cwd=ROOT, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    out = done.stdout + done.stderr
    ours = [line for line in out.splitlines()  # make's own trailer stays ("make[1]: ***" under another make)
            if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert ours == ["sim: port {} is in use (another make sim?); choose another: make sim WS_PORT={}".format(
        ws_port, ws_port + 1 if not _listening(ws_port + 1) else ours[0].rsplit("=", 1)[1])]
    assert "Traceback" not in out
    assert not (tmp_path / "flash").exists()  # nothing started


def test_the_firmware_ends_when_sim_itself_is_killed(tmp_path):
    ws_port = free_port()
    term = Terminal(["tools/sim.py", "--flash", str(tmp_path / "flash"), "--ws-port", str(ws_port)], ROOT)
    try:
        term.read_until("Ctrl-C quits.")
        firmware = [pid for pid, cmd in _session_processes(term.pid).items() if "host_sim/run.py" in cmd]
        assert len(firmware) == 1
        os.kill(term.pid, signal.SIGKILL)  # no clean-up of its own: the kernel tells the firmware
        os.waitpid(term.pid, 0)
        deadline = time.monotonic() + 10
        while firmware[0] in _session_processes(term.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert firmware[0] not in _session_processes(term.pid)
        assert not _listening(ws_port)
    finally:
        for stray in _session_processes(term.pid):
            os.kill(stray, signal.SIGKILL)
        os.close(term.fd)
