# The system prompt's request JSON kept on flash: built streaming when its files change, sent from the file.
import json

from mimi import utf8
from mimi.jsontext import Streamed, escaped
from mimi.platform import const
from mimi.storage import files

NAME = ".prompt.json"  # in the data root: no folder of its own on flash; no file tool sees it (tools/sandbox.py)
_READ_SLICE = const(512)  # bytes of a source file read, decoded and escaped at a time; also sent at a time
_MARK = "@"  # stands for a block's text in the template the framing is cut from


class PromptFile(Streamed):
    """The encoded system blocks on flash, as the request writes them (is_json: its chunks as they are)."""

    is_json = True

    def __init__(self, path, size, spans=()):
        self.path = path
        self.size = size
        self.spans = spans  # (start, end) in the file of each block's escaped text: one string for other wires

    def __len__(self):
        return self.size

    def intact(self):
        """False when the file went missing or changed size (power cut, removed): rebuild it."""
        return self.size > 0 and files.size(self.path) == self.size

    def chunks(self):
        with open(self.path, "rb") as f:
            while True:
                data = f.read(_READ_SLICE)
                if not data:
                    return
                yield data


def write(path, make_blocks, preamble, sections):
    """Write the JSON the request writer (llm/claude.py) gives for make_blocks(texts), streaming; the PromptFile.

    sections: (title, pieces) in prompt order, pieces an iterable of str slices; the first joins the
    preamble's block, each other that is not empty opens its own. None when this runtime's JSON of
    the blocks cannot be cut into a fixed framing (then the caller builds the blocks in RAM)."""
    framing = _framing(make_blocks)
    if framing is None:
        return None
    spans = []
    files.write_atomic(path, _encoded(framing, preamble, sections, spans))
    return PromptFile(path, files.size(path), spans)


def _framing(make_blocks):
    """(opening, between blocks, closing) bytes around the blocks' JSON strings, as json.dumps
    orders this runtime's dicts; None unless one and three blocks agree on them."""
    mark = json.dumps(_MARK)
    three = json.dumps(make_blocks([_MARK, _MARK, _MARK])).split(mark)
    one = json.dumps(make_blocks([_MARK])).split(mark)
    if len(three) != 4 or three[1] != three[2] or one != [three[0], three[3]]:
        return None
    return three[0].encode() + b'"', b'"' + three[1].encode() + b'"', b'"' + three[3].encode()


def _encoded(framing, preamble, sections, spans):
    """The file's bytes; spans gets (start, end) of each block's escaped text as it is written."""
    opening, between, closing = framing
    yield opening
    at = start = len(opening)
    for piece in escaped(preamble):
        at += len(piece)
        yield piece
    for i, (title, pieces) in enumerate(sections):
        opens = i > 0  # a section that is not empty opens its own block
        for text in section(title, pieces):
            if opens:
                opens = False
                spans.append((start, at))
                yield between
                at = start = at + len(between)
            for piece in escaped(text):
                at += len(piece)
                yield piece
    spans.append((start, at))
    yield closing


def section(title, pieces):
    """A system prompt section as str pieces: "\\n# title\\n\\ntext\\n", the text stripped, nothing when it is
    empty; pieces (str slices) are stripped one at a time: trailing blanks wait for the text that follows."""
    started = False
    blanks = ""
    for text in pieces:
        if not started:
            text = text.lstrip()
            if not text:
                continue
            started = True
            yield "\n# {}\n\n".format(title)
        body = text.rstrip()
        if body:
            if blanks:
                yield blanks
            yield body
            blanks = text[len(body):]
        else:
            blanks += text
    if started:
        yield "\n"


def file_slices(path, max_bytes):
    """What files.read_text(path, max_bytes) gives, as str slices cut at character boundaries."""
    try:
        f = open(path, "rb")
    except OSError:
        return
    with f:
        want = min(max_bytes, files.size(path))
        got = 0
        carry = b""
        while got < want:
            data = f.read(min(_READ_SLICE, want - got))
            if not data:
                break
            got += len(data)
            data = carry + data
            cut = utf8.boundary(data)
            carry = data[cut:]
            if cut:
                yield files.decode(data[:cut])
        if carry and got != max_bytes:  # read_text cuts only a read that hit max_bytes
            yield files.decode(carry)
