# The agent loop: inbound message -> context -> streamed Claude reply (with tool rounds) -> session -> outbound.
import asyncio

from mimi import platform
from mimi.bus.message import Message
from mimi.llm.errors import ClaudeError
from mimi.llm.text import Text
from mimi.platform import const

MAX_TOOL_ROUNDS = const(10)  # then one last call without tools, so the user always gets an answer
PAUSES_MAX = const(3)  # pause_turn continuations (long server-side web searches) in one turn
MAX_TOKENS_NOTE = "\n\n[reply cut short: it reached the max_tokens limit]"
_ROUND_BREAK = "\n\n"


class Agent:
    def __init__(self, bus, claude, context, sessions, channels, network_up=None, registry=None):
        self.bus = bus
        self.claude = claude
        self.context = context
        self.sessions = sessions
        self.channels = channels  # name -> channel object (send; optional on_start, on_delta, on_tool)
        self.network_up = network_up or (lambda: True)
        self.registry = registry
        self.turns = 0
        self.failures = 0
        self.tool_calls = 0
        self.busy_with = None
        # Turn gates (budgets, rate limits): async admit(message) -> refusal text or None, at the start of a turn;
        # check_call(message) -> refusal or None before every Claude call; spent(message, result) after each.
        self.gates = []
        # After a saved turn: async hook(agent, message, session) (e.g. memory consolidation); never fails a turn.
        self.after_turn = []

    async def _admit(self, message):
        for gate in self.gates:
            refusal = await gate.admit(message)
            if refusal:
                return refusal
        return None

    def check_call(self, message):
        for gate in self.gates:
            refusal = gate.check_call(message)
            if refusal:
                return refusal
        return None

    def spent(self, message, result):
        for gate in self.gates:
            try:
                gate.spent(message, result)
            except Exception as exc:  # bookkeeping must never cost the user the reply
                print("agent: gate bookkeeping failed: {}".format(exc))

    async def run(self):
        while True:
            message = await self.bus.inbound.get()
            self.busy_with = message
            platform.collect()  # start each turn on a collected heap: fewer holes, larger free runs
            try:
                await self.handle(message)
            except Exception as exc:  # one failing message never stops the loop
                self.failures += 1
                print("agent: turn failed: {}".format(exc))
                platform.print_exception(exc)
                await self._reply(message, "Sorry, something went wrong on the device: {}".format(exc), "error")
            finally:
                self.busy_with = None
                if _media(message) is not None:  # the received file leaves flash with its turn
                    from mimi.agent import attachments

                    attachments.discard(message)
            message = None  # not kept while the loop waits for the next one (a long text: kilobytes)

    async def _reply(self, message, text, kind, streamed=False):
        # `request` carries the inbound extras back, so a channel can acknowledge what it answered.
        meta = {"kind": kind, "streamed": streamed, "request": message.meta}
        await self.bus.outbound.put(Message(message.channel, message.chat_id, text, meta))

    async def handle(self, message):
        channel = self.channels.get(message.channel)
        if not self.network_up():
            await self._reply(message, "No network: WiFi is not connected. Set it with: wifi_set <ssid> <password>", "error")
            return
        refusal = await self._admit(message)
        if refusal:
            await self._reply(message, refusal, "refused")
            return
        streaming = channel is not None and hasattr(channel, "on_delta")
        shown = [False]  # has any text reached the channel yet (rounds are separated by a blank line)
        fresh_round = [False]

        async def on_delta(text):
            if fresh_round[0]:
                fresh_round[0] = False
                if shown[0]:
                    await channel.on_delta(message.chat_id, _ROUND_BREAK)
            shown[0] = True
            await channel.on_delta(message.chat_id, text)

        async def on_tool(name):  # one of Claude's own tools (web search) started: say so in the draft
            if channel is not None and hasattr(channel, "on_tool"):
                await channel.on_tool(message.chat_id, name)

        if channel is not None and hasattr(channel, "on_start"):
            await channel.on_start(message.chat_id)
        now = platform.unix_time()
        session = _session_of(message)
        # The history stays on flash, written from the session file as the request is sent (blank turns,
        # which the API refuses, left out): one item standing for all its messages, none when there are none.
        history = self.sessions.history_pieces(session[0], session[1]) if session else None
        messages = [] if history is None else [history]
        del history
        turn = self.context.user_turn(message.content, message.channel, now)
        if _media(message) is not None:  # a photo or file: its block, read from flash as the request is sent
            from mimi.agent import attachments

            attachments.attach(turn, _media(message))
        messages.append(turn)
        del turn
        system = self.context.system_blocks(now)
        tools = self._tools()
        texts = []
        meta = message.meta if isinstance(message.meta, dict) else {}
        model = meta.get("model")  # a watcher's turn may name a smaller model
        result = None
        pauses = 0
        try:
            for round_no in range(MAX_TOOL_ROUNDS + 1):
                last = round_no == MAX_TOOL_ROUNDS
                fresh_round[0] = True
                refusal = self.check_call(message)
                if refusal:
                    texts.append(refusal)
                    if streaming:  # the text so far was shown: show why the turn stops here too
                        await on_delta(refusal)
                    break
                result = await self.claude.stream(
                    system, messages, tools, on_delta if streaming else None, "none" if last and tools else None,
                    model, on_tool,
                )
                self.spent(message, result)
                text = result.reply_text.strip()  # its pieces: a reply of many KB is never joined on this path
                if text:
                    texts.append(text)
                del text
                calls = result.tool_calls
                if result.stop_reason == "pause_turn" and pauses < PAUSES_MAX and not last:
                    pauses += 1  # a long server-side turn (web searches): send it back as is to go on
                    from mimi.llm import server_tools

                    _assistant(messages, server_tools.continued(result.content))
                    continue
                if result.stop_reason != "tool_use" or not calls or last:
                    break
                _assistant(messages, result.blocks())
                messages.append({"role": "user", "content": await self._run_tools(message, channel, calls)})
        except ClaudeError as exc:
            self.failures += 1
            await self._reply(message, exc.message, "error", streaming and shown[0])
            return
        del messages, system
        # The rounds' texts as pieces (a Text): saved, and shown, without one str the size of the reply.
        pieces = []
        for text in texts:
            if pieces:
                pieces.append(_ROUND_BREAK)
            if isinstance(text, str):  # a gate's refusal
                pieces.append(text)
            else:
                pieces.extend(text.pieces)
        del texts
        if not pieces:
            pieces.append("(Claude sent an empty reply.)")
        if result is not None and result.stop_reason == "max_tokens":
            pieces.append(MAX_TOKENS_NOTE)
        reply = Text(pieces)
        del pieces
        self._save(session, message, reply, now)
        self.turns += 1
        await self._reply(message, reply, "reply", streaming)
        for hook in self.after_turn if session else ():
            try:
                await hook(self, message, session)
            except Exception as exc:
                print("agent: after-turn step failed: {}".format(exc))

    def _tools(self):
        """The request's tools: the registry's, with Claude's own web tools as the search mode says."""
        device = self.registry.definitions() if self.registry is not None and self.registry.tools else None
        config = getattr(self.claude, "config", None)
        if config is None:
            return device
        from mimi.llm import server_tools

        left = True
        for gate in self.gates:  # the budget says when today's server searches are used up
            check = getattr(gate, "searches_left", None)
            if check is not None and not check():
                left = False
        return server_tools.definitions(config, device, left)

    async def _run_tools(self, message, channel, calls):
        """Run one round's tool calls concurrently; returns the tool_result blocks, in call order."""
        from mimi.tools import registry as registry_module

        turn = registry_module.current
        turn.clear()
        turn.update({"channel": message.channel, "chat_id": message.chat_id, "meta": message.meta})
        for call in calls:
            if channel is not None and hasattr(channel, "on_tool"):  # first: the console ends its reply line
                await channel.on_tool(message.chat_id, call["name"])
            print("agent: tool {} requested".format(call["name"]))
        self.tool_calls += len(calls)
        outcomes = await asyncio.gather(*[self.registry.execute(c["name"], c["input"]) for c in calls])
        blocks = []
        for call, outcome in zip(calls, outcomes):
            blocks.append({"type": "tool_result", "tool_use_id": call["id"], "content": outcome[0] or "(no output)",
                           "is_error": outcome[1]})
        return blocks

    def _save(self, session, message, reply, now):
        if not session:
            return
        said = message.content
        if _media(message) is not None:  # the session keeps "[photo: caption]", never the bytes
            from mimi.agent import attachments

            said = attachments.placeholder(_media(message).get("caption"), _media(message))
        try:
            self.sessions.append(session[0], session[1], "user", said, now)
            self.sessions.append(session[0], session[1], "assistant", reply, platform.unix_time())
        except OSError as exc:  # a full flash must not cost the user the reply
            print("agent: could not save the session ({}); the reply is still sent".format(exc))


def _session_of(message):
    """(channel, chat_id) whose history a turn uses and extends; None keeps it out of every session.

    A cron job's turn names the chat it answers in (meta["session"]); a heartbeat names none."""
    meta = message.meta if isinstance(message.meta, dict) else {}
    return meta.get("session", (message.channel, message.chat_id))


def _media(message):
    """meta["media"] of a message carrying a photo or file, else None."""
    meta = message.meta if isinstance(message.meta, dict) else None
    item = meta.get("media") if meta is not None else None
    return item if isinstance(item, dict) else None


def _assistant(messages, content):
    """Add Claude's blocks; after a paused turn they extend the same assistant message (one turn)."""
    if messages and messages[-1]["role"] == "assistant":
        messages[-1] = {"role": "assistant", "content": messages[-1]["content"] + content}
    else:
        messages.append({"role": "assistant", "content": content})
