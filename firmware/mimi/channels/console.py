# The serial console: a line editor on the non-blocking stdin stream, and the `cli` channel of the bus.
import asyncio

from mimi import platform
from mimi.bus.message import CLI, Message
from mimi.bus.queue import Queue
from mimi.channels import Channel
from mimi.channels.commands import Commands
from mimi.channels.line_editor import CANCEL, LineEditor
from mimi.health import memory_errors
from mimi.platform import const

PROMPT = "mimi> "
_LINES_WAITING = const(4)  # lines typed while a command still runs
CHAT_ID = "console"
_REPLY_TIMEOUT_S = const(600)
_HELD_MAX = const(8)  # firmware lines held back while a reply's line is being written (more: shown at once)
_QUIET_MS = const(1000)  # ... while the reply keeps coming: one quiet this long (a stall) lets them out
_HELD_MAX_MS = const(10000)  # ... and never longer than this
_show = platform.console_write  # the console itself (gateway/views.py swaps platform.console_write for a while)


class Console(Channel):
    """Serial CLI task plus the `cli` channel: replies stream straight to the console."""

    name = CLI
    streams = True

    def __init__(self, app):
        self.app = app
        self.commands = Commands(app, self)
        self._reply_done = asyncio.Event()
        self._streaming = False
        self._line_broken = False
        self._held = []  # the firmware's lines that came while a reply's line was being written
        self._delta_ms = 0  # ticks_ms of the reply's newest piece
        # Line editing and Up/Down history; drawn by the firmware where the terminal does not echo.
        self.editor = LineEditor(platform.console_write, platform.CONSOLE_ECHO, self.commands.secret_from,
                                 names=self.commands.names)  # Tab completes names
        self._lines = Queue(_LINES_WAITING)
        self._questions = []  # open confirmation questions; the next line typed answers the oldest

    # -- the cli channel --
    async def on_start(self, chat_id):
        self._release()
        self._streaming = False
        self._line_broken = False  # text shown, then a tool's or the firmware's line: send() must not repeat it

    async def on_delta(self, chat_id, text):
        self._delta_ms = platform.ticks_ms()
        if not self._streaming:
            text = text.lstrip("\n")  # a round after a tool, or the rest after a firmware line: a fresh "mimi:" line
            if not text:
                return
            self._streaming = True
            platform.console_write("mimi: ")
        if self._held and "\n" in text:  # a line of the reply ends: the firmware's lines held go under it
            cut = text.rindex("\n")
            platform.console_write(text[:cut])
            self._release()
            await self.on_delta(chat_id, text[cut + 1:])
            return
        platform.console_write(text)

    async def on_tool(self, chat_id, name):
        self._release()  # the agent's "tool ... requested" line goes below the text so far

    def _release(self):
        """End the reply's line being written, if one is, and show the firmware's lines held while it was."""
        if self._streaming:
            platform.console_write("\n")
            self._streaming = False
            self._line_broken = True
        held, self._held = self._held, []
        for line in held:
            _show(line + "\n")

    async def _release_soon(self):
        """A reply that stalls mid-line (a stuck model, a watchdog about to reset) still lets its lines out."""
        held, waited = self._held, 0  # this burst: a release starts another list
        while self._held is held and waited < _HELD_MAX_MS:
            await asyncio.sleep(_QUIET_MS / 4000)
            waited += _QUIET_MS // 4
            if platform.ticks_diff(platform.ticks_ms(), self._delta_ms) >= _QUIET_MS:
                break
        if self._held is held and held:
            self._release()

    def note(self, line):
        """A line of its own: while a reply is streaming, under the reply's line once that line ends (the reply
        goes on after it, on a "mimi:" line), never through a word of it; at the prompt, above it (the prompt and
        any half-typed line are drawn again below). Straight to the console, also while a web view takes a
        command's output (gateway/views.py)."""
        if self._streaming:  # never through a word of the reply: under its line, once that line ends
            self._held.append(line)
            if len(self._held) > _HELD_MAX:  # a reply that goes on and on: its line is broken after all
                self._release()
            elif len(self._held) == 1:
                asyncio.create_task(self._release_soon())
            return
        editor = self.editor
        if editor.echo and (editor.prompt or editor.chars):
            editor.above(line)
            return
        _show(line + "\n")

    async def send(self, message):
        meta = message.meta
        if meta.get("kind") in ("report", "notice"):  # beside a reply: its own line, the reply goes on after
            self.note("{}: {}".format(meta["kind"], message.content))
            return
        streamed = self._streaming
        self._release()
        if meta.get("kind") == "error":
            platform.console_write("error: {}\n".format(message.content))
        elif not streamed and not (self._line_broken and meta.get("streamed")):
            platform.console_write("mimi: {}\n".format(message.content))
        self._streaming = self._line_broken = False
        if "request" in meta:  # the agent's answer to a chat (not a send_message notice)
            self._reply_done.set()

    async def chat(self, text):
        """Send text to the agent as the console user and wait until the reply is shown."""
        self._reply_done.clear()
        await self.app.deliver(Message(CLI, CHAT_ID, text))
        try:
            await asyncio.wait_for(self._reply_done.wait(), _REPLY_TIMEOUT_S)
        except asyncio.TimeoutError:
            platform.console_write("error: no reply within {} s\n".format(_REPLY_TIMEOUT_S))

    async def confirm(self, question, seconds):
        """Ask a yes/no question; the next line typed answers it (no answer in time: no)."""
        from mimi.safety import confirm  # the outcomes' wording, loaded with the first question

        platform.console_write("\n")
        self._prompt("confirm: {} [y/n] ".format(question.text()))
        self._questions.append(question)
        try:
            outcome = await question.wait(seconds)
        finally:
            self._questions.remove(question)
        self.editor.prompt = ""
        platform.console_write("confirm: {} {}\n".format(question.tool, confirm.OUTCOME_SHOWN[outcome]))
        return outcome

    def _answers(self, text):
        """True when the line answered an open question instead of being a command."""
        if not self._questions:
            return False
        from mimi.safety import confirm

        answer = confirm.parse_answer(text)
        if answer is None:
            self._prompt("please answer y or n: ")
            return True
        self._questions[0].settle(confirm.APPROVED if answer else confirm.DENIED)
        return True

    async def _execute_lines(self, editor):
        # Commands run one at a time, apart from the line editor, so a running chat can still be asked a question.
        while True:
            text = await self._lines.get()
            self.editor.prompt = ""  # a prompt shown as the line was waiting: the command's output follows it
            try:
                await self.commands.execute(text)
            except Exception as exc:  # one broken command never takes the console down
                platform.console_write("error: {}: {}\n".format(exc.__class__.__name__, exc))
            except BaseException as exc:  # a reset: the editor raises it, once it no longer waits on stdin
                self._reset = exc
                editor.cancel()
                return
            self._prompt(PROMPT)

    # -- the line editor --
    def _prompt(self, text):
        """Show `text` where the next line is typed, the line typed so far (while a command ran) after it."""
        editor = self.editor
        editor.prompt = text
        if editor.echo and editor.chars:
            editor.draw()
        else:
            _show(text)

    async def run(self):
        self._reset = None
        platform.log_to(self.note)  # the firmware's lines (platform.log) never land inside a streaming reply
        self._executor = asyncio.create_task(self._execute_lines(asyncio.current_task()))
        try:
            await self._edit_lines()
        except asyncio.CancelledError:
            platform.log_to(print)  # this console ends (a reset): its lines go out plainly, it holds no app
            if self._reset is not None:
                raise self._reset
            raise

    async def _edit_lines(self):
        reader = await platform.console_reader()
        self._prompt(PROMPT)
        while True:
            byte = await reader.read(1)
            if not byte:
                platform.console_write("\n(console input closed; the firmware keeps running)\n")
                return
            try:
                text = self.editor.feed(byte[0])
            except MemoryError as exc:  # the typed line is lost, the console lives (health/memory_errors.py)
                memory_errors.short("console", exc)
                self.editor.feed(CANCEL)  # as Ctrl-C: the editor starts a fresh line
                platform.console_write("\n(out of memory: the line was dropped; type it again)\n")
                self._prompt(PROMPT)
                continue
            if text is None:
                continue
            if text == CANCEL:
                platform.console_write("^C\n")
                self._prompt(PROMPT)
            elif self.editor.lost:
                platform.console_write("error: that line was longer than {} bytes ({} more were lost), so it was "
                                       "not run; a longer message goes through the web chat or Telegram\n".format(
                                           self.editor.line_max, self.editor.lost))
                self._prompt(PROMPT)
            elif not self._answers(text):
                await self._lines.put(text)
