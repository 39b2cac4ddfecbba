# The `mcp` channel: the MCP tool `ask` puts a turn of the board's own agent on the bus (session mcp_<caller>: its
# address and credential, mcp/server.py) and waits for the reply the dispatcher hands to this channel. Made at the
# first ask (mcp/server_tools.py).
import asyncio

from mimi.bus.message import MCP, Message
from mimi.channels import Channel
from mimi.platform import const, log

CHANNEL = MCP
ASKS_MAX = const(2)  # questions of MCP clients waiting for the agent at once
# An answer later than this is not waited for (it is still saved in the session): a client of the TypeScript
# SDK (Claude Desktop) gives up on a request after 60 s.
_ASK_TIMEOUT_S = const(55)
ANSWER_MAX = const(16 * 1024)  # characters of an answer returned; a longer one is cut with CUT_NOTE
CUT_NOTE = "\n\n[answer cut at {} characters]"
_FILES_MAX = const(8)  # MCP conversations kept on flash; a new caller's first question ends the one quiet longest
_FAILED_KINDS = ("error", "refused")  # agent/loop.py: a failed turn, a budget's or rate limit's refusal


class Asks(Channel):
    """The `mcp` channel (the MCP server adds it to the app's channels): a reply goes to the ask waiting for it,
    found by the number its question carried in meta (the agent sends the question's meta back as the reply's
    meta["request"])."""

    name = CHANNEL

    def __init__(self, app):
        self.app = app
        self.waiting = {}  # ask number -> [asyncio.Event, (answer, is_error) once it came]
        self._next = 1

    async def ask(self, client, text, role):
        """(answer, is_error) of one turn of the agent for `client`, acting with `role`; never raises."""
        if len(self.waiting) >= ASKS_MAX:
            return ("not asked: the board's agent is busy with {} questions of MCP clients; ask again in a "
                    "moment".format(ASKS_MAX)), True
        self._room_for(client)
        number = self._next
        self._next += 1
        slot = [asyncio.Event(), None]
        self.waiting[number] = slot
        # "mcp" in meta: an unattended turn (tools set to confirm are refused); "role": the role it acts with
        question = Message(CHANNEL, client, text, {"mcp": client, "role": role, "ask": number})
        try:
            await asyncio.wait_for(self._turn(question, slot[0]), _ASK_TIMEOUT_S)
        except asyncio.TimeoutError:
            return ("the board's agent did not answer within {} s; its answer, when it comes, is kept in the "
                    "conversation mcp_{}".format(_ASK_TIMEOUT_S, client)), True
        finally:
            del self.waiting[number]
        return slot[1]

    def _room_for(self, client):
        """A caller without a conversation yet gets one: past _FILES_MAX, the MCP conversation whose last turn is
        the oldest is removed first (no caller fills the flash with conversations)."""
        sessions = self.app.sessions
        if sessions.exists(CHANNEL, client):
            return
        from mimi.storage import files
        from mimi.storage.session_lines import SUFFIX, last_ts

        kept = [name for name in files.listdir(sessions.dir)
                if name.startswith(CHANNEL + "_") and name.endswith(SUFFIX)]
        while len(kept) >= _FILES_MAX:
            oldest = None
            for name in kept:
                ts = last_ts(files.join(sessions.dir, name))
                if oldest is None or ts < oldest[0]:
                    oldest = (ts, name)
            kept.remove(oldest[1])
            sessions.clear(oldest[1][:-len(SUFFIX)])
            log("mcp: removed the conversation {} ({} MCP conversations are kept)".format(oldest[1], _FILES_MAX))

    async def _turn(self, question, answered):
        await self.app.bus.inbound.put(question)
        await answered.wait()

    async def send(self, message):
        meta = message.meta
        request = meta.get("request")
        slot = self.waiting.get(request.get("ask")) if isinstance(request, dict) else None
        if slot is None:  # a late answer, or a message for an MCP client (nobody to hand it to)
            log("mcp: a message for {} came with no ask waiting; dropped (the session keeps answers)".format(
                message.chat_id))
            return
        text = message.content
        if len(text) > ANSWER_MAX:
            text = text[:ANSWER_MAX] + CUT_NOTE.format(ANSWER_MAX)
        slot[1] = (text, meta.get("kind") in _FAILED_KINDS)
        slot[0].set()
