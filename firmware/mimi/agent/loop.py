# The agent loop: inbound message -> context -> streamed model reply (with tool rounds) -> session -> outbound.
import asyncio

from mimi import heap, platform
from mimi.bus.message import Message
from mimi.health import memory_errors
from mimi.llm.errors import ModelError
from mimi.llm.models import Route, job_of, note
from mimi.llm.text import Text
from mimi.platform import const

_MAX_TOOL_ROUNDS = const(10)  # then one last call without tools, so the user always gets an answer
PAUSES_MAX = const(3)  # pause_turn continuations (long server-side web searches) in one turn
MEMORY_REPLY = "Sorry, the device ran short of memory while answering this. Please try again in a moment."
MAX_TOKENS_NOTE = "\n\n[reply cut short: it reached the max_tokens limit]"
_ROUND_BREAK = "\n\n"
VOICE_RETRY = "/retry"  # sends a voice note kept after a failed transcription again (voice/heard.py)


class Agent:
    def __init__(self, bus, models, context, sessions, channels, network_up=None, registry=None, config=None):
        self.bus = bus
        self.models = models  # llm/models.py: claude, or the chain of model profiles
        self.context = context
        self.sessions = sessions
        self.channels = channels  # name -> channel object (send; optional on_start, on_delta, on_tool)
        self.network_up = network_up or (lambda: True)
        self.registry = registry
        self.config = config  # the settings a turn's role is worked out from (tools/turn.py)
        self.turns = 0
        self.failures = 0
        self.tool_calls = 0
        self.busy_with = None
        # Turn gates (budgets, rate limits): async admit(message) -> refusal text or None, at the start of a turn;
        # check_call(message, job) -> refusal or None before every model call; spent(message, result) after each.
        self.gates = []
        # After a saved turn: async hook(agent, message, session) (e.g. memory consolidation); never fails a turn.
        self.after_turn = []

    async def _admit(self, message):
        for gate in self.gates:
            refusal = await gate.admit(message)
            if refusal:
                return refusal
        return None

    def check_call(self, message, job=None):
        for gate in self.gates:
            refusal = gate.check_call(message, job)
            if refusal:
                return refusal
        return None

    def spent(self, message, result):
        for gate in self.gates:
            try:
                gate.spent(message, result)
            except Exception as exc:  # bookkeeping must never cost the user the reply
                platform.log("agent: gate bookkeeping failed: {}".format(exc))

    async def run(self):
        while True:
            try:
                message = await self.bus.inbound.get()
                self.busy_with = message
                platform.collect()  # start each turn on a collected heap: fewer holes, larger free runs
                try:
                    await self.handle(message)
                except MemoryError as exc:  # collected and told (owner, console); the reply is pre-made
                    self.failures += 1
                    memory_errors.short("agent", exc)
                    await self._reply(message, MEMORY_REPLY, "error")
                except Exception as exc:  # one failing message never stops the loop
                    self.failures += 1
                    platform.log("agent: turn failed: {}".format(exc))
                    platform.print_exception(exc)
                    await self._reply(message, "Sorry, something went wrong on the device: {}".format(exc), "error")
                finally:
                    self.busy_with = None
                    if _media(message) is not None:  # the received file leaves flash with its turn
                        from mimi.agent import attachments

                        attachments.discard(message)
                message = None  # not kept while the loop waits for the next one (a long text: kilobytes)
            except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
                memory_errors.short("agent", exc)
                await asyncio.sleep(memory_errors.AGAIN_S)

    async def _reply(self, message, text, kind, streamed=False):
        # `request` carries the inbound extras back, so a channel can acknowledge what it answered.
        meta = {"kind": kind, "streamed": streamed, "request": message.meta}
        await self.bus.outbound.put(Message(message.channel, message.chat_id, text, meta))

    async def handle(self, message):
        if not self.network_up():
            await self._reply(message, "No network: WiFi is not connected. Set it with: wifi_set <ssid> <password>",
                              "error")
            return
        refusal = await self._admit(message)
        if refusal:
            await self._reply(message, refusal, "refused")
            return
        if message.text == VOICE_RETRY or (_media(message) or {}).get("kind") == "audio":
            from mimi.voice import heard  # a voice note: its transcript is the turn's text

            heard_as = await heard.transcribed(self, message)
            if isinstance(heard_as, str):  # no service, a limit, a failure: said, and no model call
                await self._reply(message, heard_as, "refused")
                return
            message = heard_as
        exchange = Exchange(self, message)
        try:
            await exchange.converse()
            await exchange.finish()
        except ModelError as exc:
            self.failures += 1
            await self._reply(message, exc.message, "error", exchange.streaming and exchange.shown)
            return
        reply, session, now, streaming = exchange.reply(), exchange.session, exchange.now, exchange.streaming
        note = exchange.note
        del exchange
        self._save(session, message, reply, now)
        self.turns += 1
        if note:  # which profile answered, when not the first: shown, not kept in the session
            reply = Text(reply.pieces + [note])
        await self._reply(message, reply, "reply", streaming)
        for hook in self.after_turn if session else ():
            try:
                await hook(self, message, session)
            except Exception as exc:
                platform.log("agent: after-turn step failed: {}".format(exc))

    def tools(self, server=True, found=(), model=None):
        """The request's tools: the registry's core tools and those find_tools found this turn (tools/finder.py),
        with Claude's own web tools as the search mode says (server False: for a model without them,
        llm/claude_tools.py); for a Claude model that takes the tool search tool, every tool, the others deferred."""
        registry, config = self.registry, self.config
        has = registry is not None and registry.tools
        if config is None:
            return registry.offered(found) if has else None
        from mimi.llm import claude_tools

        defer = bool(server and claude_tools.searches_tools(model))
        device = (registry.definitions() if defer else registry.offered(found)) if has else None
        left = True
        for gate in self.gates:  # the budget says when today's server searches are used up
            check = getattr(gate, "searches_left", None)
            if check is not None and not check():
                left = False
        return claude_tools.definitions(config, device, left, server, defer)  # made for the call: no idle heap

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
            platform.log("agent: could not save the session ({}); the reply is still sent".format(exc))


class Exchange:
    """One turn of the agent, step by step: the request built from flash (start), the model's rounds streamed
    with the tools they ask for run between them (converse), the rounds' texts joined as pieces (reply)."""

    def __init__(self, agent, message):
        self.agent, self.message = agent, message
        self.channel = agent.channels.get(message.channel)  # channels/__init__.py Channel
        self.streaming = self.channel is not None and self.channel.streams
        self.shown = False  # has any text reached the channel yet (rounds are separated by a blank line)
        self.fresh_round = False
        self.now = platform.unix_time()
        self.session = _session_of(message)
        self.texts = []  # each round's reply text (a Text), or a gate's refusal (a str)
        self.stop_reason = self.profile = None  # the last round's: why it stopped, which profile answered
        self.turn = None  # who the tools run for (tools/turn.py), made at the first tool call
        self.route = Route(job_of(message.meta))  # which model profile answers (llm/models.py)
        self.note = None  # "answered by <profile> (...)", when not the chain's first
        self.fitting = None  # (context, now, guest): the system prompt as a small window trims it (llm/window.py)

    async def on_delta(self, text):
        if self.fresh_round:
            self.fresh_round = False
            if self.shown:
                await self.channel.on_delta(self.message.chat_id, _ROUND_BREAK)
        self.shown = True
        await self.channel.on_delta(self.message.chat_id, text)

    async def on_tool(self, name):  # one of Claude's own tools (web search) started: say so in the draft
        if self.channel is not None:
            await self.channel.on_tool(self.message.chat_id, name)

    def _request(self):
        """(messages, system, tools): the history stays on flash, written from the session file as the
        request is sent (blank turns, which the API refuses, left out): one item standing for all its
        messages, none when there are none; a photo or file is read from flash as the request is sent."""
        agent, message = self.agent, self.message
        history = agent.sessions.history_pieces(self.session[0], self.session[1]) if self.session else None
        messages = [] if history is None else [history]
        del history
        turn = agent.context.user_turn(message.content, message.channel, self.now)
        if _media(message) is not None:
            from mimi.agent import attachments

            attachments.attach(turn, _media(message))
        messages.append(turn)
        guest = not _owners_own(agent.config, message)
        self.fitting = (agent.context, self.now, guest)  # the prompt a small model's window trims (llm/window.py)
        return messages, agent.context.system_blocks(self.now, guest), self.tools

    def tools(self, server=True, model=None):
        """The turn's tools for a call to that model (Agent.tools): the core ones, and those find_tools found so
        far."""
        return self.agent.tools(server, self.turn.found if self.turn is not None else (), model)

    async def converse(self):
        """The model's rounds until it stops asking for tools (at most _MAX_TOOL_ROUNDS, then one without)."""
        agent, message = self.agent, self.message
        if self.channel is not None:
            await self.channel.on_start(message.chat_id)
        messages, system, tools = self._request()
        meta = message.meta
        model = meta.get("model")  # a watcher's turn may name a smaller model
        pauses = 0
        for round_no in range(_MAX_TOOL_ROUNDS + 1):
            last = round_no == _MAX_TOOL_ROUNDS
            self.fresh_round = True
            refusal = agent.check_call(message, self.route.job)
            if refusal:
                self.texts.append(refusal)
                if self.streaming:  # the text so far was shown: show why the turn stops here too
                    await self.on_delta(refusal)
                return
            self.route.shown = self.shown
            result = await agent.models.stream(
                system, messages, tools=tools, on_delta=self.on_delta if self.streaming else None,
                tool_choice="none" if last else None, model=model, on_tool=self.on_tool, route=self.route,
                fitting=self.fitting)
            agent.spent(message, result)
            self._noted()
            self.stop_reason, self.profile = result.stop_reason, getattr(result, "profile", None)
            text = result.reply_text.strip()  # its pieces: a reply of many KB is never joined on this path
            if text:
                self.texts.append(text)
            del text
            calls = result.tool_calls
            if self.stop_reason == "pause_turn" and pauses < PAUSES_MAX and not last:
                pauses += 1  # a long server-side turn (web searches): send it back as is to go on
                from mimi.llm import claude_tools

                _assistant(messages, claude_tools.continued(result.content))
                result = None
                continue
            if self.stop_reason != "tool_use" or not calls or last:
                return
            _assistant(messages, result.blocks())
            # The round's reader is let go before the tools run and the next call: it holds its module's code,
            # which a board without PSRAM unloads after each call and loads again for the next (two copies).
            result = None
            messages.append({"role": "user", "content": await self._run_tools(calls)})

    def _noted(self):
        """The reply's line naming the profile that answered, when it was not the first (llm_note)."""
        said = note(self.route)
        if said and self.agent.config is not None and self.agent.config.get("llm_config", "note"):
            self.note = said

    async def finish(self):
        """What the reply ends with beyond the model's text (reply(): the max_tokens note; the note of the profile
        that answered), streamed as its last pieces where the rest was streamed."""
        if not (self.streaming and self.shown):
            return
        if self.stop_reason == "max_tokens":
            await self.channel.on_delta(self.message.chat_id, MAX_TOKENS_NOTE)
        if self.note:
            await self.channel.on_delta(self.message.chat_id, self.note)

    async def _run_tools(self, calls):
        """Run one round's tool calls concurrently, for this turn; the tool_result blocks, in call order."""
        agent, message = self.agent, self.message
        if self.turn is None:
            from mimi.tools import turn

            self.turn = turn.of(agent.config, message.channel, message.chat_id, message.meta)
        self.turn.profile = self.profile  # the audit log says which model asked
        for call in calls:
            if self.channel is not None:  # first: the console ends its line
                await self.channel.on_tool(message.chat_id, call["name"])
            platform.log("agent: tool {} requested".format(call["name"]))
        agent.tool_calls += len(calls)
        with heap.scope("tool"):  # the round's tools share their code; on a tight heap it goes after the round
            outcomes = await asyncio.gather(*[agent.registry.execute(c["name"], c["input"], self.turn) for c in calls])
        blocks = []
        for call, outcome in zip(calls, outcomes):
            blocks.append({"type": "tool_result", "tool_use_id": call["id"], "content": outcome[0] or "(no output)",
                           "is_error": outcome[1]})
        return blocks

    def reply(self):
        """The rounds' texts as pieces (a Text): saved, and shown, without one str the size of the reply."""
        pieces = []
        for text in self.texts:
            if pieces:
                pieces.append(_ROUND_BREAK)
            if isinstance(text, str):  # a gate's refusal
                pieces.append(text)
            else:
                pieces.extend(text.pieces)
        self.texts = None
        if not pieces:
            pieces.append("(Claude sent an empty reply.)")
        if self.stop_reason == "max_tokens":
            pieces.append(MAX_TOKENS_NOTE)
        return Text(pieces)


def _session_of(message):
    """(channel, chat_id) whose history a turn uses and extends; None keeps it out of every session.

    A cron job's turn names the chat it answers in (meta["session"]); a heartbeat names none."""
    return message.meta.get("session", (message.channel, message.chat_id))


def _owners_own(config, message):
    """True for a turn acting as the owner in a chat only the owner reads (safety/roles.py of_conversation): its
    prompt carries the owner's profile, memory and notes; any other turn's does not (it could repeat them)."""
    from mimi.channels.system import requesting_chat
    from mimi.safety import roles

    asker = requesting_chat(message.channel, message.chat_id)
    where = _session_of(message) or asker  # the chat whose history it extends, else the one it answers in
    role = roles.of_turn(config, message.channel, message.meta, asker)
    return roles.of_conversation(config, where[0], where[1], role) == roles.OWNER


def _media(message):
    """meta["media"] of a message carrying a photo or file, else None."""
    item = message.meta.get("media")
    return item if isinstance(item, dict) else None


def _assistant(messages, content):
    """Add Claude's blocks; after a paused turn they extend the same assistant message (one turn)."""
    if messages and messages[-1]["role"] == "assistant":
        messages[-1] = {"role": "assistant", "content": messages[-1]["content"] + content}
    else:
        messages.append({"role": "assistant", "content": content})
