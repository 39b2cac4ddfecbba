# One confirmation question: asked in a chat, settled once by an answer or a timeout.
import asyncio

from mimi.safety.confirm import TIMED_OUT


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
