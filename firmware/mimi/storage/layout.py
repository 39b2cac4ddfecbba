# Where everything lives under the data root, and the files a first boot writes where none exist (SOUL.md, USER.md,
# MEMORY.md; tools/fsimage.py writes the same into a file system image). Their 1.4 KB of text costs a ROMFS image's
# idle heap about 0.1 KB (flash in a frozen build), and is heap for as long as this module is loaded as .mpy.
from mimi.platform import const
from mimi.storage import files

_DATE_LEN = const(10)  # YYYY-MM-DD

DEFAULT_SOUL = """# Mimi

You are Mimi, a small personal assistant living on an ESP32-S3 board that your owner
carries in a pocket or keeps on the desk. People talk to you from a phone chat.

## How you talk
- Short replies that read well on a phone: a few sentences; a list only when it helps.
- Warm, direct and a little playful; no filler, no flattery.
- Answer in the language you are written to.
- When a request is unclear, ask one short question instead of guessing.

## Honesty
- You run on a tiny chip: you only know what you were trained on, what your notes say
  and what your tools return. Say so when that is not enough.
- Say "I don't know" rather than invent facts; never claim an action happened when it did not.
- Mention when an answer may be out of date.

## Memory
- Remember what your owner asks you to remember, and stable facts about them, in your notes.
- Never store secrets such as passwords, keys or tokens.
"""

DEFAULT_USER = """# About my owner

<!-- Fill in the blanks below; Mimi reads this file at the start of every conversation.
     Keep it short: all of it is sent with each request.
     Laptop simulator: edit <flash>/data/config/USER.md.
     Board: edit a copy, then `mpremote cp USER.md :/data/config/USER.md`. -->

- Name:
- Timezone: (e.g. Europe/Berlin)
- Language:
- Preferences: (e.g. short answers, metric units, no emoji)
- Good to know:
"""

DEFAULT_MEMORY = """# Memory

Long-term notes about my owner, one per line.
"""


def check_date(date_str):
    """Return date_str when it is YYYY-MM-DD, else raise ValueError (it becomes a file name)."""
    ok = isinstance(date_str, str) and len(date_str) == _DATE_LEN
    if ok:
        for i in range(_DATE_LEN):
            c = date_str[i]
            if (c != "-") if i in (4, 7) else not ("0" <= c <= "9"):
                ok = False
                break
    if not ok:
        raise ValueError("date must look like YYYY-MM-DD, got {!r}".format(date_str))
    return date_str


class Flash:
    """Paths of the data root: config/, memory/, memory/daily/, sessions/, certs/."""

    def __init__(self, root):
        self.root = root
        self.config_dir = files.join(root, "config")
        self.memory_dir = files.join(root, "memory")
        self.daily_dir = files.join(self.memory_dir, "daily")
        self.sessions_dir = files.join(root, "sessions")
        self.certs_dir = files.join(root, "certs")
        self.soul_path = files.join(self.config_dir, "SOUL.md")
        self.user_path = files.join(self.config_dir, "USER.md")
        self.memory_path = files.join(self.memory_dir, "MEMORY.md")

    def daily_path(self, date_str):
        return files.join(self.daily_dir, check_date(date_str) + ".md")

    def folders(self):
        return (
            self.root,
            self.config_dir,
            self.memory_dir,
            self.daily_dir,
            self.sessions_dir,
            self.certs_dir,
        )

    def seed(self):
        """Create the folders and any missing default file; return the paths written.

        A file that exists is never touched, even when empty: the owner may have emptied it.
        """
        from mimi.storage import space

        # A flash full at boot must not stop the device: old conversations make room, else it goes without.
        policy = space.Space(self)
        for folder in self.folders():
            _full_is_not_fatal(policy, "the folder " + folder, files.makedirs, folder)
        created = []
        for path, text in ((self.soul_path, DEFAULT_SOUL), (self.user_path, DEFAULT_USER),
                           (self.memory_path, DEFAULT_MEMORY)):
            files.remove_stale_tmp(path)
            if not files.exists(path):
                if _full_is_not_fatal(policy, path, files.write_atomic, path, text):
                    created.append(path)
        return created


def _full_is_not_fatal(policy, what, fn, *args):
    try:
        policy.guarded(lambda: fn(*args), what)
        return True
    except OSError as exc:
        if not files.is_full(exc):
            raise
        return False
