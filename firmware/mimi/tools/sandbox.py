# Where the file tools may go: a lexical check of each path against the data root's allowed folders.
import os

from mimi.platform import const
from mimi.storage import files as flash_files

# Top-level folders of the data root the model may read and write.
WRITABLE = ("config", "memory", "skills", "files")
# Top-level folders the model may read but never write (the firmware owns the chat histories).
READ_ONLY = ("sessions",)
# The places only the owner's turns may read or list: everyone's chat histories, the photos and files received
# that wait for their turn (agent/attachments.py INBOX: the owner's uploads too), and the owner's memory (MEMORY.md,
# the daily notes) and profile (USER.md), which only the owner's own turns are shown (agent/context.py).
OWNER_ONLY = ("sessions", "files/inbox", "memory", "config/USER.md")
# Top-level folders that do not exist for the model at all (TLS trust anchors).
HIDDEN = ("certs",)
# Files directly in the data root with this suffix are readable and writable (e.g. HEARTBEAT.md).
ROOT_FILE_SUFFIX = ".md"
# The chip's name for the data root: "/data/memory/MEMORY.md" is taken as "memory/MEMORY.md".
CHIP_DATA_ROOT = "/data"

_PATH_MAX = const(160)  # characters of a path given to a tool
_S_IFMT = const(0xF000)
_S_IFLNK = const(0xA000)


def owner_only(rel):
    """True for a path inside one of the OWNER_ONLY folders (or one of them itself)."""
    for folder in OWNER_ONLY:
        if rel == folder or rel.startswith(folder + "/"):
            return True
    return False


def owner_only_text():
    """The OWNER_ONLY places as a path names them: "sessions/, ..., config/USER.md"."""
    return ", ".join(place if place.endswith(ROOT_FILE_SUFFIX) else place + "/" for place in OWNER_ONLY)


class PathRefused(ValueError):
    """A path outside the allowed folders; the text says why and what is allowed."""


def allowed_text():
    """The allowed places, for error messages and the tool descriptions."""
    return "{} (read and write), {} (read only), and *{} files at the top".format(
        ", ".join(name + "/" for name in WRITABLE),
        ", ".join(name + "/" for name in READ_ONLY),
        ROOT_FILE_SUFFIX,
    )


def _refuse(path, why):
    raise PathRefused("path '{}' refused: {}. Paths are relative to the data folder; allowed: {}"
                      .format(path, why, allowed_text()))


def _segments(path):
    """The path's names, after the lexical checks; [] for the data root itself."""
    if not isinstance(path, str):
        raise PathRefused("a path must be text")
    text = path.strip()
    if len(text) > _PATH_MAX:
        _refuse(text[:_PATH_MAX] + "...", "longer than {} characters".format(_PATH_MAX))
    for ch in text:
        if ch == "\x00" or ord(ch) < 32 or ord(ch) == 127:
            _refuse(repr(text), "control characters (NUL included) are not allowed")
    if "\\" in text:
        _refuse(text, "use / between folder names, not backslashes")
    if text == CHIP_DATA_ROOT or text.startswith(CHIP_DATA_ROOT + "/"):
        text = text[len(CHIP_DATA_ROOT):].lstrip("/")
    if text.startswith("/"):
        _refuse(text, "absolute paths are not allowed")
    names = []
    for name in text.split("/"):
        if name == "..":
            _refuse(text, "'..' is not allowed")
        if name and name != ".":
            names.append(name)
    return names


def _is_link(full):
    lstat = getattr(os, "lstat", None)  # LittleFS has no links, and MicroPython no lstat
    if lstat is None:
        return False
    try:
        return (lstat(full)[0] & _S_IFMT) == _S_IFLNK
    except OSError:
        return False


class Place:
    """A checked path: rel (as the model should write it), full (on this filesystem), writable."""

    def __init__(self, rel, full, writable):
        self.rel = rel
        self.full = full
        self.writable = writable

    def is_root(self):
        return self.rel == ""


def resolve(root, path, write=False):
    """The Place for `path` under `root`, or PathRefused saying why it is not allowed."""
    names = _segments(path)
    rel = "/".join(names)
    if not names:
        if write:
            _refuse("/", "that is the data folder itself, not a file")
        return Place("", root, False)
    top = names[0]
    if top in HIDDEN:
        _refuse(rel, "{}/ holds TLS certificates and is not accessible to tools".format(top))
    if len(names) == 1 and top.endswith(ROOT_FILE_SUFFIX) and top not in WRITABLE + READ_ONLY:
        writable = True
    elif top in WRITABLE:
        writable = True
    elif top in READ_ONLY:
        writable = False
    else:
        _refuse(rel, "'{}' is not one of the allowed places".format(top))
    if write and not writable:
        _refuse(rel, "{}/ is read-only (the firmware writes it)".format(top))
    full = root
    for name in names:
        full = flash_files.join(full, name)
        if _is_link(full):
            _refuse(rel, "'{}' is a link, and links are not followed".format(name))
    return Place(rel, full, writable)


def root_entries(root):
    """[(name, is_folder)] the model sees at the top of the data root, in order."""
    entries = [(name, True) for name in sorted(WRITABLE + READ_ONLY)]
    for name in flash_files.listdir(root):
        if name.endswith(ROOT_FILE_SUFFIX) and not flash_files.is_dir(flash_files.join(root, name)):
            entries.append((name, False))
    return entries
