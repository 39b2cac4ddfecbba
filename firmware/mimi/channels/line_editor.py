# The console's line editor: typing, cursor keys, Home/End, history, secrets echoed as stars, the prompt and
# the line drawn again below a line of the firmware's and after Ctrl-L.
# Fed one byte at a time; draws with ANSI cursor moves only when the console does not echo itself.
from mimi import utf8
from mimi.platform import const

_LINE_MAX = const(1024)  # bytes in one line; keys past it are ignored
_HISTORY_MAX = const(12)  # lines kept for Up/Down (secret-setting lines never are)
CANCEL = 3  # feed() result for Ctrl-C: the line was thrown away
_CLEAR_SCREEN = const(12)  # Ctrl-L
_ESC = const(27)
_BACKSPACES = (8, 127)
_LEFT = "\x1b[D"
_RIGHT = "\x1b[C"
_CLEAR_RIGHT = "\x1b[K"
_HOME_CLEAR = "\x1b[H\x1b[2J"  # the cursor to the top left, the screen cleared
# Control keys: Ctrl-A home, Ctrl-B left, Ctrl-D delete, Ctrl-E end, Ctrl-F right, Ctrl-K cut to
# the end, Ctrl-N down, Ctrl-P up, Ctrl-U cut the line, Ctrl-W cut a word.
_CONTROLS = {1: "home", 2: "left", 4: "delete", 5: "end", 6: "right", 11: "cut_end", 14: "down",
             16: "up", 21: "cut_line", 23: "cut_word"}
_CSI_KEYS = {"A": "up", "B": "down", "C": "right", "D": "left", "H": "home", "F": "end",
             "1~": "home", "7~": "home", "4~": "end", "8~": "end", "3~": "delete"}


def _utf8_length(lead):
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    return 2 if lead >= 0xC0 else 1


class LineEditor:
    """feed(byte) -> None (still typing), the finished line (str), or CANCEL."""

    def __init__(self, write, echo, secret_words=(), history_max=_HISTORY_MAX, line_max=_LINE_MAX,
                 names=None, prompt=""):
        self.write = write  # text to the terminal; used only when echo is on
        self.echo = echo
        # commands whose arguments are shown as stars, or a function of the line: where its secret starts, or -1
        # (it starts at a word's first character and depends on nothing after it)
        self.secret_words = secret_words
        self._secret_at = None  # what secret_words said of the line, None: asked again at the next look
        self.names = names  # callable -> command names, for Tab (None: Tab is typed as it is)
        self.prompt = prompt  # what the console shows before the line ("" while none): drawn again with it
        self.history = []
        self.history_max = history_max
        self.line_max = line_max
        self.chars = []  # the line, one str per character
        self.cursor = 0
        self._bytes = 0  # UTF-8 length of the line
        self._pending = bytearray()  # the start of a multi-byte character
        self._escape = None  # None, or the bytes of an escape sequence so far
        self._browse = None  # index into history while Up/Down is used
        self._draft = None  # the line being typed before Up was pressed
        self._last_cr = False
        self._over = 0  # bytes typed past line_max on this line (not kept)
        self.lost = 0  # of the line just finished: bytes past line_max, so the console does not run it cut

    # -- input --
    def feed(self, code):
        if self._escape is not None:
            return self._escape_byte(code)
        if code in (10, 13):
            if code == 10 and self._last_cr:
                self._last_cr = False
                return None  # the LF of a CR LF pair
            self._last_cr = code == 13
            return self._finish()
        self._last_cr = False
        if code == _ESC:
            self._escape = bytearray()
        elif code in _BACKSPACES:
            self._backspace()
        elif code == CANCEL:
            self._reset()
            return CANCEL
        elif code == _CLEAR_SCREEN:
            self._out(_HOME_CLEAR)
            self.draw()
        elif code in _CONTROLS:
            self.key(_CONTROLS[code])
        elif code == 9 and self.echo and self.names is not None:
            self._complete()
        elif code >= 32 or code == 9:
            self._typed(code)
        return None

    def _escape_byte(self, code):
        seq = self._escape
        seq.append(code)
        if len(seq) == 1:
            if code not in (0x5B, 0x4F):  # ESC [ or ESC O start a key; anything else ends it
                self._escape = None
            return None
        if 0x40 <= code <= 0x7E or len(seq) > 8:  # the final byte (or a sequence we do not know)
            self._escape = None
            name = _CSI_KEYS.get(bytes(seq[1:]).decode("utf-8", "ignore"))
            if name:
                self.key(name)
        return None

    def _typed(self, code):
        if self._pending or code >= 0x80:
            self._pending.append(code)
            if len(self._pending) < _utf8_length(self._pending[0]):
                return
            text = utf8.valid_text(bytes(self._pending))  # a stray byte shows as U+FFFD
            self._pending = bytearray()
        else:
            text = chr(code)
        size = len(text.encode())
        if self._bytes + size > self.line_max:  # over the cap: not kept; counted, so the line is not run cut
            if not self._over and self.echo:
                self.write("\a")
            self._over += size
            return
        self._bytes += size
        at_end = self.cursor == len(self.chars)
        if not at_end or text == " " or not self.chars or self.chars[-1] == " ":
            self._secret_at = None  # a word begins or the line changes inside: where a secret starts may move
        self.chars.insert(self.cursor, text)
        self.cursor += 1
        if at_end:  # appending never changes how the rest looks
            self._out(self._shown(self.cursor - 1, self.cursor))
        else:
            self._redraw(self.cursor - 1)

    def _complete(self):
        """Tab in the first word: the rest of a command name; several fit: their common start,
        or (when that adds nothing) the list of them under the line."""
        head = "".join(self.chars[:self.cursor])
        if " " in head:
            return
        matches = sorted(name for name in self.names() if name.startswith(head))
        if not matches:
            return
        common = matches[0]
        for name in matches[1:]:
            while not name.startswith(common):
                common = common[:-1]
        extra = common[len(head):] + (" " if len(matches) == 1 else "")
        if extra:
            for char in extra:
                self._typed(ord(char))
            return
        self.write("\r\n" + "  ".join(matches) + "\r\n" + self.prompt)
        self._redraw(0)

    def _finish(self):
        line = "".join(self.chars)
        self.lost = self._over
        self.prompt = ""  # the console shows the next one
        if self.echo:
            self.write("\r\n")
        if line.strip() and not self._is_secret():
            if not self.history or self.history[-1] != line:
                self.history.append(line)
                if len(self.history) > self.history_max:
                    self.history.pop(0)
        self._reset()
        return line

    def _reset(self):
        self.chars, self.cursor, self._bytes, self._over = [], 0, 0, 0
        self._secret_at = None
        self._pending = bytearray()
        self._browse = self._draft = None

    # -- keys --
    def key(self, name):
        old = self.cursor
        if name == "left" and self.cursor > 0:
            self.cursor -= 1
            self._out(_LEFT)
        elif name == "right" and self.cursor < len(self.chars):
            self.cursor += 1
            self._out(_RIGHT)
        elif name == "home":
            self.cursor = 0
            self._move(old, 0)
        elif name == "end":
            self.cursor = len(self.chars)
            self._move(old, self.cursor)
        elif name == "delete" and self.cursor < len(self.chars):
            self._cut(self.cursor, self.cursor + 1)
        elif name == "cut_end":
            self._cut(self.cursor, len(self.chars))
        elif name == "cut_line":
            self._cut(0, len(self.chars))
        elif name == "cut_word":
            start = self.cursor
            while start > 0 and self.chars[start - 1] == " ":
                start -= 1
            while start > 0 and self.chars[start - 1] != " ":
                start -= 1
            self._cut(start, self.cursor)
        elif name in ("up", "down"):
            self._recall(-1 if name == "up" else 1)

    def _backspace(self):
        if self.cursor == 0:
            return
        if self.cursor == len(self.chars):
            self._bytes -= len(self.chars.pop().encode())
            self._secret_at = None
            self.cursor -= 1
            self._out("\b \b")
            return
        self._cut(self.cursor - 1, self.cursor)

    def _cut(self, start, end):
        if start >= end:
            return
        old = self.cursor
        self._bytes -= len("".join(self.chars[start:end]).encode())
        del self.chars[start:end]
        self._secret_at = None
        self.cursor = start
        self._redraw(old)

    def _recall(self, step):
        if not self.history:
            return
        if self._browse is None:
            if step > 0:
                return
            self._draft = "".join(self.chars)
            self._browse = len(self.history)
        self._browse = max(0, min(len(self.history), self._browse + step))
        text = self.history[self._browse] if self._browse < len(self.history) else self._draft
        old = self.cursor
        self.chars = list(text)
        self._secret_at = None
        self._bytes = len(text.encode())
        self.cursor = len(self.chars)
        self._redraw(old)

    # -- drawing --
    def above(self, line):
        """`line` on a row of its own where the prompt is, the prompt and the line typed so far drawn again
        below it (only when drawing: a terminal that echoes keeps its own copy of the line)."""
        self.write("\r" + _CLEAR_RIGHT + line + "\n")
        self.draw()

    def draw(self):
        """The prompt and the line typed so far (a secret as stars) on the cursor's row, the cursor in place."""
        if not self.echo:
            return
        self.write("\r" + self.prompt + self._shown(0, len(self.chars)) + _CLEAR_RIGHT)
        self._move(len(self.chars), self.cursor)

    def _out(self, text):
        if self.echo and text:
            self.write(text)

    def _move(self, old, new):
        if new < old:
            self._out(_LEFT * (old - new) if old - new < 4 else "\x1b[{}D".format(old - new))
        elif new > old:
            self._out(self._shown(old, new))

    def _redraw(self, old):
        """Draw the line again from the start, then put the cursor back where it belongs."""
        if not self.echo:
            return
        self._move(old, 0)
        self.write(self._shown(0, len(self.chars)) + _CLEAR_RIGHT)
        self._move(len(self.chars), self.cursor)

    def _secret_from(self):
        """Index of the line's first character shown as a star, or -1: the line holds no secret. Asked once
        a word: a pasted kilobyte is not a kilobyte joined per character."""
        if self._secret_at is None:
            line = "".join(self.chars)
            if callable(self.secret_words):
                self._secret_at = self.secret_words(line)
            else:
                head = line.split(" ", 1)
                self._secret_at = line.index(" ") + 1 if len(head) > 1 and head[0] in self.secret_words else -1
        return self._secret_at

    def _is_secret(self):
        return self._secret_from() >= 0

    def _shown(self, start, end):
        """How chars[start:end] look: a secret as stars (spaces kept)."""
        first = self._secret_from()
        if first < 0:
            return "".join(self.chars[start:end])
        return "".join(c if i < first or c == " " else "*"
                       for i, c in enumerate(self.chars[start:end], start))
