# The clean-up of a full flash: frees room by policy (old conversations, old daily notes, old audit days)
# and retries the write once; loaded by space.Space at the first full flash.
import os

from mimi import platform
from mimi.platform import const
from mimi.storage import files
from mimi.storage.session_lines import SUFFIX, last_ts

_FREE_TARGET = const(32 * 1024)  # bytes a clean-up tries to leave free ...
_TARGET_SHARE = const(8)  # ... or one eighth of a small flash, whichever is less
_DATE_LEN = const(10)  # YYYY-MM-DD
KEPT = "MEMORY.md, SOUL.md, USER.md and the settings are never removed"


def _plural(count, one, many):
    return "{} {}".format(count, one if count == 1 else many)


def _dated(names, suffix, today):
    """(date, name) of the YYYY-MM-DD<suffix> files before today, oldest first."""
    out = []
    for name in names:
        stem = name[: -len(suffix)] if name.endswith(suffix) else ""
        if len(stem) == _DATE_LEN and stem[4:5] == "-" and stem < today:
            out.append((stem, name))
    out.sort()
    return out


class Cleanup:
    """What a full flash gives up, in order; the owner hears of each clean-up once."""

    def __init__(self, flash, audit_dir=None, tell=print, today=None):
        self.flash = flash  # layout.Flash
        self.audit_dir = audit_dir
        self.tell = tell
        self.today = today or platform.utc_date
        self.target = None  # bytes a clean-up frees; None: _FREE_TARGET, less on a small flash
        self._told = []  # notices given in this episode: "removed", "unsaved"
        self.cleanups = 0

    def free_bytes(self):
        """(free, total) bytes on the data root's file system, None where unknown."""
        statvfs = getattr(os, "statvfs", None)
        if statvfs is None:
            return None
        try:
            st = statvfs(self.flash.root)
        except OSError:
            return None
        block = st[1] or st[0]
        free = st[4] if st[4] <= st[2] else 0  # a full LittleFS may count more blocks in use than it has
        return block * free, block * st[2]

    def _target(self):
        if self.target:
            return self.target
        figures = self.free_bytes()
        return _FREE_TARGET if figures is None else min(_FREE_TARGET, figures[1] // _TARGET_SHARE)

    def _measured(self, target):
        figures = self.free_bytes()
        return figures is not None and figures[0] >= target

    def candidates(self, keep=()):
        """(kind, path) in the order the policy removes them; never a path in keep."""
        today = self.today()
        found = []
        for folder in (self.flash.sessions_dir, self.flash.daily_dir, self.audit_dir):
            for name in files.listdir(folder) if folder else ():
                if name.endswith(files.TMP_SUFFIX):  # left by a power cut: garbage
                    found.append(("tmp", files.join(folder, name)))
        inbox = files.join(self.flash.root, "files/inbox")  # photos and files waiting for their turn: first to go
        for name in files.listdir(inbox):
            found.append(("media", files.join(inbox, name)))
        ages = []
        for name in files.listdir(self.flash.sessions_dir):
            if name.endswith(SUFFIX):
                path = files.join(self.flash.sessions_dir, name)
                ages.append((last_ts(path), name, path))
        ages.sort()
        found.extend(("session", entry[2]) for entry in ages)
        for date, name in _dated(files.listdir(self.flash.daily_dir), ".md", today):
            found.append(("daily", files.join(self.flash.daily_dir, name)))
        if self.audit_dir:
            for date, name in _dated(files.listdir(self.audit_dir), ".jsonl", today):
                found.append(("audit", files.join(self.audit_dir, name)))
        return [c for c in found if c[1] not in keep]

    def free(self, keep=()):
        """Remove candidates until the target is freed; ({kind: count} removed, target reached).

        The sizes of the removed files count, not only statvfs: near full, LittleFS counts
        blocks in use generously (shared copy-on-write blocks twice).
        """
        target = self._target()
        removed = {}
        freed = 0
        for kind, path in self.candidates(keep):
            size = files.size(path)
            try:
                files.remove(path)
            except OSError as exc:
                platform.log("flash: could not remove {} ({})".format(path, exc))
                continue
            removed[kind] = removed.get(kind, 0) + 1
            freed += size if size > 0 else 0
            if freed >= target or self._measured(target):
                self.cleanups += 1
                return removed, True
        self.cleanups += 1
        return removed, False

    def retry(self, write, what, keep=()):
        """After write() found the flash full: free room, run write() once more, tell the owner."""
        removed, roomy = self.free(keep)
        if roomy:
            self._told = [n for n in self._told if n != "unsaved"]  # room again: a new failure is news
        try:
            result = write()
        except OSError as exc:
            if files.is_full(exc):
                self._notice("unsaved", removed, "flash full: could not save {}; {}".format(what, _nothing_left()))
            raise
        self._notice("removed", removed, None)
        if roomy:
            self._told = []  # the episode is over: the next full flash is told again
        return result

    def _notice(self, kind, removed, text):
        if kind in self._told or (text is None and not removed):
            return
        self._told.append(kind)
        parts = []
        if removed.get("session"):
            parts.append(_plural(removed["session"], "old conversation", "old conversations"))
        if removed.get("daily"):
            parts.append(_plural(removed["daily"], "old daily note", "old daily notes"))
        if removed.get("audit"):
            parts.append(_plural(removed["audit"], "old audit log day", "old audit log days"))
        if removed.get("media"):
            parts.append(_plural(removed["media"], "received file not yet read", "received files not yet read"))
        if removed.get("tmp"):
            parts.append(_plural(removed["tmp"], "leftover temporary file", "leftover temporary files"))
        if text is None:
            text = "flash full: removed {} to make room ({})".format(" and ".join(parts), KEPT)
        elif parts:
            text += " (removed {} first)".format(" and ".join(parts))
        try:
            self.tell(text)
        except Exception as exc:  # a notice must never cost the write's caller its answer
            platform.log("flash: could not tell the owner: {}".format(exc))


def _nothing_left():
    return "nothing more can be removed ({}); clear conversations (session_clear) or delete files".format(KEPT)
