# Confirmation questions: "may I run this tool?" asked in a chat, answered by a button, a frame or a line.
# Loaded with the first question (safety/policy.py): a board whose owner confirms nothing never loads it.
import asyncio
import os

from mimi.platform import const

APPROVED = "approved"
DENIED = "denied"
TIMED_OUT = "timed out"
OUTCOME_SHOWN = {APPROVED: "Approved \u2705", DENIED: "Denied \u274c", TIMED_OUT: "Timed out \u231b (not run)"}
QUESTIONS_MAX = const(8)  # open at once; more are denied at once
INPUT_SHOWN_MAX = const(300)  # characters of a tool input quoted in a question
ID_MAX = const(16)


SETTLED, STALE, NOT_YOURS = "settled", "stale", "not yours"  # what became of an answer (answer())


def answer(app, channel, chat_id, qid, approve, may_answer=None):
    """A button's or a frame's answer to question qid, asked in this channel and chat: SETTLED (approved or
    denied, as `approve` says), STALE (no such question open there: answered, expired, an old boot's) or
    NOT_YOURS (may_answer(question) refused who answered). Telegram and the web chat both answer through it."""
    questions = getattr(getattr(app, "policy", None), "questions", None)  # None until a first question
    question = questions.get(qid) if questions is not None and qid else None
    if question is None or question.outcome is not None or question.channel != channel \
            or question.chat_id != str(chat_id):
        return STALE
    if may_answer is not None and not may_answer(question):
        return NOT_YOURS
    question.settle(APPROVED if approve else DENIED)
    return SETTLED


class Questions:
    """The open questions, by id, for every channel."""

    def __init__(self):
        self.open = {}
        self._counter = 0
        self._boot = "".join("{:02x}".format(b) for b in os.urandom(2))  # an old boot's buttons never match

    def ask(self, tool, input_text, channel, chat_id, asker=None, needed=None):
        """A new open Question, or None when too many are open already."""
        if len(self.open) >= QUESTIONS_MAX:
            return None
        self._counter += 1
        qid = "{}{:x}".format(self._boot, self._counter)[:ID_MAX]
        if len(input_text) > INPUT_SHOWN_MAX:
            input_text = input_text[:INPUT_SHOWN_MAX] + "\u2026"
        question = Question(qid, self._counter, tool, input_text, channel, str(chat_id), asker, needed)
        self.open[qid] = question
        return question

    def close(self, question):
        self.open.pop(question.id, None)

    def get(self, qid):
        return self.open.get(qid)

    def waiting_on(self, channel):
        """True while a question in this channel waits for its answer."""
        for question in self.open.values():
            if question.channel == channel and question.outcome is None:
                return True
        return False

    def oldest(self, channel):
        """The oldest unanswered question of a channel (the console answers them in order), or None."""
        found = None
        for question in self.open.values():
            if question.channel == channel and question.outcome is None:
                if found is None or question.seq < found.seq:
                    found = question
        return found


class Question:
    """One open question; `outcome` stays None until answered or timed out."""

    __slots__ = ("id", "seq", "tool", "input_text", "channel", "chat_id", "asker", "needed", "outcome", "_done")

    def __init__(self, qid, seq, tool, input_text, channel, chat_id, asker, needed):
        self.id = qid
        self.seq = seq
        self.tool = tool
        self.input_text = input_text  # the tool input as JSON, secrets masked, cut
        self.channel = channel
        self.chat_id = chat_id
        self.asker = asker  # the Telegram user who asked, or None (console, gateway, system turns)
        self.needed = needed  # the role a Telegram user needs to answer when there is no asker
        self.outcome = None
        self._done = asyncio.Event()

    def text(self):
        return "May I run {} with {}?".format(self.tool, self.input_text)

    def settle(self, outcome):
        """Record the first outcome; False when it was settled already."""
        if self.outcome is not None:
            return False
        self.outcome = outcome
        self._done.set()
        return True

    async def wait(self, seconds):
        """The outcome: approved, denied, or timed out after `seconds`."""
        try:
            await asyncio.wait_for(self._done.wait(), seconds)
        except asyncio.TimeoutError:
            self.settle(TIMED_OUT)
        return self.outcome


def refusal(outcome, name, seconds):
    """None for an approved call, else why it was not run."""
    if outcome == APPROVED:
        return None
    if outcome == DENIED:
        return "the user denied running {}; it was not run".format(name)
    return "nobody approved {} within {} s; it was not run".format(name, seconds)


def parse_answer(line):
    """True for yes, False for no, None for anything else (a console answer)."""
    word = line.strip().lower()
    if word in ("y", "yes", "approve", "ok"):
        return True
    if word in ("n", "no", "deny"):
        return False
    return None
