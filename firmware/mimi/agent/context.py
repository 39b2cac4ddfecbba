# Builds what Claude sees: a system prompt from flash, byte-identical while its files are unchanged; a turn that is
# not the owner's own gets one without the owner's profile, memory and notes.
from mimi import platform
from mimi.agent import prompt_file, skills
from mimi.platform import const

_SOUL_MAX = const(8192)
_USER_MAX = const(8192)
_MEMORY_PROMPT_MAX = const(16384)
_DAILY_DAYS = const(2)  # today and yesterday
_DAILY_PROMPT_MAX = const(4096)
_DAY_S = const(86400)
_DAILY = "Daily notes "

_INTRO = (
    "You are Mimi, a personal assistant running as firmware on an ESP32-S3 microcontroller. "
    "People reach you through Telegram, a web chat or the serial console; keep replies short "
    "enough to read on a phone. Each user turn starts with a [context] line giving the current "
    "time and channel. "
)
_OWNERS = (
    "Below are your personality (SOUL), what you know about your owner (USER), "
    "your long-term memory and recent daily notes, all kept on your flash. When a standing order can be "
    "a fixed reaction (a threshold, a pin edge, an owner's /command), make it a watcher with a rule: the "
    "board then carries it out itself, without you.\n"
)
# A turn that is not the owner's own (roles.of_conversation) is shown SOUL and the skills only: the owner's
# profile, memory and notes are the owner's, and what the model is shown it may repeat to whoever asks.
_GUESTS = (
    "Below is your personality (SOUL). You are not talking with your owner: your owner's profile, "
    "long-term memory and daily notes are private, not shown to you here, and never to be guessed at or "
    "shared.\n"
)
GUEST_NAME = ".prompt_guest.json"  # the prompt of turns that are not the owner's own, beside prompt_file.NAME


_SKILLS_INTRO = (
    "How-to notes on your flash. When one fits the request, read the whole file first "
    'with read_file("skills/<name>.md"):\n'
)


class Context:
    def __init__(self, flash, memory):
        self.flash = flash
        self.memory = memory
        from mimi.storage import files

        # The encoded prompt lives on flash (prompt_file), kept while no file it comes from can have
        # changed (files.changes() and the date are the same): (key, PromptFile), or (key, None) when it
        # could not be written (flash full: the blocks are built in RAM for each turn instead).
        self.prompt_path = files.join(flash.root, prompt_file.NAME)
        self.guest_path = files.join(flash.root, GUEST_NAME)
        self._kept = self._guest_kept = None  # the owner's prompt, and the one of turns that are not the owner's
        files.quiet(flash.sessions_dir)  # written every turn, never part of the prompt
        files.quiet(files.join(flash.root, "audit"))
        files.quiet(self.prompt_path, False)  # its own writes change nothing
        files.quiet(self.guest_path, False)

    def dates(self, now):
        now = platform.unix_time() if now is None else now
        return [platform.utc_date(now - day * _DAY_S) for day in range(_DAILY_DAYS)]

    def sections(self, now=None, guest=False, left_out=()):
        """The system prompt's parts in a fixed order, built in RAM; they depend only on the files and
        the date. guest: a turn that is not the owner's own (SOUL and the skills only); left_out: the titles a
        small model's window has no room for (llm/window.py)."""
        from mimi.storage import files

        parts = [_preamble(guest) + _section("SOUL", files.read_text(self.flash.soul_path, _SOUL_MAX))]
        if not guest:
            if "USER" not in left_out:
                parts.append(_section("USER", files.read_text(self.flash.user_path, _USER_MAX)))
            if "MEMORY" not in left_out:
                parts.append(_section("MEMORY", self.memory.read(_MEMORY_PROMPT_MAX)))
            for date, text in self.memory.recent_daily(self.dates(now), _DAILY_PROMPT_MAX):
                if _DAILY + date not in left_out:
                    parts.append(_section(_DAILY + date, text))
        listed = skills.summary(self.flash) if "Skills" not in left_out else None
        if listed:
            parts.append(_section("Skills", _SKILLS_INTRO + listed))
        return [part for part in parts if part]

    def system_blocks(self, now=None, guest=False):
        """The system prompt for the request: the file the blocks' JSON was written to (sent from flash,
        nothing of it kept in RAM), or, when it cannot be written, the blocks themselves; the same bytes.
        guest: the prompt of a turn that is not the owner's own, kept in a file of its own."""
        from mimi.storage import files

        dates = self.dates(now)
        key = (files.changes(), dates[0])
        kept = self._guest_kept if guest else self._kept
        self._keep(guest, None)
        if kept is not None and kept[0] == key:
            if kept[1] is None:  # could not be written for these files: not tried again every turn
                self._keep(guest, kept)
                return blocks(self.sections(now, guest))
            if kept[1].intact():
                self._keep(guest, kept)
                return kept[1]
        del kept
        made = None
        try:
            made = prompt_file.write(self.guest_path if guest else self.prompt_path, blocks, _preamble(guest),
                                     self._sources(dates, guest))
        except OSError as exc:  # a full flash must not cost the turn
            platform.log("context: system prompt not saved to flash ({}); built in RAM".format(exc))
        self._keep(guest, (key, made))
        return made if made is not None else blocks(self.sections(now, guest))

    def _keep(self, guest, kept):
        if guest:
            self._guest_kept = kept
        else:
            self._kept = kept

    def _sources(self, dates, guest=False):
        """(title, str slices) per section for prompt_file, read as sections() reads them."""
        file_slices = prompt_file.file_slices
        flash = self.flash
        yield "SOUL", file_slices(flash.soul_path, _SOUL_MAX)
        if not guest:
            yield "USER", file_slices(flash.user_path, _USER_MAX)
            yield "MEMORY", file_slices(flash.memory_path, _MEMORY_PROMPT_MAX)
            for date in dates:
                yield _DAILY + date, file_slices(flash.daily_path(date), _DAILY_PROMPT_MAX)
        yield "Skills", _skills_slices(flash)

    def user_turn(self, text, channel, now=None):
        """The newest user message: the time lives here, never in the system prompt."""
        stamp = "[context] {} via {}".format(platform.utc_stamp(now), channel)
        return {"role": "user", "content": [{"type": "text", "text": stamp}, {"type": "text", "text": text}]}


def _preamble(guest):
    return _INTRO + (_GUESTS if guest else _OWNERS)


def _section(title, text):
    return "".join(prompt_file.section(title, (text,) if text else ()))


def blocks(parts):
    """The API blocks, one per section of sections() (also a small window's, llm/window.py): no large joined string
    on a small heap; the last carries cache_control, which caches the whole prefix."""
    made = [{"type": "text", "text": part} for part in parts]
    made[-1]["cache_control"] = {"type": "ephemeral"}
    return made


def _skills_slices(flash):
    listed = skills.summary(flash)
    if listed:
        yield _SKILLS_INTRO
        yield listed
