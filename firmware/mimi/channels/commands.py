# The serial CLI's commands: parsing, usage hints, and what each one does.
from mimi import VERSION, platform
from mimi.channels.cmdline import nearest, params_of, split_args  # noqa: F401  (split_args: re-exported)
from mimi.config import mask
from mimi.platform import const

_NAME_SHOWN_MAX = const(24)  # a longer unknown command name is not quoted back
# Commands whose arguments are secrets: the console echoes stars for them.
SECRET_COMMANDS = ("set_api_key", "set_tg_token", "wifi_set", "set_search_key", "set_ws_token", "mqtt_auth")


class Commands:
    def __init__(self, app, console):
        self.app = app
        self.console = console
        # name: (handler, usage, fewest args, most args (-1: rest joined), description)
        self.table = {
            "help": (self.help, "help", 0, 0, "list the commands"),
            "status": (self.status, "status", 0, 0, "what is configured, connected and running"),
            "chat": (self.chat, "chat <text>", 1, -1, "talk to the agent from the console"),
            "wifi_set": (self.wifi_set, "wifi_set <ssid> <password>", 2, 2, "save WiFi credentials and reconnect"),
            "wifi_status": (self.wifi_status, "wifi_status", 0, 0, "WiFi connection, IP and signal"),
            "set_tg_token": (self.setter("tg_config", "bot_token"), "set_tg_token <token>", 1, 1, "save the Telegram bot token"),
            "set_api_key": (self.setter("llm_config", "api_key"), "set_api_key <key>", 1, 1, "save the Anthropic API key"),
            "set_model": (self.setter("llm_config", "model"), "set_model <model_id>", 1, 1, "choose the Claude model"),
            "set_max_tokens": (self.setter("llm_config", "max_tokens"), "set_max_tokens <n>", 1, 1, "longest reply, in tokens"),
            "set_llm_api": (self.setter("llm_config", "api_base"), "set_llm_api <url>", 1, 1, "Anthropic API endpoint"),
            "set_tg_api": (self.setter("tg_config", "api_base"), "set_tg_api <url>", 1, 1, "Telegram Bot API endpoint"),
            "config_show": (self.config_show, "config_show", 0, 0, "every setting, secrets masked"),
            "config_set": (self.config_set, "config_set <namespace.key> <value>", 2, -1, "change any setting (see config_show)"),
            "tool_list": (self.tool_list, "tool_list", 0, 0, "the tools the agent can use"),
            "tool_exec": (self.tool_exec, "tool_exec <name> [json]", 1, -1, "run a tool by hand, e.g. tool_exec get_current_time {}"),
            "config_reset": (self.config_reset, "config_reset", 0, 0, "erase every setting (back to defaults)"),
            "memory_read": (self.memory_read, "memory_read", 0, 0, "print MEMORY.md"),
            "memory_write": (self.memory_write, "memory_write <text>", 1, -1, "replace MEMORY.md"),
            "session_list": (self.session_list, "session_list", 0, 0, "list the chat sessions"),
            "session_clear": (self.session_clear, "session_clear <chat_id>", 1, 1, "forget one chat's history"),
            "heap_info": (self.heap_info, "heap_info", 0, 0, "free and used heap"),
            "restart": (self.restart, "restart", 0, 0, "reboot the device"),
        }

    def add(self, name, handler, usage, fewest, most, description):
        """Let a layer (Telegram, gateway...) add its commands: handler is async, gets str args."""
        self.table[name] = (handler, usage, fewest, most, description)

    def out(self, text):
        platform.console_write(text + "\n")

    async def execute(self, line):
        line = line.strip()
        name = line.split(None, 1)[0] if line else ""
        if not name:
            return
        entry = self.table.get(name)
        if entry is None:
            self.unknown(name)
            return
        handler, usage, fewest, most, _ = entry
        try:  # most < 0: the last argument is prose, the rest of the line as typed
            args = split_args(line, params_of(usage) if most < 0 else -1)
        except ValueError as exc:
            self.out("error: {}".format(exc))
            return
        rest = args[1:]
        if rest and most < 0 and not rest[-1]:
            rest.pop()  # an empty prose argument is a missing one
        if len(rest) < fewest or (most >= 0 and len(rest) > most):
            self.out("usage: {}".format(usage))
            return
        try:
            await handler(*rest)
        except (ValueError, KeyError, OSError) as exc:
            self.out("error: {}".format(_safe(exc)))

    def unknown(self, name):
        # A long first word may be a pasted key or token: it is not quoted back.
        shown = "unknown command '{}'".format(name) if len(name) <= _NAME_SHOWN_MAX else "unknown command"
        near = nearest(name, self.table)
        if near:
            self.out("{}; did you mean {}?".format(shown, " or ".join(near[:3])))
        else:
            self.out("{}; type help for the list, or chat <text> to talk to the agent".format(shown))

    async def help(self):
        width = max(len(entry[1]) for entry in self.table.values())
        for name in sorted(self.table):
            entry = self.table[name]
            self.out("  {}  {}".format(entry[1] + " " * (width - len(entry[1])), entry[4]))

    def setter(self, ns, key):
        async def set_value(value):
            self.app.config.set(ns, key, value)
            shown = [row[2] for row in self.app.config.shown() if row[0] == ns and row[1] == key]
            self.out("{}.{} = {} (saved; in effect now)".format(ns, key, shown[0] if shown else "?"))

        return set_value

    async def chat(self, text):
        await self.console.chat(text)

    async def wifi_set(self, ssid, password):
        self.app.config.set("wifi_config", "ssid", ssid)
        self.app.config.set("wifi_config", "password", password)
        self.out("WiFi credentials saved for '{}' (password {}); reconnecting".format(ssid, mask(password, True)))

    async def wifi_status(self):
        for line in self.app.wifi.describe():
            self.out(line)

    async def config_show(self):
        for ns, key, shown in self.app.config.shown():
            self.out("  {}.{} = {}".format(ns, key, shown))

    async def config_set(self, name, value):
        ns, _, key = name.partition(".")
        await self.setter(ns, key)(value)

    async def tool_list(self):
        registry = self.app.registry
        for name in sorted(registry.tools):  # the definitions' order
            self.out("  {}  {}".format(name, registry.tools[name].description.split("\n")[0][:90]))
        if not registry.tools:
            self.out("(no tools loaded)")
        for warning in registry.warnings:
            self.out("  warning: " + warning)

    async def tool_exec(self, name, text="{}"):
        from mimi import jsontext

        try:
            data = jsontext.loads(text)
        except ValueError:
            self.out('error: the input must be JSON, e.g. tool_exec {} {{"key": "value"}}'.format(name))
            return
        from mimi.tools import registry

        registry.current.clear()  # a tool run by hand acts for the console
        registry.current.update({"channel": "cli", "chat_id": "console", "meta": None})
        result, is_error = await self.app.registry.execute(name, data)
        self.out(("error: " if is_error else "") + result)

    async def config_reset(self):
        self.app.config.reset()
        self.out("every setting erased; defaults in effect")

    async def memory_read(self):
        text = self.app.memory.read()
        self.out(text if text else "(MEMORY.md is empty)")

    async def memory_write(self, text):
        self.app.memory.write(text + "\n")
        self.out("MEMORY.md replaced ({} bytes)".format(len(text.encode()) + 1))

    async def session_list(self):
        rows = self.app.sessions.list()
        if not rows:
            self.out("(no sessions)")
        for row in rows:
            lines = "" if row[2] is None else ", {} lines".format(row[2])
            self.out("  {}  ({} bytes{})".format(row[0], row[1], lines))

    async def session_clear(self, chat_id):
        removed = self.app.sessions.clear(chat_id)
        self.out("cleared {} session file(s) for '{}'".format(removed, chat_id))

    async def heap_info(self):
        platform.collect()  # figures after a collection: what is really held
        free, used = platform.heap_info()
        if free is None:
            self.out("heap: not measured on this runtime")
        else:
            self.out("heap: {} bytes free, {} used, {} total".format(free, used, free + used))

    async def restart(self):
        self.out("restarting...")
        platform.reset()

    async def status(self):
        app = self.app
        cfg = app.config
        up = (platform.ticks_diff(platform.ticks_ms(), app.started_ms)) // 1000
        self.out("MimiClaw-Py {}  up {} s".format(VERSION, up))
        self.out("  WiFi: {}".format(app.wifi.summary()))
        self.out("  Claude: model {} at {}, key {}".format(
            cfg.get("llm_config", "model"), cfg.get("llm_config", "api_base"),
            "set" if cfg.is_set("llm_config", "api_key") else "MISSING (set_api_key <key>)"))
        self.out("  Telegram: token {}".format(
            "set" if cfg.is_set("tg_config", "bot_token") else "not set (set_tg_token <token>)"))
        agent = app.agent
        self.out("  Agent: {} turns, {} failed, {}".format(
            agent.turns, agent.failures, "busy" if agent.busy_with else "idle"))
        self.out("  Queues: inbound {}/{}, outbound {}/{}".format(
            app.bus.inbound.qsize(), app.bus.inbound.maxsize, app.bus.outbound.qsize(), app.bus.outbound.maxsize))
        free, used = platform.heap_info()
        if free is not None:
            self.out("  Heap: {} free, {} used".format(free, used))


def _safe(exc):
    # Exception text from the config layer never holds a secret; others are shown by type and text.
    return str(exc) or exc.__class__.__name__
