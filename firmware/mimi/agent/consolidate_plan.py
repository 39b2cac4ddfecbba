# What a consolidation looks at before its summary call (agent/consolidate.py): whether one is due, the journal a
# run cut short left, how many of the oldest messages to summarise, whether facts may be kept. Let go before the
# call, so the call (a run's highest point on the heap) never holds this code.
from mimi import jsontext
from mimi.platform import const, log
from mimi.storage import files, session_read
from mimi.storage.sessions import CONSOLIDATE_AT

_JOURNAL_MAX = const(4096)


def count(path):
    """The session file's valid message lines (0 when it is missing)."""
    f = session_read.opened(path)
    if f is None:
        return 0
    with f:
        return sum(1 for _ in session_read.records(f))


def due(sessions, channel, chat_id):
    """Exactly, once sessions.may_consolidate has found a journal or a long file: every line is parsed."""
    stem = sessions.stem(channel, chat_id)
    return files.exists(sessions.journal_path(stem)) or count(sessions.path(channel, chat_id)) > CONSOLIDATE_AT


def oldest(path, total, keep):
    """(n, last line's (length, sha)) of the oldest messages, leaving `keep` or a few more so the kept part
    opens with the user; (0, None) when that would leave nothing."""
    want = total - keep
    n, last = 0, None
    f = session_read.opened(path)
    if f is None:
        return 0, None
    with f:
        for record in session_read.records(f):
            if n >= want and record[4] == "user":
                break
            n += 1
            last = record
        if last is None or n >= total:
            return 0, None
        return n, (last[1], session_read.sha(f, last[0], last[1]))


def read_journal(sessions, stem):
    """The journal a run cut short left (its summary taken, not yet applied), or None (an unreadable one is
    dropped, saying so)."""
    path = sessions.journal_path(stem)
    files.remove_stale_tmp(path)
    text = files.read_text(path, _JOURNAL_MAX)
    if text is None:
        return None
    try:
        journal = jsontext.loads(text)
        if not isinstance(journal.get("summary"), str) or not isinstance(journal.get("last"), list):
            raise ValueError("incomplete")
        return journal
    except (ValueError, AttributeError):
        log("consolidate: dropping an unreadable journal {}".format(path))
        files.remove(path)
        return None


def facts_allowed(app, role):
    """May the summary's facts go to MEMORY.md: the `remember` tool is there, not blocked, and the chat's role
    may use it."""
    registry = getattr(app, "registry", None)
    if registry is None or "remember" not in registry.tools:
        return False
    from mimi.safety import policy as policy_module, roles

    tool = registry.tools["remember"]
    if policy_module.level_of(app.config, "remember", tool) == policy_module.BLOCKED:
        return False
    return roles.allows(role, policy_module.tier_of(tool))
