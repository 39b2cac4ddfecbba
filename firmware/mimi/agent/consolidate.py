# Memory that consolidates itself: a session's oldest turns summarised into the daily note (the owner's own chats;
# any other chat keeps its summary as its own first turn), then dropped.
#
# Crash-safe by a journal: the summary is kept on flash (sessions/<stem>.summary) before anything else is
# written, every later step checks whether it already happened, and the journal goes last. A power cut
# before the journal costs one more Claude call; after it, the next run finishes the same summary.
#
# Rare, so loaded only for a run: sessions.may_consolidate tells after each turn whether one may be due, and
# this module and summary_call are forgotten again when no run is left (_forget). What a run looks at before
# its summary call is consolidate_plan.py, let go before the call; what follows it (the note, the facts, the
# session cut) is consolidate_apply.py, loaded after: the heap at the call, a run's highest point, holds only
# what the call needs.
import json

from mimi import jsontext, platform
from mimi.agent import summary_call
from mimi.bus.message import CLI, SYSTEM
from mimi.platform import const, log
from mimi.safety.roles import OWNER
from mimi.storage import files, session_read, space
from mimi.storage.session_lines import SUFFIX, parse_message
from mimi.storage.sessions import CONSOLIDATE_AT, HISTORY_LIMIT, decode_id

KEEP = HISTORY_LIMIT // 2  # messages left in the session afterwards
SUMMARY_TOKENS = const(500)  # max_tokens of the summary call
_NOTE_ROOM = const(720)  # bytes a daily note must still have free for a summary line
STEPS = ("journal", "note", "memory", "session")  # where a test may cut the power
_PLAN = "mimi.agent.consolidate_plan"  # what a run looks at before its call: let go before it


def _plan():  # imported where used, never kept in a frame that waits for the call (consolidate_plan.py)
    from mimi.agent import consolidate_plan

    return consolidate_plan


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
        return _plan().due(self.app.sessions, channel, chat_id)

    async def run(self, agent, message, channel, chat_id, force=False, role=None):
        """Consolidate one session when due (always when force); returns a line saying what happened."""
        sessions = self.app.sessions
        stem = sessions.stem(channel, chat_id)
        if stem in self.busy:
            return "{}: already being consolidated".format(stem)
        self.busy.append(stem)
        try:
            journal = _plan().read_journal(sessions, stem)
            if journal is None:
                total = _plan().count(self._path(stem))
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
        n, last = _plan().oldest(self._path(stem), total, KEEP)
        if not n:
            return "nothing to consolidate"
        refusal = agent.check_call(message, "summary")  # the budget and the hourly cap apply as to any call
        if refusal:
            return "not now ({})".format(refusal.split(".")[0])
        facts_ok = _plan().facts_allowed(self.app, role)
        platform.unload(_PLAN)  # the call holds only what it needs
        system = summary_call.system(facts_ok)
        prompt = {"role": "user", "content": Transcript(self._path(stem), n)}
        model = self.app.config.get("llm_config", "watch_model") or None  # claude's cheaper model, when set
        from mimi.llm.errors import ModelError
        from mimi.llm.models import Route

        try:  # llm_for summary: a profile of its own (a small local model) before the chain
            result = await agent.models.stream(system, [prompt], None, None, None, model,
                                               max_tokens=SUMMARY_TOKENS, route=Route("summary"))
        except ModelError as exc:
            return "the summary call failed ({}); the turns stay".format(exc.message)
        agent.spent(message, result)
        summary, facts = summary_call.parse_reply(result.text)
        if not summary:
            return "Claude sent no summary; the turns stay"
        journal = {"v": 1, "date": date, "at": platform.utc_stamp()[11:16], "n": n, "last": last,
                   "summary": summary, "facts": facts if facts_ok else [], "chat": into_chat}
        path = self.app.sessions.journal_path(stem)
        space.guarded(lambda: files.write_atomic(path, json.dumps(journal)), "a conversation summary", (path,))
        self._step("journal")
        return journal

    async def _apply(self, stem, journal, channel, chat_id, role):
        """The journal carried out (consolidate_apply.py: loaded after the summary call, not during it)."""
        from mimi.agent import consolidate_apply

        return await consolidate_apply.apply(self, stem, journal, channel, chat_id, role)

    def _drop(self, stem, n, last):
        from mimi.agent import consolidate_apply

        return consolidate_apply.drop(self, stem, n, last)

    def _step(self, name):
        if self.checkpoint is not None:
            self.checkpoint(name)


def _messages(f, n):
    """(role, text pieces, cut) of the session's first n messages, as the summariser is shown them (_head)."""
    for record in session_read.records(f):
        if not n:
            return
        n -= 1
        text, cut = _head(f, record)
        yield record[4], text, cut


class Transcript:
    """The summary call's user message: the session's oldest n messages as summary_call.transcript gives them,
    read from the session file as the request is written (once for its length, once for its bytes) and escaped
    piece by piece: a message at a time in RAM, never the whole transcript (up to TRANSCRIPT_MAX characters)."""

    def __init__(self, path, n):
        self.path, self.n = path, n
        self._len = None

    def __len__(self):
        if self._len is None:
            self._len = sum(len(chunk) for chunk in self.chunks())
        return self._len

    def chunks(self):
        f = session_read.opened(self.path)
        if f is None:
            raise OSError(2, "the conversation is gone: " + self.path)
        with f:
            for piece in summary_call.transcript(_messages(f, self.n)):
                yield from jsontext.escaped(piece)

    def text(self):
        """The whole text (for inspection and tests; requests send it in pieces)."""
        return "".join(jsontext.loads(b'"' + chunk + b'"') for chunk in self.chunks())


def _head(f, record):
    """(text pieces, cut) of a valid message line (session_lines.record_at) as the summariser is shown it.
    A line in session_lines.line_for's form is decoded a slice at a time (session_read.decoded); any other
    line is parsed whole."""
    start, length, at, size = record[:4]
    if size < 0:
        return [], False  # blank
    if at:
        try:
            return summary_call.head(session_read.decoded(f, start + at, size))
        except ValueError:
            pass
    f.seek(start)
    message = parse_message(f.read(length))
    return summary_call.head((message["content"],)) if message is not None else ([], False)


async def after_turn(app, agent, message, session):
    """The agent's hook after a saved turn (once sessions.may_consolidate said it may be due): consolidate the
    session when it has reached its cap."""
    if not session or session[0] == SYSTEM:
        return
    consolidator = of(app)
    try:
        if consolidator.due(session[0], session[1]):
            from mimi.channels.system import requesting_chat
            from mimi.safety import roles

            meta = message.meta
            role = roles.of_turn(app.config, message.channel, meta, requesting_chat(message.channel, message.chat_id))
            role = roles.of_conversation(app.config, session[0], session[1], role)  # whose chat: only the owner's
            log("consolidate: " + await consolidator.run(agent, message, session[0], session[1], role=role))
    except Exception as exc:  # consolidation must never cost the user anything
        log("consolidate: failed: {}".format(exc))
        platform.print_exception(exc)
    finally:
        _forget(app)


def of(app):
    consolidator = getattr(app, "consolidator", None)
    if consolidator is None:
        consolidator = app.consolidator = Consolidator(app)
    return consolidator


def _forget(app):
    """After a run, unless another is under way (two chats may consolidate at once): the consolidator, this
    module, summary_call and the session reader are let go, their heap freed; the next run imports them again."""
    consolidator = getattr(app, "consolidator", None)
    if consolidator is not None and consolidator.busy:
        return
    app.consolidator = None
    platform.unload(summary_call.__name__)
    platform.unload(session_read.__name__)
    platform.unload("mimi.agent.consolidate_apply")
    platform.unload(_PLAN)
    platform.unload(__name__)


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
    try:
        return await of(app).run(app.agent, message, channel, chat_id, True, role)
    except Exception as exc:
        platform.print_exception(exc)
        return "{}: consolidation failed: {}".format(chosen[0], exc)
    finally:
        _forget(app)
