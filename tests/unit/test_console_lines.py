# The firmware's own lines (platform.log: a service's news, a notice) on the serial console: never inside a reply
# that is streaming; the reply goes on below them, and is not shown twice.
import asyncio

from support import run

from mimi import platform
from mimi.bus.message import Message
from mimi.channels import console as console_module
from mimi.channels.console import Console

REPLY = "The sensor seems to be offline."


class _App:
    pass


class _Screen:
    """What the console shows, while a console takes platform.log's lines as its run() does."""

    def __enter__(self):
        self.shown = []
        self.console = Console(_App())
        self.saved = platform.console_write, console_module._show
        platform.console_write = console_module._show = self.shown.append
        platform.log_to(self.console.note)
        return self

    def __exit__(self, *exc):
        platform.console_write, console_module._show = self.saved
        platform.log_to(print)

    def text(self):
        return "".join(self.shown)


def _reply_in(console, pieces, between, pause=0):
    """A streamed reply of `pieces`; between(i) runs after piece i (a service printing meanwhile), then `pause` s."""
    async def stream():
        await console.on_start("console")
        for i, piece in enumerate(pieces):
            await console.on_delta("console", piece)
            between(i)
            await asyncio.sleep(pause)
        await console.send(Message("cli", "console", "".join(pieces), {"kind": "final", "streamed": True,
                                                                        "request": {}}))

    run(stream())


def test_a_line_printed_while_a_reply_streams_goes_under_the_reply_s_line_never_through_a_word():
    with _Screen() as screen:
        _reply_in(screen.console, ["The tool get_cur", "rent_time answered", ": it is late."],
                  lambda i: i == 0 and platform.log("gateway: web chat on http://192.168.1.20:18789/"))
        assert screen.text() == ("mimi: The tool get_current_time answered: it is late.\n"
                                 "gateway: web chat on http://192.168.1.20:18789/\n")


def test_a_held_line_comes_out_where_a_line_of_the_reply_ends_and_the_reply_goes_on_below_it():
    with _Screen() as screen:
        _reply_in(screen.console, ["First line ", "goes on\nSecond", " line."],
                  lambda i: i == 0 and platform.log("mqtt: connected to broker.local:1883 as mimi/kitchen"))
        assert screen.text() == ("mimi: First line goes on\n"
                                 "mqtt: connected to broker.local:1883 as mimi/kitchen\n"
                                 "mimi: Second line.\n")


def test_a_line_held_while_a_reply_stalls_comes_out_after_a_second():
    with _Screen() as screen:
        _reply_in(screen.console, ["Thinking", " done."], lambda i: i == 0 and platform.log("watchdog: stuck"),
                  pause=1.3)
        assert screen.text() == "mimi: Thinking\nwatchdog: stuck\nmimi:  done.\n"


def test_a_reply_that_keeps_coming_for_seconds_keeps_its_line_whole():
    with _Screen() as screen:
        pieces = ["piece{} ".format(n) for n in range(8)]
        _reply_in(screen.console, pieces, lambda i: i == 0 and platform.log("gateway: a line"), pause=0.3)
        assert screen.text() == "mimi: " + "".join(pieces) + "\ngateway: a line\n"


def test_lines_held_while_a_reply_goes_on_and_on_are_bounded():
    with _Screen() as screen:
        _reply_in(screen.console, ["a", "b"], lambda i: i == 0 and [platform.log("line {}".format(n)) for n in range(9)])
        assert screen.text() == "mimi: a\n" + "".join("line {}\n".format(n) for n in range(9)) + "mimi: b\n"


def test_a_line_after_the_last_piece_does_not_make_the_reply_shown_twice():
    with _Screen() as screen:
        _reply_in(screen.console, ["The sensor seems", " to be offline."],
                  lambda i: i == 1 and platform.log("mqtt: connected to broker.local:1883 as mimi/kitchen"))
        assert screen.text() == ("mimi: The sensor seems to be offline.\n"
                                 "mqtt: connected to broker.local:1883 as mimi/kitchen\n")
        assert screen.text().count("offline") == 1


def test_a_line_with_no_reply_streaming_is_just_that_line():
    with _Screen() as screen:
        platform.log("telegram: polling as @mimi_bot")
        _reply_in(screen.console, [REPLY], lambda i: None)
        assert screen.text() == "telegram: polling as @mimi_bot\nmimi: {}\n".format(REPLY)


def test_a_line_logged_while_a_web_view_takes_a_commands_output_stays_on_the_console():
    # gateway/views.py swaps platform.console_write to collect what a command prints for the web app.
    with _Screen() as screen:
        taken = []
        platform.console_write = taken.append
        platform.console_write("status: up 5 s\n")
        platform.log("wifi: connected to Home, 192.168.1.20")
        assert taken == ["status: up 5 s\n"]
        assert screen.text() == "wifi: connected to Home, 192.168.1.20\n"


class _Terminal:
    """A terminal's rows as the console draws them (text, \\r, \\n, \\b, ESC [ n C/D, ESC [ K, ESC [ H, ESC [ 2 J)."""

    def __init__(self):
        self.rows, self.col = [[]], 0

    def write(self, text):
        i = 0
        while i < len(text):
            ch, row = text[i], self.rows[-1]
            if ch == "\x1b":
                j = i + 2
                while not text[j].isalpha():
                    j += 1
                n, code = int(text[i + 2:j] or "1"), text[j]
                if code == "D":
                    self.col -= n
                elif code == "C":
                    self.col += n
                elif code == "K":
                    del row[self.col:]
                elif code == "J":
                    self.rows = [[]]
                elif code == "H":
                    self.col = 0
                i = j + 1
                continue
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self.rows.append([])
                self.col = 0
            elif ch == "\b":
                self.col -= 1
            else:
                row[self.col:self.col + 1] = [ch]
                self.col += 1
            i += 1

    def shown(self):
        return ["".join(row) for row in self.rows]


def _at_the_prompt(echo=True):
    """A console drawing on a _Terminal, its prompt shown; the terminal."""
    terminal = _Terminal()
    console = Console(_App())
    console.editor.write, console.editor.echo = terminal.write, echo
    console_module._show = terminal.write
    console._prompt(console_module.PROMPT)
    return console, terminal


def _keys(console, data):
    for code in data:
        assert console.editor.feed(code) is None


def test_a_line_at_the_prompt_goes_above_it_and_the_half_typed_line_is_drawn_again_below():
    saved = console_module._show
    try:
        console, terminal = _at_the_prompt()
        console.note("wifi: connected to Home, 192.168.1.20")
        assert terminal.shown() == ["wifi: connected to Home, 192.168.1.20", "mimi> "]
        assert terminal.col == len("mimi> ")
        _keys(console, b"set_api_key sk-ant-12345\x1b[D\x1b[D")  # a secret, the cursor two to the left
        console.note("mqtt: connected to broker.local:1883")
        assert terminal.shown()[1:] == ["mqtt: connected to broker.local:1883", "mimi> set_api_key " + "*" * 12]
        assert terminal.col == len("mimi> set_api_key ") + 10
        _keys(console, b"\x0c")  # Ctrl-L: the screen cleared, the prompt and the line at its top
        assert terminal.shown() == ["mimi> set_api_key " + "*" * 12] and terminal.col == len("mimi> set_api_key ") + 10
        assert console.editor.feed(13) == "set_api_key sk-ant-12345"  # the line typed on is the line as it was
        console.note("telegram: polling as @mimi_bot")  # a command runs: no prompt to draw again
        assert terminal.shown()[-2:] == ["telegram: polling as @mimi_bot", ""]
    finally:
        console_module._show = saved


def test_without_drawing_a_line_at_the_prompt_is_just_that_line():
    # A terminal that echoes by itself (a pipe, a plain terminal) holds its own copy of the typed line.
    saved = console_module._show
    try:
        console, terminal = _at_the_prompt(echo=False)
        console.note("wifi: connected to Home, 192.168.1.20")
        assert terminal.shown() == ["mimi> wifi: connected to Home, 192.168.1.20", ""]
    finally:
        console_module._show = saved
