# A store's JSON file (cron.json, watchers.json, mcp.json) read: whole and bounded, and one that cannot be read kept
# aside under <name>.bad and named on the console, never overwritten by the store's next save (files.write_atomic).
import os

from mimi.platform import log
from mimi.storage import files

BAD_SUFFIX = ".bad"  # an unreadable file is kept aside under this name for the owner


def read(path, max_bytes, field):
    """The JSON object kept in path, its `field` a list: None when there is no file (a write cut short before: its
    .tmp removed) or when it is broken (larger than max_bytes, not JSON, no such list): then it is kept aside as
    <path>.bad, the console says so, and the store starts empty."""
    try:
        data = files.read_json(path, max_bytes)
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(data.get(field), list):
            raise ValueError("no {} list".format(field))
        return data
    except (ValueError, TypeError) as exc:
        kept = keep_aside(path)
        log("{} is unreadable ({}); starting with no {}; {}".format(
            path, exc, field, "the file is kept as " + kept if kept else "it could not be kept aside"))
        return None


def keep_aside(path):
    """path renamed to <path>.bad (an older .bad replaced): the name it has now, or None when it could not be."""
    bad = path + BAD_SUFFIX
    try:
        files.remove(bad)
        os.rename(path, bad)
    except OSError:
        return None
    return bad

