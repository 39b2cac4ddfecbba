# The console as a person sees it in `make sim`'s terminal (a pty, its output drawn by a VT100 emulator): a line of
# the firmware's own lands above the prompt, and the prompt and a half-typed line (a secret as stars) are drawn
# again below it with the cursor where it was; Ctrl-L clears the screen and draws them at the top.
import os
import select
import time
import urllib.error
import urllib.request

import pyte

from tests.e2e.conftest import free_port
from tests.host.test_sim import ROOT, Terminal

COLUMNS, ROWS = 120, 40
REFUSED = "gateway: refused a request for a name that is not the board's (Host)"


class Screen:
    """What the terminal shows: the firmware's output so far, drawn by pyte."""

    def __init__(self, term):
        self.term = term

    def _drawn(self):
        screen = pyte.Screen(COLUMNS, ROWS)
        pyte.ByteStream(screen).feed(self.term.raw)
        return screen

    def rows(self):
        return [row.rstrip() for row in self._drawn().display]

    def cursor(self):
        """(row text, column) of the cursor."""
        screen = self._drawn()
        return screen.display[screen.cursor.y].rstrip(), screen.cursor.x

    def wait_for(self, check, what, timeout=20):
        deadline = time.monotonic() + timeout
        while not check(self.rows()):
            if time.monotonic() > deadline:
                raise AssertionError("no {} on the screen:\n{}".format(what, "\n".join(self.rows())))
            ready, _, _ = select.select([self.term.fd], [], [], 0.1)
            if ready:
                self.term.raw += os.read(self.term.fd, 4096)


def _firmware_line(port):
    """Make the firmware print a line of its own: a request for a name the board does not answer to."""
    asked = urllib.request.Request("http://127.0.0.1:{}/".format(port), headers={"Host": "rebound.example"})
    try:
        urllib.request.urlopen(asked, timeout=10)
    except urllib.error.HTTPError as refused:
        assert refused.code == 421


def _below(rows, line):
    """The row under the last row showing `line`."""
    at = max(i for i, row in enumerate(rows) if row == line)
    return rows[at + 1] if at + 1 < len(rows) else ""


def _line_then(screen, count, below, column, what):
    """Wait until the firmware's line shows `count` times with `below` drawn under it (and the cursor at `column` of
    that row, unless None). The line and the redraw are separate writes: a screen read between them shows the line
    alone (a fresh clone's run once read it so); a redraw that never comes still fails, at the timeout."""
    screen.wait_for(lambda rows: rows.count(REFUSED) == count and _below(rows, REFUSED) == below
                    and (column is None or screen.cursor() == (below, column)), what)


def test_a_firmware_line_goes_above_the_prompt_and_the_half_typed_line_is_drawn_again(tmp_path):
    ws_port = free_port()
    term = Terminal(["tools/sim.py", "--flash", str(tmp_path / "flash"), "--ws-port", str(ws_port),
                     "--fake-port", str(free_port())], ROOT)
    screen = Screen(term)
    try:
        term.read_until("Ctrl-C quits.")
        term.read_until("mimi> ")
        time.sleep(1)  # the boot's last lines are out

        # Idle: the line is above the prompt, the prompt below it, the cursor after the prompt.
        _firmware_line(ws_port)
        _line_then(screen, 1, "mimi>", len("mimi> "), "the firmware's line on a row of its own, the prompt below it")
        assert not any(row.startswith("mimi> gateway") for row in screen.rows())

        # A half-typed line, the cursor moved into it: drawn again below the line, the cursor where it was.
        term.type(b"chat helo")
        term.type(b"\x1b[D")  # Left
        screen.wait_for(lambda rows: "mimi> chat helo" in rows, "the half line")
        _firmware_line(ws_port)
        _line_then(screen, 2, "mimi> chat helo", len("mimi> chat hel"), "the second firmware line, the half line below")
        term.type(b"l\r")  # the line typed on is the whole line
        screen.wait_for(lambda rows: any("You said: hello" in row for row in rows), "the reply to the whole line")

        # A secret half typed stays stars when it is drawn again.
        screen.wait_for(lambda rows: screen.cursor() == ("mimi>", len("mimi> ")), "the prompt after the reply")
        term.type(b"set_tg_token 123456:ABCsecret")
        screen.wait_for(lambda rows: "mimi> set_tg_token " + "*" * 16 in rows, "the starred secret")
        _firmware_line(ws_port)
        _line_then(screen, 3, "mimi> set_tg_token " + "*" * 16, None, "the third firmware line, the stars below")
        assert "ABCsecret" not in term.screen()

        # Ctrl-L: a clear screen, the prompt and the half line at its top.
        term.type(b"\x0c")
        screen.wait_for(lambda rows: rows[0] == "mimi> set_tg_token " + "*" * 16 and not any(rows[1:]),
                        "the cleared screen")
        assert screen.cursor() == ("mimi> set_tg_token " + "*" * 16, len("mimi> set_tg_token ") + 16)
        term.type(b"\x15")  # Ctrl-U: the secret is not saved
    finally:
        term.close()
