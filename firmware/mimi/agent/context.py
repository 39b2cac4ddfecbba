# Builds what Claude sees: a system prompt from flash, byte-identical while its files are unchanged.
from mimi import platform
from mimi.agent import skills
from mimi.platform import const

SOUL_MAX = const(8192)
USER_MAX = const(8192)
MEMORY_PROMPT_MAX = const(16384)
DAILY_DAYS = const(2)  # today and yesterday
DAILY_PROMPT_MAX = const(4096)
_DAY_S = const(86400)

_PREAMBLE = (
    "You are Mimi, a personal assistant running as firmware on an ESP32-S3 microcontroller. "
    "People reach you through Telegram, a web chat or the serial console; keep replies short "
    "enough to read on a phone. Each user turn starts with a [context] line giving the current "
    "time and channel. Below are your personality (SOUL), what you know about your owner (USER), "
    "your long-term memory and recent daily notes, all kept on your flash.\n"
)


_SKILLS_INTRO = (
    "How-to notes on your flash. When one fits the request, read the whole file first "
    'with read_file("skills/<name>.md"):\n'
)


class Context:
    def __init__(self, flash, memory):
        self.flash = flash
        self.memory = memory
        # The sections as last built, kept while no file they come from can have changed (files.changes()
        # and the dates are the same): no 13 KB of strings rebuilt, and no 4 KB holes sought, every turn.
        self._built = None
        from mimi.storage import files

        files.quiet(flash.sessions_dir)  # written every turn, never part of the prompt
        files.quiet(files.join(flash.root, "audit"))

    def _section(self, title, text):
        text = (text or "").strip()
        return "\n# {}\n\n{}\n".format(title, text) if text else ""

    def sections(self, now=None):
        """The system prompt's parts in a fixed order; they depend only on the files and the date."""
        from mimi.storage import files

        now = platform.unix_time() if now is None else now
        dates = [platform.utc_date(now - day * _DAY_S) for day in range(DAILY_DAYS)]
        key = (files.changes(), dates[0])
        if self._built is not None and self._built[0] == key:
            return self._built[1]
        self._built = None  # the old strings go before the new ones are read
        parts = [
            _PREAMBLE + self._section("SOUL", files.read_text(self.flash.soul_path, SOUL_MAX)),
            self._section("USER", files.read_text(self.flash.user_path, USER_MAX)),
            self._section("MEMORY", self.memory.read(MEMORY_PROMPT_MAX)),
        ]
        for date, text in self.memory.recent_daily(dates, DAILY_PROMPT_MAX):
            parts.append(self._section("Daily notes " + date, text))
        listed = skills.summary(self.flash)
        if listed:
            parts.append(self._section("Skills", _SKILLS_INTRO + listed))
        parts = [part for part in parts if part]
        self._built = (key, parts)
        return parts

    def system_text(self, now=None):
        """The system prompt as one string (for inspection; requests send the blocks)."""
        return "".join(self.sections(now))

    def system_blocks(self, now=None):
        """The system prompt as API blocks, one per section (no large joined string on a small
        heap); the last carries cache_control, which caches the whole prefix."""
        blocks = [{"type": "text", "text": part} for part in self.sections(now)]
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
        return blocks

    def user_turn(self, text, channel, now=None):
        """The newest user message: the time lives here, never in the system prompt."""
        stamp = "[context] {} via {}".format(platform.utc_stamp(now), channel)
        return {"role": "user", "content": [{"type": "text", "text": stamp}, {"type": "text", "text": text}]}
