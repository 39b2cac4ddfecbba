# What a consolidation does once its summary is in the journal (agent/consolidate.py): the daily note, the facts
# through `remember`, the session cut at the summarised messages' last line. Loaded after the summary call, so
# the call (a run's highest point on the heap) never holds this code; forgotten with the rest (_forget).
from mimi import platform
from mimi.platform import const
from mimi.safety.roles import OWNER
from mimi.storage import files, session_read, space
from mimi.storage.session_lines import line_for, spans_forward
from mimi.storage.sessions import valid_lines

_SCAN_SLACK = const(8)  # lines past the consolidated count searched for its last line
# A chat that is not the owner's keeps its summary as its own first turn (the roles alternate, opening with the
# user's, as every model's chat template wants): its user keeps the context, nobody else reads it.
_EARLIER = "[earlier in this chat]"
_SUMMARISED = "Summary of the earlier part of this chat: {}"


async def apply(self, stem, journal, channel, chat_id, role):
    """Write the journal's summary into the daily note, its facts through `remember`, cut the session; a
    line saying what happened (`self`: the Consolidator; a power cut between steps is finished by the next run).
    A chat that is not the owner's (the journal's say at the summary, or the role now) gets it as its own first
    turn instead, and nothing goes to memory."""
    if journal.get("chat") or role != OWNER:
        return _into_chat(self, stem, journal)
    memory = self.app.memory
    date = journal.get("date") or platform.utc_date()
    line = "- {} UTC, earlier in {}: {}".format(journal.get("at", "?"), stem, journal["summary"])
    if journal["summary"] not in memory.read_daily(date):  # a run cut short may have written it
        try:
            memory.append_daily(line, date)
        except ValueError as exc:  # the note filled up meanwhile: keep the turns, drop the journal
            files.remove(self.app.sessions.journal_path(stem))
            return "{}: {}; the turns stay".format(stem, exc)
    self._step("note")
    kept_facts = await _remember(self, journal.get("facts") or (), channel, chat_id, role)
    self._step("memory")
    dropped = drop(self, stem, journal["n"], journal["last"])
    self._step("session")
    files.remove(self.app.sessions.journal_path(stem))
    self.done += 1
    said = "{}: {} older messages summarised into memory/daily/{}.md".format(stem, dropped, date)
    if not dropped:
        said = "{}: an interrupted summary finished (memory/daily/{}.md)".format(stem, date)
    if kept_facts:
        said += "; {} saved to MEMORY.md".format(kept_facts)
    return said


async def _remember(self, facts, channel, chat_id, role):
    """Each new fact through the `remember` tool: its tier, autonomy level and confirmation apply."""
    registry = getattr(self.app, "registry", None)
    if registry is None or not facts:
        return 0
    from mimi.tools.turn import Turn

    turn = Turn(channel, chat_id, {"role": role, "consolidation": True}, role)  # the chat's own role
    saved = 0
    for fact in facts:
        if fact in self.app.memory.read():
            continue  # already there (written before a power cut, or known)
        text, is_error = await registry.execute("remember", {"text": fact}, turn)
        if not is_error:
            saved += 1
    return saved


def _into_chat(self, stem, journal):
    """The summary written as the chat's first turn in the same atomic rewrite that drops what it summarises (a
    power cut leaves the old file or the new one; a finished rewrite is not done twice: drop finds no line)."""
    now, cap = platform.unix_time(), self.app.sessions.line_cap
    opening = (line_for("user", _EARLIER, now, cap), line_for("assistant", _SUMMARISED.format(journal["summary"]),
                                                              now, cap))
    dropped = drop(self, stem, journal["n"], journal["last"], opening)
    self._step("session")
    files.remove(self.app.sessions.journal_path(stem))
    self.done += 1
    if not dropped:
        return "{}: an interrupted summary finished (kept in the chat itself)".format(stem)
    return "{}: {} older messages summarised into the chat itself (not the owner's: nothing goes to memory)".format(
        stem, dropped)


def _lines(opening, rest):
    for line in opening:
        yield from line
        yield "\n"
    yield from rest


def drop(self, stem, n, last, opening=()):
    """Rewrite the session without its lines up to the consolidated last one, after the lines of `opening` (each
    line_for's str pieces); the count dropped."""
    path = self._path(stem)
    want_len, want_sha = last[0], last[1]
    cut = index = 0
    f = session_read.opened(path)
    if f is None:
        return 0
    with f:
        for start, length in spans_forward(f, 0):
            index += 1
            if length == want_len and session_read.sha(f, start, length) == want_sha:
                cut = start + length + 1  # where the kept lines start
                break
            if index > n + _SCAN_SLACK:
                break
    if not cut:
        return 0  # gone already (a finished run, a trim, or session_clear)

    what = "the conversation " + stem
    space.guarded(lambda: files.write_atomic(path, _lines(opening, valid_lines(path, cut))), what, (path,))
    return index
