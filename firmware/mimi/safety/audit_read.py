# Reading the audit log back: the newest entries, one console line each (imported when audit_tail is typed).
import json

from mimi import jsontext
from mimi import platform
from mimi.platform import const
from mimi.safety.audit import hide, masked
from mimi.storage import files

_TAIL_DEFAULT = const(10)
_TAIL_MAX = const(100)
_LINE_MAX = const(4096)  # bytes of one log line read back


def tail(audit, count=_TAIL_DEFAULT):
    """The newest `count` entries (dicts) of an Audit's log, oldest first, reading files newest first."""
    count = max(0, min(count, _TAIL_MAX))
    found = []
    for name in reversed(audit.day_files()):
        if len(found) >= count:
            break
        newest = []
        for raw in files.iter_lines(files.join(audit.folder, name), _LINE_MAX):
            if raw is None:
                continue
            newest.append(raw)
            if len(newest) > count - len(found):
                newest.pop(0)
        entries = []
        for raw in newest:
            try:
                entries.append(jsontext.loads(raw))
            except ValueError:  # a line cut by a power loss
                pass
        found = entries + found
    return found[-count:] if count else []


def describe(entry, secrets=()):
    """One console line for an entry, masked again in case a secret was set after it was written."""
    who = "{}:{}".format(entry.get("channel"), entry.get("chat"))
    if entry.get("user") is not None:
        who += " user " + str(entry.get("user"))
    if entry.get("profile") not in (None, "claude"):  # asked for by another model profile
        who += " via " + str(entry.get("profile"))
    ts = entry.get("ts")
    when = platform.utc_stamp(ts) if isinstance(ts, int) else "?"
    return "{} {} {} {} {} ms {} -> {}".format(
        when, who, entry.get("tool"), "ok" if entry.get("ok") else "FAILED", entry.get("ms"),
        json.dumps(masked(entry.get("input"), secrets)), hide(str(entry.get("result")), secrets).replace("\n", " "))


async def audit_tail(audit, n=str(_TAIL_DEFAULT)):
    """The console's `audit_tail [n]`."""
    try:
        count = int(n)
    except ValueError:
        raise ValueError("audit_tail takes a number of entries, like audit_tail 20")
    secrets = audit.secrets()  # the configured secrets, as they are now
    entries = tail(audit, count)
    if not entries:
        platform.log("audit: no tool calls logged yet")
    for entry in entries:
        platform.console_write(describe(entry, secrets) + "\n")
