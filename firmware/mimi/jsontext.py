# JSON in and out: the one decoding seam for JSON from outside (proper text out, whatever the runtime sends in),
# and Streamed: a part of a request's body read while it is written (llm/body.py writes the rest of the JSON).
#
# Telegram (and any JSON encoder that escapes non-ASCII) sends a character outside the Basic
# Multilingual Plane as an escaped surrogate pair: "🍕" is "\ud83c\udf55". MicroPython's json
# turns each half into its own 3-byte sequence, which is not UTF-8, and that text then poisons
# every request, message and file it reaches. loads() joins the pairs first, turns a lone
# surrogate into U+FFFD and replaces bytes that are not UTF-8, the same on both runtimes.
import json

from mimi.platform import const
from mimi.utf8 import has_raw_surrogate, valid_text

_ESCAPE_LEN = const(6)  # \uXXXX
ESCAPE_SLICE = const(512)  # characters of a long text escaped (and encoded) at a time
_HIGH_FIRST = const(0xD800)
_LOW_FIRST = const(0xDC00)
_LOW_LAST = const(0xDFFF)


def escaped(text):
    """json.dumps(text)[1:-1] as UTF-8 bytes, ESCAPE_SLICE characters at a time: the inside of a JSON
    string as this runtime writes it, a long text never escaped (or encoded) whole."""
    for i in range(0, len(text), ESCAPE_SLICE):
        yield json.dumps(text[i : i + ESCAPE_SLICE])[1:-1].encode()


def loads(data):
    """json.loads for outside data (str, bytes or bytearray), giving only valid text.

    Input without a \\uD8.. to \\uDF.. escape is parsed as it is: no copy is made.
    """
    if _has_surrogate_escape(data):
        data = _join_surrogates(data)
    if not isinstance(data, str) and has_raw_surrogate(data):
        data = valid_text(data)  # both runtimes' json would keep a raw 3-byte surrogate half
    try:
        return json.loads(data)
    except UnicodeError:  # bytes that are not UTF-8 inside a string (MicroPython and CPython)
        if isinstance(data, str):
            raise
    return json.loads(valid_text(data))


def _has_surrogate_escape(data):
    """True when data may hold a \\ud800..\\udfff escape (a cheap search, no copy)."""
    if isinstance(data, str):
        marks, nibbles = ("\\ud", "\\uD"), "89abcdefABCDEF"
    else:
        marks, nibbles = (b"\\ud", b"\\uD"), b"89abcdefABCDEF"
    for mark in marks:
        at = data.find(mark)
        while at >= 0:
            nibble = data[at + 3 : at + 4]
            if nibble and nibble in nibbles:
                return True
            at = data.find(mark, at + 3)
    return False


def _hex4(data, at):
    """The value of the 4 hex digits at data[at:], or -1."""
    digits = bytes(data[at : at + 4])
    if len(digits) != 4:
        return -1
    try:
        return int(digits, 16)
    except ValueError:
        return -1


def _join_surrogates(data):
    """JSON bytes with each escaped surrogate pair written as the UTF-8 character it encodes and each
    lone surrogate escape as \\ufffd. Works on bytes: slicing a str is slow on MicroPython."""
    if isinstance(data, str):
        data = data.encode()
    out = bytearray()
    start = at = 0
    while True:
        at = data.find(b"\\", at)
        if at < 0:
            break
        if data[at + 1 : at + 2] != b"u":
            at += 2  # any other escape, \\ included: skip both characters
            continue
        code = _hex4(data, at + 2)
        if code < _HIGH_FIRST or code > _LOW_LAST:
            at += 2
            continue
        out += data[start:at]
        low = -1
        if code < _LOW_FIRST and data[at + 6 : at + 8] == b"\\u":
            low = _hex4(data, at + 8)
        if _LOW_FIRST <= low <= _LOW_LAST:
            out += chr(0x10000 + ((code - _HIGH_FIRST) << 10) + (low - _LOW_FIRST)).encode()
            at += 2 * _ESCAPE_LEN
        else:
            out += b"\\ufffd"
            at += _ESCAPE_LEN
        start = at
    out += data[start:]
    return out


class Streamed:
    """A part of a request's body written a piece at a time, its length known first (the Content-Length): len(),
    then chunks() (bytes), read again at each walk (from flash, from the pieces) and never held whole. is_json: the
    chunks are JSON already (a tool's encoded definition, the system prompt's file, a session's messages); else
    they are the inside of one JSON string, which llm/body.py quotes. A kind gives chunks(), and __len__ where it
    knows the length without a walk."""

    is_json = False
    _len = None

    def __len__(self):
        if self._len is None:
            self._len = sum(len(chunk) for chunk in self.chunks())
        return self._len

    def chunks(self):
        raise NotImplementedError

