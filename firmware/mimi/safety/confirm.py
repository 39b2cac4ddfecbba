# Confirmation questions: "may I run this tool?" asked in a chat, answered by a button, a frame or a line.
import os

from mimi.platform import const

APPROVED = "approved"
DENIED = "denied"
TIMED_OUT = "timed out"
OUTCOME_SHOWN = {APPROVED: "Approved \u2705", DENIED: "Denied \u274c", TIMED_OUT: "Timed out \u231b (not run)"}
QUESTIONS_MAX = const(8)  # open at once; more are denied at once
INPUT_SHOWN_MAX = const(300)  # characters of a tool input quoted in a question
ID_MAX = const(16)


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
        from mimi.safety.confirm_question import Question  # the code of a question, loaded at the first one

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


def parse_answer(line):
    """True for yes, False for no, None for anything else (a console answer)."""
    word = line.strip().lower()
    if word in ("y", "yes", "approve", "ok"):
        return True
    if word in ("n", "no", "deny"):
        return False
    return None
