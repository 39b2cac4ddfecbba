"""`make sim`'s terminal: keys reach the firmware one at a time (so its line editor gives cursor
keys and Up/Down history, as on the chip), and a short guide is shown once the firmware is up."""
import os
import subprocess
import sys
import threading

READY_MARKS = (b"ready: network up", b"no network yet")  # app.py's last boot line
PROMPT = b"mimi> "
_TAIL = 128  # bytes kept to find a mark cut across two reads


class KeysOneByOne:
    """Context manager: the terminal stops echoing and editing lines (the firmware does both);
    Ctrl-C still stops the simulation. `active` says whether it took effect (a real terminal)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdin
        self.active = False
        self._saved = None

    def __enter__(self):
        try:
            import termios

            fd = self.stream.fileno()
            if not os.isatty(fd):
                return self
            self._saved = termios.tcgetattr(fd)
            mode = termios.tcgetattr(fd)
            mode[3] &= ~(termios.ICANON | termios.ECHO)  # lflags: keys at once, no echo
            mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
            termios.tcsetattr(fd, termios.TCSANOW, mode)
            self.active = True
        except (ImportError, OSError, ValueError, AttributeError):  # not a terminal we can set
            pass
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)


def _line_done(tail):
    for mark in READY_MARKS:
        at = tail.find(mark)
        if at >= 0 and b"\n" in tail[at:]:
            return True
    return False


def relay(proc, out, guide):
    """Copy the firmware's output as it comes; after its last boot line, show the guide once."""
    tail, shown = b"", False
    while True:
        data = proc.stdout.read1(4096)
        if not data:
            return
        out.write(data)
        if not shown:
            tail = (tail + data)[-_TAIL:]
            if _line_done(tail):
                out.write(guide.encode() + PROMPT)
                shown = True
        out.flush()


def run(cmd, cwd, env, guide):
    """Start the firmware, relay its output with the guide, and wait; returns its exit code."""
    with KeysOneByOne() as keys:
        if keys.active:
            env = dict(env, MIMI_CONSOLE_ECHO="1")
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE)
        pump = threading.Thread(target=relay, args=(proc, sys.stdout.buffer, guide), daemon=True)
        pump.start()
        try:
            return proc.wait()
        except KeyboardInterrupt:  # Ctrl-C reaches the firmware too; let it say "stopped"
            try:
                return proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()
        finally:
            pump.join(2)
