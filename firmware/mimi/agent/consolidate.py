# Memory that consolidates itself: a session's oldest turns summarised into the daily note (the owner's own chats;
# any other chat keeps its summary as its own first turn), then dropped. One run: whether one is due and what it
# takes (the plan), the summary call (its prompt, its transcript read from the session file as the request is
# written, its reply read), and what follows it (the note, the facts through `remember`, the session cut).
#
# Crash-safe by a journal: the summary is kept on flash (sessions/<stem>.summary) before anything else is
# written, every later step checks whether it already happened, and the journal goes last. A power cut
# before the journal costs one more Claude call; after it, the next run finishes the same summary.
#
# Rare, so loaded only for a run, in a consolidation's scope (mimi/heap.py; agent/__init__.py declares it): the
# agent's hook imports it when sessions.may_consolidate says one may be due, and it is let go when the last run
# ends (with the Consolidator the runs share). As .mpy its code is an 8.6 KB file, heap during a run: at the summary
# call 1.8 KB more than when the plan and the steps after the call were modules let go around it; flash in ROMFS.
import binascii
import hashlib
import json

from mimi import heap, jsontext, platform, utf8
from mimi.jsontext import Streamed
from mimi.bus.message import CLI, SYSTEM
from mimi.platform import const, log
from mimi.safety.roles import OWNER
from mimi.storage import files, session_lines, space
from mimi.storage.session_lines import SUFFIX, line_for, parse_message, spans_forward
from mimi.storage.sessions import CONSOLIDATE_AT, HISTORY_LIMIT, decode_id, valid_lines

KEEP = HISTORY_LIMIT // 2  # messages left in the session afterwards
SUMMARY_TOKENS = const(500)  # max_tokens of the summary call
_NOTE_ROOM = const(720)  # bytes a daily note must still have free for a summary line
STEPS = ("journal", "note", "memory", "session")  # where a test may cut the power
_JOURNAL_MAX = const(4096)
_SCAN_SLACK = const(8)  # lines past the consolidated count searched for its last line
_READ_SLICE = const(512)  # bytes of a line read (hashed, decoded) at a time
SUMMARY_MAX = const(600)  # characters of one summary in the daily note
FACTS_MAX = const(3)  # proposed MEMORY.md lines per summary
_FACT_MAX = const(200)  # characters of one
MESSAGE_CHARS = const(1200)  # characters of one message shown to the summariser
TRANSCRIPT_MAX = const(12 * 1024)  # characters of the whole transcript sent
# A chat that is not the owner's keeps its summary as its own first turn (the roles alternate, opening with the
# user's, as every model's chat template wants): its user keeps the context, nobody else reads it.
_EARLIER = "[earlier in this chat]"
_SUMMARISED = "Summary of the earlier part of this chat: {}"

_SYSTEM = (
    "You condense the older part of a chat between a personal assistant (Mimi) and a user, so it can be "
    "dropped from the chat. Reply with exactly one line 'SUMMARY: ' followed by two to four plain sentences "
    "that keep what matters later: decisions, plans, open questions, promises, names and numbers. Write it "
    "in the language of the chat, in the third person ('the user asked ...')."
)
_FACTS = (
    " Then, only for lasting facts the user stated about themselves or their wishes (not passing "
    "remarks, never passwords, keys or tokens), up to {} lines 'FACT: ' with one short fact each. "
    "No FACT line when there is none."
)


class Consolidator:
    """Summarises and trims sessions for an Agent; `app` gives memory, registry, config and the owner."""

    def __init__(self, app):
        self.app = app
        self.busy = []  # session stems being consolidated now
        self.checkpoint = None  # tests: called with each step's name after it is done (a raise = a power cut)
        self.done = 0

    # -- what the session holds --
    def _path(self, stem):
        return files.join(self.app.sessions.dir, stem + SUFFIX)

    # -- the run --
    def due(self, channel, chat_id):
        """Exactly, once sessions.may_consolidate has found a journal or a long file: every line is parsed."""
        sessions = self.app.sessions
        return files.exists(sessions.journal_path(sessions.stem(channel, chat_id))) or \
            count(sessions.path(channel, chat_id)) > CONSOLIDATE_AT

    async def run(self, agent, message, channel, chat_id, force=False, role=None):
        """Consolidate one session when due (always when force); returns a line saying what happened."""
        sessions = self.app.sessions
        stem = sessions.stem(channel, chat_id)
        if stem in self.busy:
            return "{}: already being consolidated".format(stem)
        self.busy.append(stem)
        try:
            journal = read_journal(sessions, stem)
            if journal is None:
                total = count(self._path(stem))
                if total <= (KEEP if force else CONSOLIDATE_AT):
                    return "{}: {} messages, nothing to consolidate (more than {} are needed)".format(
                        stem, total, KEEP if force else CONSOLIDATE_AT)
                journal = await self._summarise(agent, message, stem, total, role)
                if isinstance(journal, str):
                    return "{}: {}".format(stem, journal)
            return await self._apply(stem, journal, channel, chat_id, role)
        finally:
            self.busy.remove(stem)

    async def _summarise(self, agent, message, stem, total, role):
        """The journal dict, or a str saying why nothing was done (the session is left as it is). A chat that is
        not the owner's (role) is summarised into itself: the daily note is in every user's prompt."""
        date = platform.utc_date()
        into_chat = role != OWNER
        from mimi.storage.memory import DAILY_MAX_BYTES

        # The note's size on flash (-1: none yet), not its text: nothing of it is held through the call.
        if not into_chat and files.size(self.app.memory.flash.daily_path(date)) + _NOTE_ROOM > DAILY_MAX_BYTES:
            return "today's daily note is full; the older turns stay in the session"
        n, last = oldest(self._path(stem), total, KEEP)
        if not n:
            return "nothing to consolidate"
        refusal = agent.check_call(message, "summary")  # the budget and the hourly cap apply as to any call
        if refusal:
            return "not now ({})".format(refusal.split(".")[0])
        facts_ok = facts_allowed(self.app, role)
        instructions = system(facts_ok)
        prompt = {"role": "user", "content": Transcript(self._path(stem), n)}
        model = self.app.config.get("llm_config", "watch_model") or None  # claude's cheaper model, when set
        from mimi.llm.errors import ModelError
        from mimi.llm.models import Route

        try:  # llm_for summary: a profile of its own (a small local model) before the chain
            result = await agent.models.stream(instructions, [prompt], model=model, max_tokens=SUMMARY_TOKENS,
                                               route=Route("summary"))
        except ModelError as exc:
            return "the summary call failed ({}); the turns stay".format(exc.message)
        agent.spent(message, result)
        summary, facts = parse_reply(result.text)
        if not summary:
            return "Claude sent no summary; the turns stay"
        journal = {"v": 1, "date": date, "at": platform.utc_stamp()[11:16], "n": n, "last": last,
                   "summary": summary, "facts": facts if facts_ok else [], "chat": into_chat}
        path = self.app.sessions.journal_path(stem)
        space.guarded(lambda: files.write_atomic(path, json.dumps(journal)), "a conversation summary", (path,))
        self._step("journal")
        return journal

    async def _apply(self, stem, journal, channel, chat_id, role):
        """Write the journal's summary into the daily note, its facts through `remember`, cut the session; a
        line saying what happened (a power cut between steps is finished by the next run).
        A chat that is not the owner's (the journal's say at the summary, or the role now) gets it as its own first
        turn instead, and nothing goes to memory."""
        if journal.get("chat") or role != OWNER:
            return self._into_chat(stem, journal)
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
        kept_facts = await self._remember(journal.get("facts") or (), channel, chat_id, role)
        self._step("memory")
        dropped = self.drop(stem, journal["n"], journal["last"])
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
        dropped = self.drop(stem, journal["n"], journal["last"], opening)
        self._step("session")
        files.remove(self.app.sessions.journal_path(stem))
        self.done += 1
        if not dropped:
            return "{}: an interrupted summary finished (kept in the chat itself)".format(stem)
        return "{}: {} older messages summarised into the chat itself (not the owner's: nothing goes to memory)".format(
            stem, dropped)


    def drop(self, stem, n, last, opening=()):
        """Rewrite the session without its lines up to the consolidated last one, after the lines of `opening` (each
        line_for's str pieces); the count dropped."""
        path = self._path(stem)
        want_len, want_sha = last[0], last[1]
        cut = index = 0
        f = opened(path)
        if f is None:
            return 0
        with f:
            for start, length in spans_forward(f, 0):
                index += 1
                if length == want_len and sha(f, start, length) == want_sha:
                    cut = start + length + 1  # where the kept lines start
                    break
                if index > n + _SCAN_SLACK:
                    break
        if not cut:
            return 0  # gone already (a finished run, a trim, or session_clear)

        what = "the conversation " + stem
        space.guarded(lambda: files.write_atomic(path, _lines(opening, valid_lines(path, cut))), what, (path,))
        return index

    def _step(self, name):
        if self.checkpoint is not None:
            self.checkpoint(name)


# -- what a run looks at before its call: the journal, the count, the oldest messages, whether facts are kept --
def count(path):
    """The session file's valid message lines (0 when it is missing)."""
    f = opened(path)
    if f is None:
        return 0
    with f:
        return sum(1 for _ in records(f))


def oldest(path, total, keep):
    """(n, last line's (length, sha)) of the oldest messages, leaving `keep` or a few more so the kept part
    opens with the user; (0, None) when that would leave nothing."""
    want = total - keep
    n, last = 0, None
    f = opened(path)
    if f is None:
        return 0, None
    with f:
        for record in records(f):
            if n >= want and record[4] == "user":
                break
            n += 1
            last = record
        if last is None or n >= total:
            return 0, None
        return n, (last[1], sha(f, last[0], last[1]))


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


def _lines(opening, rest):
    for line in opening:
        yield from line
        yield "\n"
    yield from rest


# -- the summary call: its prompt, its transcript, its reply --
def system(facts_ok):
    """The summariser's system prompt; FACT lines are asked for only where facts may be kept."""
    return _SYSTEM + (_FACTS.format(FACTS_MAX) if facts_ok else "")


def head(pieces):
    """(str pieces, cut) of a message's text read piece by piece, as the summariser is shown it: stripped,
    its first MESSAGE_CHARS characters, cut True when more follow (nothing after them is read)."""
    out, have = [], 0
    for piece in pieces:
        if not have:
            piece = piece.lstrip()
        take = piece[: MESSAGE_CHARS - have]
        if take:
            out.append(take)
            have += len(take)
        if len(take) < len(piece) and piece[len(take) :].strip():
            return out, True
    while out:  # the end stripped: trailing whitespace may fill the last pieces
        last = out.pop().rstrip()
        if last:
            out.append(last)
            break
    return out, False


def transcript(messages):
    """The older turns, (role, text pieces, cut) as head() gives them (taken one at a time), as one user
    message's text in str pieces: each message cut to MESSAGE_CHARS, the whole to TRANSCRIPT_MAX; byte for byte
    "\\n{name}: {text}[ [...]]\\n" each. Never joined: the request escapes the pieces as it writes them
    (Transcript)."""
    yield "The older part of the chat, oldest first:\n"
    size = 0
    for role, text, cut in messages:
        name = "User" if role == "user" else "Mimi"
        size += len(name) + (10 if cut else 4)
        for piece in text:
            size += len(piece)
        if size > TRANSCRIPT_MAX:
            yield "\n[... the rest is left out]\n"
            return
        yield "\n" + name + ": "
        yield from text
        yield " [...]\n" if cut else "\n"


def parse_reply(text):
    """(summary, [facts]) from the summariser's reply; summary "" when it sent nothing usable."""
    summary, facts = [], []
    for raw in (text or "").split("\n"):
        line = raw.strip()
        upper = line[:8].upper()
        if upper.startswith("FACT:"):
            fact = " ".join(line[5:].split())
            if fact and len(facts) < FACTS_MAX:
                facts.append(fact[:_FACT_MAX])
        elif upper.startswith("SUMMARY:"):
            summary.append(line[8:].strip())
        elif line and summary and not facts:
            summary.append(line)  # a summary running over several lines
    if not summary:  # no format kept: the whole reply is the summary
        summary = [line for line in (text or "").split("\n") if line.strip() and "FACT:" not in line.upper()]
    flat = " ".join(" ".join(summary).split())
    if len(flat) > SUMMARY_MAX:
        flat = flat[: SUMMARY_MAX - 3] + "..."
    return flat, facts


def _messages(f, n):
    """(role, text pieces, cut) of the session's first n messages, as the summariser is shown them (_head)."""
    for record in records(f):
        if not n:
            return
        n -= 1
        text, cut = _head(f, record)
        yield record[4], text, cut


class Transcript(Streamed):
    """The summary call's user message: the session's oldest n messages as transcript() gives them,
    read from the session file as the request is written (once for its length, once for its bytes) and escaped
    piece by piece: a message at a time in RAM, never the whole transcript (up to TRANSCRIPT_MAX characters)."""

    def __init__(self, path, n):
        self.path, self.n = path, n

    def chunks(self):
        f = opened(self.path)
        if f is None:
            raise OSError(2, "the conversation is gone: " + self.path)
        with f:
            for piece in transcript(_messages(f, self.n)):
                yield from jsontext.escaped(piece)

    def text(self):
        """The whole text (for inspection and tests; requests send it in pieces)."""
        return "".join(jsontext.loads(b'"' + chunk + b'"') for chunk in self.chunks())


def _head(f, record):
    """(text pieces, cut) of a valid message line (session_lines.record_at) as the summariser is shown it.
    A line in session_lines.line_for's form is decoded a slice at a time (decoded); any other
    line is parsed whole."""
    start, length, at, size = record[:4]
    if size < 0:
        return [], False  # blank
    if at:
        try:
            return head(decoded(f, start + at, size))
        except ValueError:
            pass
    f.seek(start)
    message = parse_message(f.read(length))
    return head((message["content"],)) if message is not None else ([], False)


async def after_turn(app, agent, message, session):
    """The agent's hook after a saved turn (once sessions.may_consolidate said it may be due): consolidate the
    session when it has reached its cap."""
    if not session or session[0] == SYSTEM:
        return
    try:
        with heap.scope("consolidation"):
            try:
                consolidator = of(app)
                if consolidator.due(session[0], session[1]):
                    from mimi.channels.system import requesting_chat
                    from mimi.safety import roles

                    meta = message.meta
                    role = roles.of_turn(app.config, message.channel, meta,
                                         requesting_chat(message.channel, message.chat_id))
                    role = roles.of_conversation(app.config, session[0], session[1], role)  # only the owner's
                    log("consolidate: " + await consolidator.run(agent, message, session[0], session[1], role=role))
            finally:
                _done(app)
    except Exception as exc:  # consolidation must never cost the user anything
        log("consolidate: failed: {}".format(exc))
        platform.print_exception(exc)


def of(app):
    """The Consolidator the runs under way share (what each consolidates now), made by the first."""
    consolidator = getattr(app, "consolidator", None)
    if consolidator is None:
        consolidator = app.consolidator = Consolidator(app)
    return consolidator


def _done(app):
    """A run ended: the last one under way (two chats may consolidate at once) lets the Consolidator go, which
    would otherwise keep this module's code after its scope let it go."""
    consolidator = getattr(app, "consolidator", None)
    if consolidator is not None and not consolidator.busy:
        app.consolidator = None


async def by_hand(app, name):
    """`memory_consolidate [chat]`: a session stem (telegram_42) or a chat id (42, console)."""
    from mimi.bus.message import Message
    from mimi.storage.sessions import encode_id

    stems = [n[: -len(SUFFIX)] for n in files.listdir(app.sessions.dir) if n.endswith(SUFFIX)]
    chosen = [s for s in stems if s == name] or [s for s in stems if s.split("_", 1)[-1] == encode_id(name)]
    if not chosen:
        return "no conversation named '{}' (session_list shows them)".format(name)
    channel, _, encoded = chosen[0].partition("_")
    chat_id = decode_id(encoded)
    from mimi.safety import roles

    role = roles.of_conversation(app.config, channel, chat_id)
    message = Message(CLI, "console", "", {"role": role})  # the console's call: the hourly cap applies
    with heap.scope("consolidation"):
        try:
            return await of(app).run(app.agent, message, channel, chat_id, True, role)
        except Exception as exc:
            platform.print_exception(exc)
            return "{}: consolidation failed: {}".format(chosen[0], exc)
        finally:
            _done(app)


# -- a session's lines read in small slices: a small heap has no 4 KB hole --

def opened(path):
    """The session file open for reading, None when it is missing."""
    try:
        return open(path, "rb")
    except OSError:
        return None


def records(f):
    """session_lines.record_at of each valid message line of an open session file, oldest first."""
    for start, length in spans_forward(f, 0):
        record = session_lines.record_at(f, start, length)
        if record is not None:
            yield record


def sha(f, start, length):
    """The short sha256 of a line of an open file, read _READ_SLICE bytes at a time."""
    digest = hashlib.sha256()
    while length > 0:
        f.seek(start)
        data = f.read(min(_READ_SLICE, length))
        if not data:
            break
        digest.update(data)
        start += len(data)
        length -= len(data)
    return binascii.hexlify(digest.digest()[:8]).decode()


def decoded(f, pos, size):
    """The escaped JSON text of `size` bytes at pos, checked by session_lines.record_at, as str pieces of under
    _READ_SLICE bytes: each slice cut at a UTF-8 and an escape boundary, read as the JSON string '"' + slice + '"'."""
    while size > 0:
        f.seek(pos)
        data = f.read(min(_READ_SLICE, size))
        if not data:
            raise ValueError("the line changed")
        cut = len(data) if len(data) >= size else _escape_boundary(data)
        if not cut:
            raise ValueError("no boundary")
        yield jsontext.loads(b'"' + data[:cut] + b'"')
        pos += cut
        size -= cut


def _escape_boundary(data):
    """Length of the longest prefix of checked escaped text that ends neither inside a UTF-8 character nor
    inside an escape (a surrogate pair's two escapes are one)."""
    end = utf8.boundary(data)
    at = data.find(b"\\", 0, end)
    while at >= 0:
        size = session_lines.escape_at(data, at)[1]
        if not size or at + size > end:
            return at
        at = data.find(b"\\", at + size, end)
    return end
