# The agent loop: inbound message -> context -> streamed Claude reply -> session -> outbound.
from mimi import platform
from mimi.bus.message import Message
from mimi.llm.errors import ClaudeError

MAX_TOKENS_NOTE = "\n\n[reply cut short: it reached the max_tokens limit]"


class Agent:
    def __init__(self, bus, claude, context, sessions, channels, network_up=None):
        self.bus = bus
        self.claude = claude
        self.context = context
        self.sessions = sessions
        self.channels = channels  # name -> channel object (send, optional on_start/on_delta)
        self.network_up = network_up or (lambda: True)
        self.turns = 0
        self.failures = 0
        self.busy_with = None

    async def run(self):
        while True:
            message = await self.bus.inbound.get()
            self.busy_with = message
            try:
                await self.handle(message)
            except Exception as exc:  # one failing message never stops the loop
                self.failures += 1
                print("agent: turn failed: {}".format(exc))
                platform.print_exception(exc)
                await self._reply(message, "Sorry, something went wrong on the device: {}".format(exc), "error")
            finally:
                self.busy_with = None

    async def _reply(self, message, text, kind, streamed=False):
        # `request` carries the inbound extras back, so a channel can acknowledge what it answered.
        meta = {"kind": kind, "streamed": streamed, "request": message.meta}
        await self.bus.outbound.put(Message(message.channel, message.chat_id, text, meta))

    async def handle(self, message):
        channel = self.channels.get(message.channel)
        if not self.network_up():
            await self._reply(message, "No network: WiFi is not connected. Set it with: wifi_set <ssid> <password>", "error")
            return
        on_delta = None
        if channel is not None and hasattr(channel, "on_delta"):
            chat_id = message.chat_id

            async def on_delta(text):
                await channel.on_delta(chat_id, text)

        if channel is not None and hasattr(channel, "on_start"):
            await channel.on_start(message.chat_id)
        now = platform.unix_time()
        # Empty turns are refused by the API: a blank line in an old session must not break this one.
        messages = [m for m in self.sessions.history(message.channel, message.chat_id) if m["content"].strip()]
        messages.append(self.context.user_turn(message.content, message.channel, now))
        system = self.context.system_blocks(now)
        streamed = on_delta is not None
        try:
            result = await self.claude.stream(system, messages, None, on_delta)
        except ClaudeError as exc:
            self.failures += 1
            await self._reply(message, exc.message, "error", streamed)
            return
        del messages, system
        reply = result.text.strip() or "(Claude sent an empty reply.)"
        if result.stop_reason == "max_tokens":
            reply += MAX_TOKENS_NOTE
        self._save(message, reply, now)
        self.turns += 1
        await self._reply(message, reply, "reply", streamed)

    def _save(self, message, reply, now):
        try:
            self.sessions.append(message.channel, message.chat_id, "user", message.content, now)
            self.sessions.append(message.channel, message.chat_id, "assistant", reply, platform.unix_time())
        except OSError as exc:  # a full flash must not cost the user the reply
            print("agent: could not save the session ({}); the reply is still sent".format(exc))
