# Chat histories as JSONL files, one per channel and chat, read from the tail and kept bounded.
from mimi import platform
from mimi.bus.message import SYSTEM
from mimi.platform import const
from mimi.storage import files, session_lines, space
from mimi.storage.session_lines import SUFFIX

_SESSION_MAX_BYTES = const(32 * 1024)  # a session file over this is trimmed to about half
HISTORY_LIMIT = const(20)  # messages handed to the model by default
CONSOLIDATE_AT = HISTORY_LIMIT  # more messages than the model is shown: agent/consolidate.py summarises the oldest
CHAT_ID_MAX = const(64)  # characters in a chat id
JOURNAL_SUFFIX = ".summary"  # <stem>.summary: a consolidation's summary, kept until it is applied
_BLOCK = const(512)  # bytes read (counted, copied) per step
_COUNT_MAX_BYTES = const(256 * 1024)  # list() counts lines only in files up to this size


def _safe_byte(b):
    return (
        0x30 <= b <= 0x39 or 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A or b == 0x5F or b == 0x2D
    )


def encode_id(chat_id):
    """Chat id to a file-name-safe string: [A-Za-z0-9_-] kept, every other byte as %XX."""
    out = []
    for b in str(chat_id).encode():
        out.append(chr(b) if _safe_byte(b) else "%{:02X}".format(b))
    return "".join(out)


def decode_id(text):
    """encode_id's inverse: the chat id a session file name holds."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] == "%" and i + 3 <= len(text):
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(text[i]))
            i += 1
    return files.decode(bytes(out))


def check_channel(channel):
    ok = isinstance(channel, str) and len(channel) > 0
    for c in channel if ok else "":
        if not ("a" <= c <= "z" or "0" <= c <= "9"):
            ok = False
            break
    if not ok:
        raise ValueError(
            "channel name must be lowercase letters and digits, got {!r}".format(channel)
        )
    return channel


def check_chat_id(chat_id):
    chat_id = str(chat_id)
    if not chat_id:
        raise ValueError("chat id must not be empty")
    if len(chat_id) > CHAT_ID_MAX:
        raise ValueError("chat id is longer than {} characters".format(CHAT_ID_MAX))
    return chat_id


class Sessions:
    """Append-only chat histories under sessions_dir, one JSONL file per chat."""

    def __init__(self, sessions_dir, max_bytes=_SESSION_MAX_BYTES):
        self.dir = sessions_dir
        self.max_bytes = max_bytes
        # a new line always fits in the half kept by a trim
        self.line_cap = min(session_lines.LINE_MAX, max_bytes // 2 - 1)

    def file_name(self, channel, chat_id):
        return "{}_{}{}".format(check_channel(channel), encode_id(check_chat_id(chat_id)), SUFFIX)

    def path(self, channel, chat_id):
        return files.join(self.dir, self.file_name(channel, chat_id))

    def stem(self, channel, chat_id):
        return self.file_name(channel, chat_id)[: -len(SUFFIX)]

    def journal_path(self, stem):
        return files.join(self.dir, stem + JOURNAL_SUFFIX)

    def may_consolidate(self, channel, chat_id):
        """Whether agent/consolidate.py may have work for a chat, told after every turn without importing it:
        a journal waits, or the file has more lines than CONSOLIDATE_AT (its due() then counts messages).
        Cron and heartbeat turns (channel "system") are never consolidated."""
        if channel == SYSTEM:
            return False
        stem = self.stem(channel, chat_id)
        if files.exists(self.journal_path(stem)):
            return True
        path = files.join(self.dir, stem + SUFFIX)
        return files.size(path) > 0 and _count_lines(path) > CONSOLIDATE_AT

    def exists(self, channel, chat_id):
        return files.exists(self.path(channel, chat_id))

    def append(self, channel, chat_id, role, content, ts=None):
        """Add one message (content: a str, or a Text of str pieces); trims the file when it grows over max_bytes."""
        if role not in session_lines.ROLES:
            raise ValueError("role must be 'user' or 'assistant', got {!r}".format(role))
        if not isinstance(content, str):
            content = getattr(content, "pieces", None)  # a reply's pieces (llm/text.py Text): never joined
            if not isinstance(content, list):
                raise ValueError("message content must be text")
        path = self.path(channel, chat_id)
        line = session_lines.line_for(role, content, platform.unix_time() if ts is None else ts, self.line_cap)
        if files.size(path) < 0:
            files.makedirs(self.dir)  # first message of this chat: make sure the folder is there
        elif not files.ends_with_newline(path):
            line.insert(0, "\n")  # never glue a message to a line torn by a power cut
        what = "the conversation " + self.file_name(channel, chat_id)[: -len(SUFFIX)]
        space.guarded(lambda: files.append_line(path, line), what, (path,))
        total = files.size(path)
        if total > self.max_bytes:  # the trim is guarded apart: a retried append would add the line twice
            space.guarded(lambda: trim(path, files.size(path), self.max_bytes), what, (path,))

    def newest(self, channel, chat_id):
        """Yield the chat's valid messages newest first, read from the file's end a block at a time."""
        path = self.path(channel, chat_id)
        end = files.size(path)
        if end <= 0:
            return
        with open(path, "rb") as f:
            for _, line in session_lines.lines_backward(f, end):
                message = session_lines.parse_message(line)
                if message is not None:
                    yield message

    def history(self, channel, chat_id, limit=HISTORY_LIMIT):
        """The last `limit` valid messages, oldest first, starting with a user message."""
        path = self.path(channel, chat_id)
        newest_first = []
        end = files.size(path)
        if end <= 0 or limit <= 0:
            return newest_first
        with open(path, "rb") as f:
            for _, line in session_lines.lines_backward(f, end):
                message = session_lines.parse_message(line)
                if message is not None:
                    newest_first.append(message)
                    if len(newest_first) >= limit:
                        break
        while newest_first and newest_first[-1]["role"] != "user":
            newest_first.pop()  # the model expects the conversation to open with the user
        newest_first.reverse()
        return newest_first

    def history_pieces(self, channel, chat_id, limit=HISTORY_LIMIT):
        """history() without its blank messages, as JSON read from the file while a request is written
        (storage/history_pieces.py); None when there is none."""
        from mimi.storage.history_pieces import HistoryPieces

        pieces = HistoryPieces(self.path(channel, chat_id), limit)
        return pieces if pieces.records else None

    def clear(self, name_or_chat_id):
        """Remove a session by file stem ("telegram_42"), or every channel's file of a chat id.

        Returns the number of files removed.
        """
        target = str(name_or_chat_id)
        if not target:
            return 0
        stems = [n[: -len(SUFFIX)] for n in files.listdir(self.dir) if n.endswith(SUFFIX)]
        chosen = [s for s in stems if s == target]
        if not chosen:
            encoded = encode_id(target)
            chosen = [s for s in stems if "_" in s and s.split("_", 1)[1] == encoded]
        for stem in chosen:
            path = files.join(self.dir, stem + SUFFIX)
            files.remove(path)
            files.remove_stale_tmp(path)
        return len(chosen)

    def list(self):
        """[(stem, size_bytes, line_count or None)] sorted by stem; no count for huge files."""
        out = []
        for name in files.listdir(self.dir):
            if not name.endswith(SUFFIX):
                continue
            path = files.join(self.dir, name)
            size = files.size(path)
            lines = _count_lines(path) if size <= _COUNT_MAX_BYTES else None
            out.append((name[: -len(SUFFIX)], size, lines))
        return out


def _count_lines(path):
    count = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_BLOCK)
            if not chunk:
                break
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count if last == b"\n" else count + 1


def _copy(f, buf, start, end):
    """Yield the bytes [start, end) of an open file, then a newline, through buf (nothing when start < 0)."""
    if start < 0:
        return
    view = memoryview(buf)
    while start < end:
        f.seek(start)
        n = f.readinto(view[: min(len(buf), end - start)])
        if not n:
            raise RuntimeError("the conversation changed while it was rewritten")
        start += n
        yield view[:n]
    yield b"\n"


def valid_lines(path, start):
    """The bytes of a session file's valid lines from the offset start on, each ending in a newline (the trim
    and consolidation write them): found by offset, checked and copied _BLOCK bytes at a time
    (session_lines.record_at: a line in line_for's form is never read whole; a small heap has no 4 KB hole).
    Each run of adjacent valid lines is copied as it stands."""
    with open(path, "rb") as f:
        buf = bytearray(_BLOCK)
        run, end = -1, -2  # the valid lines not copied yet: [run, end), their last newline left out
        for at, length in session_lines.spans_forward(f, start):
            if session_lines.record_at(f, at, length) is None:
                continue
            if at != end + 1:
                yield from _copy(f, buf, run, end)
                run = at
            end = at + length
        yield from _copy(f, buf, run, end)


def _keep_from(path, total, max_bytes):
    """Offset of the first line starting at or after total - max_bytes // 2."""
    pos = total - max_bytes // 2
    if pos <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(pos - 1)
        while True:
            chunk = f.read(_BLOCK)
            if not chunk:
                break
            cut = chunk.find(b"\n")
            if cut >= 0:
                return pos + cut
            pos += len(chunk)
    return total


def trim(path, total, max_bytes):
    """Rewrite a session file over its cap atomically with its newest valid lines (about max_bytes / 2)."""
    files.write_atomic(path, valid_lines(path, _keep_from(path, total, max_bytes)))
