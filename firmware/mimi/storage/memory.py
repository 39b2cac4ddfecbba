# Long-term memory (MEMORY.md) and daily notes (memory/daily/YYYY-MM-DD.md), with caps and search.
from mimi.platform import const
from mimi.storage import files, space
from mimi.storage.layout import check_date

MEMORY_MAX_BYTES = const(16 * 1024)  # MEMORY.md goes into every prompt: keep it small
DAILY_MAX_BYTES = const(4 * 1024)  # one day's notes
SEARCH_HITS = const(10)
_SEARCH_LINE_MAX = const(2048)  # longer lines are skipped by search
_HIT_CHARS = const(300)  # a hit longer than this is shortened
_DAILY_SUFFIX = ".md"


class Memory:
    """MEMORY.md and the daily notes of a layout.Flash."""

    def __init__(self, flash):
        self.flash = flash

    def read(self, max_bytes=MEMORY_MAX_BYTES):
        """MEMORY.md as text ("" when missing), at most max_bytes."""
        return files.read_text(self.flash.memory_path, max_bytes) or ""

    def write(self, text):
        """Replace MEMORY.md atomically; ValueError when text is over MEMORY_MAX_BYTES."""
        data = text.encode()
        if len(data) > MEMORY_MAX_BYTES:
            raise ValueError(
                "memory text is {} bytes, over the {} byte limit: shorten it".format(
                    len(data), MEMORY_MAX_BYTES
                )
            )
        path = self.flash.memory_path
        space.guarded(lambda: files.write_atomic(path, data), "MEMORY.md", (path,))

    def append(self, line, date_str):
        """Add "- [YYYY-MM-DD] line" to MEMORY.md; returns the entry written."""
        entry = "- [{}] {}".format(check_date(date_str), _one_line(line))
        _append_capped(self.flash.memory_path, entry, MEMORY_MAX_BYTES, "MEMORY.md")
        return entry

    def append_daily(self, text, date_str):
        """Add text (one or more lines) to the day's note."""
        path = self.flash.daily_path(date_str)
        body = text.strip() if isinstance(text, str) else ""
        if not body:
            raise ValueError("a note must not be empty")
        _append_capped(path, body, DAILY_MAX_BYTES, "the note of " + date_str)

    def read_daily(self, date_str, max_bytes=DAILY_MAX_BYTES):
        """The day's note ("" when there is none), at most max_bytes."""
        return files.read_text(self.flash.daily_path(date_str), max_bytes) or ""

    def recent_daily(self, dates, max_bytes_each=DAILY_MAX_BYTES):
        """[(date, text)] for the given dates that have a non-empty note, in the given order."""
        out = []
        for date_str in dates:
            text = self.read_daily(date_str, max_bytes_each)
            if text.strip():
                out.append((date_str, text))
        return out

    def daily_dates(self):
        """Dates that have a note, newest first."""
        dates = []
        for name in files.listdir(self.flash.daily_dir):
            stem = name[: -len(_DAILY_SUFFIX)]
            if name.endswith(_DAILY_SUFFIX) and _is_date(stem):
                dates.append(stem)
        dates.sort(reverse=True)
        return dates

    def search(self, query, max_hits=SEARCH_HITS):
        """[(source, line)] of lines containing query (any case): MEMORY.md, then newest notes."""
        needle = query.strip().lower() if isinstance(query, str) else ""
        hits = []
        if not needle or max_hits <= 0:
            return hits
        sources = [("MEMORY.md", self.flash.memory_path)]
        for date_str in self.daily_dates():
            sources.append(("daily/" + date_str + _DAILY_SUFFIX, self.flash.daily_path(date_str)))
        for source, path in sources:
            for raw in files.iter_lines(path, _SEARCH_LINE_MAX):
                if raw is None:
                    continue
                line = files.decode(raw).strip()
                if needle in line.lower():
                    hits.append((source, _shorten(line)))
                    if len(hits) >= max_hits:
                        return hits
        return hits


def _one_line(text):
    flat = " ".join(text.split()) if isinstance(text, str) else ""
    if not flat:
        raise ValueError("nothing to remember: the text is empty")
    return flat


def _shorten(line):
    return line if len(line) <= _HIT_CHARS else line[: _HIT_CHARS - 3] + "..."


def _is_date(text):
    try:
        check_date(text)
        return True
    except ValueError:
        return False


def _append_capped(path, text, cap, what):
    """Append text + newline unless the file would grow over cap bytes (ValueError)."""
    if not files.ends_with_newline(path):
        text = "\n" + text  # a torn or hand-edited last line stays its own line
    current = files.size(path)
    grown = (current if current > 0 else 0) + len(text.encode()) + 1
    if grown > cap:
        raise ValueError(
            "{} is full ({} byte limit): rewrite it shorter before adding more".format(what, cap)
        )
    space.guarded(lambda: files.append_line(path, text), what, (path,))
