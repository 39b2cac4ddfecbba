"""`make sim`'s terminal: keys reach the firmware one at a time (so its line editor gives cursor
keys and Up/Down history, as on the chip), and a short guide is shown once the firmware is up."""
import os
import signal
import subprocess
import sys
import threading

READY_MARKS = (b"ready: network up", b"no network yet")  # app.py's last boot line
PROMPT = b"mimi> "
_TAIL = 128  # bytes kept to find a mark cut across two reads
PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h)
_STOP_WAIT_S = 5


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

            try:
                termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)
            except (termios.error, OSError, ValueError):  # the terminal is gone (hung up)
                pass


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
        try:
            out.write(data)
            if not shown:
                tail = (tail + data)[-_TAIL:]
                if _line_done(tail):
                    out.write(guide.encode() + PROMPT)
                    shown = True
            out.flush()
        except (OSError, ValueError):  # the terminal is gone: keep draining, so the firmware never blocks
            pass


def _parent_death_signal():
    """A preexec_fn that has the kernel send the firmware SIGTERM when this process dies (Linux's
    PR_SET_PDEATHSIG), or None elsewhere. Looked up before the fork: the child only makes the call."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None

    def set_signal():
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_signal


def stop(proc):
    """SIGTERM, then SIGKILL if the firmware has not ended within a few seconds; its exit code."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(_STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def run(cmd, cwd, env, guide, hang_up=()):
    """Start the firmware, relay its output with the guide, and wait; returns its exit code. The
    exception class `hang_up` (raised by a signal handler) stops the firmware and is raised again."""
    with KeysOneByOne() as keys:
        if keys.active:
            env = dict(env, MIMI_CONSOLE_ECHO="1")
            guide = "\r\x1b[K" + guide  # the firmware may have drawn its prompt already: the guide goes there
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, preexec_fn=_parent_death_signal())
        pump = threading.Thread(target=relay, args=(proc, sys.stdout.buffer, guide), daemon=True)
        pump.start()
        try:
            return proc.wait()
        except KeyboardInterrupt:  # Ctrl-C reaches the firmware too; let it say "stopped"
            try:
                return proc.wait(_STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                return stop(proc)
        except hang_up:
            stop(proc)
            raise
        finally:
            if proc.poll() is None:  # anything else that ends this process ends the firmware too
                stop(proc)
            pump.join(2)
