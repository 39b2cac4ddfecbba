# The firmware's own lines (platform.log: a service's news, a notice) on the serial console: never inside a reply
# that is streaming; the reply goes on below them, and is not shown twice.
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


def _reply_in(console, pieces, between):
    """A streamed reply of `pieces`; between(i) runs after piece i (a service printing meanwhile)."""
    run(console.on_start("console"))
    for i, piece in enumerate(pieces):
        run(console.on_delta("console", piece))
        between(i)
    run(console.send(Message("cli", "console", "".join(pieces), {"kind": "final", "streamed": True, "request": {}})))


def test_a_line_printed_while_a_reply_streams_gets_a_line_of_its_own():
    with _Screen() as screen:
        _reply_in(screen.console, ["The sensor ", "seems", " to be offline."],
                  lambda i: i == 1 and platform.log("gateway: web chat on http://192.168.1.20:18789/"))
        assert screen.text() == ("mimi: The sensor seems\n"
                                 "gateway: web chat on http://192.168.1.20:18789/\n"
                                 "mimi:  to be offline.\n")  # the piece as it came: "mimi: " + " to be..."


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
