# File tools: read_file, write_file, edit_file, list_dir, confined to the data folders (sandbox.py).
from mimi import utf8
from mimi.platform import const
from mimi.safety import roles
from mimi.storage import files as flash_files
from mimi.storage.memory import DAILY_MAX_BYTES, MEMORY_MAX_BYTES
from mimi.tools import sandbox
from mimi.tools.registry import Tool, ToolError

READ_MAX = const(6144)  # bytes returned by one read_file call (the registry caps results at 8 KB)
WRITE_MAX = const(16384)  # bytes of a file written by write_file or edit_file
LIST_MAX = const(100)  # entries shown by one list_dir call
_ENOSPC = const(28)



class _FileTool(Tool):
    wants_turn = True  # the conversations and the owner's memory are the owner's turns' only (sandbox.OWNER_ONLY)

    def _place(self, turn, path, write=False):
        try:
            place = sandbox.resolve(self.app.flash.root, path, write)
        except sandbox.PathRefused as exc:
            raise ToolError(str(exc))
        if sandbox.owner_only(place.rel) and turn.role != roles.OWNER:
            raise ToolError("path '{}' refused: only the owner may read conversations, the files that wait for "
                            "their turn and the owner's memory and profile ({})".format(place.rel,
                                                                                      sandbox.owner_only_text()))
        return place


def _cap(rel):
    """Largest size of the file at rel: the prompt-bound memory files keep their own limits."""
    if rel == "memory/MEMORY.md":
        return MEMORY_MAX_BYTES
    if rel.startswith("memory/daily/"):
        return DAILY_MAX_BYTES
    return WRITE_MAX


def _need_file(place):
    if place.is_root() or flash_files.is_dir(place.full):
        raise ToolError("'{}' is a folder: use list_dir to see what is in it".format(place.rel or "/"))
    if not flash_files.exists(place.full):
        raise ToolError("no file '{}' (list_dir shows what exists)".format(place.rel))


def _store(place, data):
    """Write data to the place atomically, creating its folders; clear errors for a full flash."""
    if flash_files.is_dir(place.full):
        raise ToolError("'{}' is a folder; give a file name inside it".format(place.rel))
    cap = _cap(place.rel)
    if len(data) > cap:
        raise ToolError("'{}' would be {} bytes, over the {} byte limit: write less".format(
            place.rel, len(data), cap))
    parent = place.full.rsplit("/", 1)[0]
    try:
        flash_files.makedirs(parent)
        flash_files.write_atomic(place.full, data)
    except OSError as exc:
        if exc.args and exc.args[0] == _ENOSPC:
            raise ToolError("the flash is full: '{}' was not written".format(place.rel))
        raise ToolError("could not write '{}': {}".format(place.rel, exc))


def _skip_continuation(data):
    """Bytes at the start of data that continue a character begun before it."""
    n = 0
    while n < len(data) and n < 3 and 0x80 <= data[n] < 0xC0:
        n += 1
    return n


class ReadFile(_FileTool):
    name = "read_file"
    description = (
        "Read a text file from your flash, e.g. memory/MEMORY.md, config/USER.md or skills/<name>.md. "
        "Returns at most {} bytes per call; for longer files a note at the end gives the offset "
        "to continue from. Paths are relative to the data folder.".format(READ_MAX)
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, like memory/MEMORY.md"},
            "offset": {"type": "integer", "description": "byte to start at (default 0)"},
            "limit": {"type": "integer",
                      "description": "most bytes to read (default and max {})".format(READ_MAX)},
        },
        "required": ["path"],
    }
    tier, acting, level = "observer", False, "autonomous"

    def run(self, input, turn):
        place = self._place(turn, input["path"])
        _need_file(place)
        offset = input.get("offset", 0)
        limit = input.get("limit", READ_MAX)
        if offset < 0 or limit < 1:
            raise ToolError("offset must be 0 or more and limit 1 or more")
        limit = min(limit, READ_MAX)
        total = flash_files.size(place.full)
        if offset > total:
            raise ToolError("offset {} is past the end of '{}' ({} bytes)".format(offset, place.rel, total))
        with open(place.full, "rb") as f:
            f.seek(offset)
            data = f.read(limit)
        skip = _skip_continuation(data)
        data = data[skip:]
        if offset + skip + len(data) < total and flash_files.utf8_boundary(data):
            data = data[: flash_files.utf8_boundary(data)]  # stop before a character cut in two
        end = offset + skip + len(data)
        text = flash_files.decode(data)
        if offset == 0 and end >= total:
            return text
        more = "read again with offset={} for more".format(end) if end < total else "end of file"
        return "{}\n[bytes {}-{} of {}; {}]".format(text, offset + skip, end, total, more)


class WriteFile(_FileTool):
    name = "write_file"
    description = (
        "Create or replace a whole text file on your flash (at most {} bytes). Use files/ for your own "
        "notes and data, skills/<name>.md for skills; folders are created as needed. Prefer edit_file "
        "to change part of an existing file.".format(WRITE_MAX)
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, like files/shopping.md"},
            "content": {"type": "string", "description": "the complete new text of the file"},
        },
        "required": ["path", "content"],
    }
    tier, acting, level = "owner", True, "report"

    def run(self, input, turn):
        place = self._place(turn, input["path"], write=True)
        existed = flash_files.exists(place.full)
        data = input["content"].encode()
        _store(place, data)
        return "wrote {} bytes to {} ({})".format(len(data), place.rel, "replaced" if existed else "new file")


class EditFile(_FileTool):
    name = "edit_file"
    description = (
        "Change part of a text file: replaces old_string with new_string. old_string must match the "
        "file exactly (spaces and line breaks included) and occur exactly once; read_file first."
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, like config/USER.md"},
            "old_string": {"type": "string", "description": "the exact text to replace (must be unique)"},
            "new_string": {"type": "string", "description": "the text to put in its place"},
        },
        "required": ["path", "old_string", "new_string"],
    }
    tier, acting, level = "owner", True, "report"

    def run(self, input, turn):
        place = self._place(turn, input["path"], write=True)
        _need_file(place)
        old, new = input["old_string"], input["new_string"]
        if not old:
            raise ToolError("old_string is empty: give the exact text to replace")
        if old == new:
            raise ToolError("old_string and new_string are the same: nothing to change")
        size = flash_files.size(place.full)
        if size > WRITE_MAX:
            raise ToolError("'{}' is {} bytes, too big to edit (limit {}); use write_file".format(
                place.rel, size, WRITE_MAX))
        with open(place.full, "rb") as f:
            raw = f.read()
        try:
            text = utf8.strict(raw)  # also refuses the surrogate halves MicroPython's decode lets by
        except ValueError:
            raise ToolError("'{}' is not UTF-8 text and cannot be edited".format(place.rel))
        count = text.count(old)
        if count == 0:
            raise ToolError("old_string was not found in '{}'; it must match exactly, spaces and line "
                            "breaks included (read_file shows the current text)".format(place.rel))
        if count > 1:
            raise ToolError("old_string occurs {} times in '{}'; include more of the surrounding text "
                            "so that it matches exactly once".format(count, place.rel))
        data = text.replace(old, new, 1).encode()
        _store(place, data)
        return "edited {}: replaced 1 occurrence (file is now {} bytes)".format(place.rel, len(data))


def _entry_line(full, name):
    if flash_files.is_dir(flash_files.join(full, name)):
        return name + "/"
    return "{}  {} bytes".format(name, flash_files.size(flash_files.join(full, name)))


class ListDir(_FileTool):
    name = "list_dir"
    description = (
        "List a folder on your flash: names with sizes, folders end with /. Without a path it lists the "
        "data folder: {}.".format(sandbox.allowed_text())
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "folder path, like memory/daily (default: the data folder)"},
        },
        "required": [],
    }
    tier, acting, level = "observer", False, "autonomous"

    def run(self, input, turn):
        place = self._place(turn, input.get("path", ""))
        if place.is_root():
            lines = []
            for name, is_folder in sandbox.root_entries(place.full):
                if not is_folder:
                    lines.append(_entry_line(place.full, name))
                elif name in sandbox.READ_ONLY:
                    lines.append(name + "/  (read only)")
                elif not flash_files.is_dir(flash_files.join(place.full, name)):
                    lines.append(name + "/  (empty; created when you write into it)")
                else:
                    lines.append(name + "/")
            return "\n".join(lines)
        if not flash_files.is_dir(place.full):
            if flash_files.exists(place.full):
                raise ToolError("'{}' is a file: use read_file".format(place.rel))
            raise ToolError("no folder '{}'".format(place.rel))
        names = flash_files.listdir(place.full)
        if turn.role != roles.OWNER:  # what only the owner may read is not listed either
            names = [name for name in names if not sandbox.owner_only(place.rel + "/" + name)]
        if not names:
            return "(folder {} is empty)".format(place.rel)
        lines = [_entry_line(place.full, name) for name in names[:LIST_MAX]]
        if len(names) > LIST_MAX:
            lines.append("... and {} more".format(len(names) - LIST_MAX))
        return "\n".join(lines)


TOOLS = (ReadFile, WriteFile, EditFile, ListDir)
