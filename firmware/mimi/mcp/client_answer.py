# An MCP server's answer read as it streams in: every JSON string cut to a bound first (an image's base64, a long
# text never stands whole in the heap), then the body whole (JSON) or a line at a time (an SSE stream).
from mimi import utf8
from mimi.platform import const
from mimi.tools.registry import RESULT_MAX

ANSWER_MAX = const(48 * 1024)  # bytes of one answer (a JSON body, an SSE event) once its long strings are cut
STRING_MAX = RESULT_MAX  # bytes of one JSON string kept: a tool result's text is cut there anyway
_PIECE = const(1024)
_CUT_MARK = b"\xe2\x80\xa6[cut]"  # ends a string cut short ("…[cut]")


class Down(Exception):
    """The server could not be reached, or broke off: the text says why, for the owner and the model."""


class Cut:
    """Cuts each JSON string in a stream of bytes to STRING_MAX bytes, so a large answer (an image's base64, a
    long text) never stands whole in the heap; a cut string ends in "…[cut]". Its state spans the pieces."""

    def __init__(self, keep=STRING_MAX):
        self.keep = keep
        self.inside = False  # in a string
        self.kept = 0  # bytes of the current string kept
        self.full = False  # the current string was cut: its bytes are left out up to its closing quote
        self.escape = 0  # in an escape: -1 wants its kind byte, n > 0 hex digits of a \u escape to come

    def feed(self, data):
        """The piece with every string's bytes past `keep` left out and the mark put in their place: the piece
        itself, not a copy, when nothing is cut (the usual case: no list of small pieces, no allocation)."""
        spans = [[0, None, False]] if self.inside and self.full else None  # [start, end, marked] to leave out
        i, n = 0, len(data)
        while i < n:
            if self.escape:
                self.escape = (4 if data[i] == 0x75 else 0) if self.escape < 0 else self.escape - 1  # 0x75: u
                i += 1
            elif not self.inside:
                quote = data.find(b'"', i)
                if quote < 0:
                    break
                self.inside, self.kept, self.full, i = True, 0, False, quote + 1
            else:
                end, quote, slash = n, data.find(b'"', i), data.find(b"\\", i)
                if 0 <= quote < end:
                    end = quote
                if 0 <= slash < end:
                    end = slash
                if not self.full:
                    room = self.keep - self.kept
                    if end - i > room:  # cut inside these plain bytes, never inside a character
                        spans = self._cut(spans, i + utf8.boundary(data[i : i + room]))
                    else:
                        self.kept += end - i
                if end < n and data[end] == 0x22:  # the closing quote: kept
                    if spans and spans[-1][1] is None:
                        spans[-1][1] = end
                    self.inside = False
                elif end < n:  # an escape: kept whole (6 bytes room, the longest) or left out whole
                    if not self.full and self.keep - self.kept < 6:
                        spans = self._cut(spans, end)
                    self.kept += 6
                    self.escape = -1
                i = end + 1
        if not spans:
            return data
        pieces, at = [], 0
        for start, stop, marked in spans:
            pieces.append(data[at:start])
            if marked:
                pieces.append(_CUT_MARK)
            at = n if stop is None else stop
        pieces.append(data[at:])
        return b"".join(pieces)

    def _cut(self, spans, at):
        self.full = True
        spans = spans or []
        spans.append([at, None, True])
        return spans


class Answer:
    """A response body read through Cut: whole (a JSON body) or a line at a time (an SSE stream)."""

    def __init__(self, response):
        self.response, self.cut, self.buf, self.size = response, Cut(), b"", 0

    async def _more(self):
        data = await self.response.read_some(_PIECE)
        if not data:
            return None
        data = self.cut.feed(data)
        self.size += len(data)
        return data

    async def whole(self):
        pieces = []
        while True:
            data = await self._more()
            if data is None:
                return b"".join(pieces)
            if data:  # a piece wholly inside a cut string leaves nothing to keep
                pieces.append(data)
            if self.size > ANSWER_MAX:
                raise Down("its answer is larger than {} KB".format(ANSWER_MAX // 1024))

    async def line(self):
        while True:
            at = self.buf.find(b"\n")
            if at >= 0:
                line, self.buf = self.buf[:at], self.buf[at + 1 :]
                return utf8.valid_text(line)
            if len(self.buf) > ANSWER_MAX:
                raise Down("one of its events is larger than {} KB".format(ANSWER_MAX // 1024))
            data = await self._more()
            if data is None:
                line, self.buf = self.buf, b""
                return utf8.valid_text(line) if line else None
            self.buf += data
