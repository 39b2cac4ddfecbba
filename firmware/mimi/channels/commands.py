# The serial CLI's commands: parsing, usage hints, and what each one does.
from mimi import heap, platform, table
from mimi.channels.cmdline import nearest, params_of, split_args  # noqa: F401  (split_args: re-exported)
from mimi.platform import const

_NAME_SHOWN_MAX = const(24)  # a longer unknown command name is not quoted back
_HANDLER_FIELD = const(5)  # a line's field after the description: a setter's setting, or the handler
_SECRET_FIELD = const(6)  # a line's field after the handler: the first argument that is a secret (1: the first)


# The built-in commands, one a line: name, usage, fewest args, most args (-1: rest joined), description,
# and the namespace.key a setter saves or a module's function as in add_lines (else the method of that
# name runs it), tab-separated; a command that takes a secret says which argument is the first secret in one
# more field (the console shows it as stars and keeps the line out of its history; a setter of a secret
# setting and config_set of one need none: the setting's row says so). A str constant stays in the image
# (flash); a line is read only when its command is run or listed. Other layers add theirs the same way
# (add_lines), with handlers found at their first use.
_BUILTINS = (
    "\nhelp\thelp [group|command]\t0\t1\tthe commands by group; a group's or a command's usage"
    "\tmimi.channels.console_help:help(app)"
    "\nstatus\tstatus\t0\t0\twhat is configured, connected and running\tmimi.channels.console_commands:status(app)"
    "\nchat\tchat <text>\t1\t-1\ttalk to the agent from the console\t"
    "\nwifi_set\twifi_set <ssid> <password>\t2\t2\tsave WiFi credentials and reconnect"
    "\tmimi.net.wifi_console:wifi_set(app)\t2"
    "\nwifi_status\twifi_status\t0\t0\tWiFi connection, IP and signal\tmimi.net.wifi_console:wifi_status(app)"
    "\nset_tg_token\tset_tg_token <token>\t1\t1\tsave the Telegram bot token\ttg_config.bot_token"
    "\nset_api_key\tset_api_key <key>\t1\t1\tsave the Anthropic API key\tllm_config.api_key"
    "\nset_model\tset_model <model_id>\t1\t1\tchoose the Claude model\tllm_config.model"
    "\nset_max_tokens\tset_max_tokens <n>\t1\t1\tlongest reply, in tokens\tllm_config.max_tokens"
    "\nset_llm_api\tset_llm_api <url>\t1\t1\tAnthropic API endpoint\tllm_config.api_base"
    "\nset_tg_api\tset_tg_api <url>\t1\t1\tTelegram Bot API endpoint\ttg_config.api_base"
    "\nconfig_show\tconfig_show [group]\t0\t1\tevery setting under its heading (or one group's), secrets masked"
    "\tmimi.channels.console_help:config_show(app)"
    "\nconfig_set\tconfig_set <namespace.key> <value>\t2\t-1\tchange any setting (see config_show)"
    "\tmimi.channels.console_commands:config_set(app)"
    "\ntool_list\ttool_list\t0\t0\tthe tools the agent can use\tmimi.channels.console_commands:tool_list(app)"
    "\ntool_exec\ttool_exec <name> [json]\t1\t-1\trun a tool by hand, e.g. tool_exec get_current_time {}"
    "\tmimi.channels.console_commands:tool_exec(app)"
    "\nconfig_reset\tconfig_reset\t0\t0\terase every setting (back to defaults)"
    "\tmimi.channels.console_commands:config_reset(app)"
    "\nmemory_read\tmemory_read\t0\t0\tprint MEMORY.md\tmimi.channels.console_commands:memory_read(app)"
    "\nmemory_write\tmemory_write <text>\t1\t-1\treplace MEMORY.md\tmimi.channels.console_commands:memory_write(app)"
    "\nsession_list\tsession_list\t0\t0\tlist the chat sessions\tmimi.channels.console_commands:session_list(app)"
    "\nsession_clear\tsession_clear <chat_id>\t1\t1\tforget one chat's history"
    "\tmimi.channels.console_commands:session_clear(app)"
    "\nheap_info\theap_info\t0\t0\tfree and used heap\tmimi.channels.console_commands:heap_info(app)"
    "\nrestart\trestart\t0\t0\treboot the device\tmimi.channels.console_commands:restart(app)"
    "\n"
)


def _counts(text, at, modules):
    """Does the line holding `at` count: its text counts whole (None), or its handler is in one of the
    modules the text was added for."""
    if modules is None:
        return True
    handler = table.field(text, table.start(text, at), _HANDLER_FIELD)
    for module in modules:
        if handler.startswith(module + ":"):
            return True
    return False


def _counted(text, modules):
    """(the start, the name) of each line of a text that counts."""
    for at in table.rows(text):
        if _counts(text, at, modules):
            yield at, table.field(text, at)


class Commands:
    def __init__(self, app, console):
        self.app = app
        self.console = console
        # name: (handler, usage, fewest args, most args (-1: rest joined), description), for a command a layer
        # added whole (add); a command of a line (add_lines) costs nothing here: its line is read when it is
        # run or listed
        self.table = {}
        self.texts = [[_BUILTINS, None]]  # [str constant, None or the modules whose lines count], newest last
        self.table["status"] = self.entry("status")  # whole: other layers wrap its handler

    def entry(self, name):
        """name's (handler, usage, fewest, most, description), or None for an unknown command."""
        entry = self.table.get(name)
        if entry is not None:
            return entry
        found = self._line(name)
        if found is None:
            return None
        text, fields = found
        usage, fewest, most, description, target = fields[1:_SECRET_FIELD]
        if text is not _BUILTINS or ":" in target:  # a module's function (see add_lines)
            handler = self._later(target)
        elif target:  # a built-in setter: the namespace.key it saves
            handler = self.setter(*target.split("."))
        else:
            handler = getattr(self, name)
        return handler, usage, int(fewest), int(most), description

    def _line(self, name):
        """(the text, the fields) of name's line in the newest text that has it (and counts it), or None."""
        for text, modules in reversed(self.texts):
            at = table.find(text, name)
            if at >= 0 and _counts(text, at, modules):
                return text, [name] + table.fields(text, at)
        return None

    def names(self):
        """Every command's name, unsorted: those added whole and those of the lines."""
        found = list(self.table)
        for text, modules in self.texts:
            for _, name in _counted(text, modules):
                if name not in found:
                    found.append(name)
        return found

    def add(self, name, handler, usage, fewest, most, description):
        """Let a layer (Telegram, gateway...) add its commands: handler is async, gets str args."""
        self.table[name] = (handler, usage, fewest, most, description)

    def add_lines(self, text, module=None):
        """Let a layer add its commands from one str constant, as _BUILTINS: a line each, "\n"-led, of name,
        usage, fewest, most, description and handler, tab-separated (module: only the lines whose handler
        is in it). A command costs nothing but the text's place in a list; its line is read when it is run
        or listed, and it takes over a command of that name added before.

        The handler is found when the command runs (find): "app.gateway.cmd_token" is an attribute path on the
        app; "mimi.mqtt.commands:cmd_set" a module's function, the module imported then; "(app)" or
        "(app.budget)" after either is the handler's first argument, before the typed ones. A handler may be
        async or plain."""
        for known in self.texts:
            if known[0] is text:
                if known[1] is not None and module not in known[1]:
                    known[1] = None if module is None else known[1] + [module]
                self.texts.remove(known)
                self.texts.append(known)  # newest last: its lines win
                break
        else:
            self.texts.append([text, None if module is None else [module]])
        for _, name in _counted(text, self.texts[-1][1]):
            if name in self.table:
                del self.table[name]  # the line takes over (the gateway's status, say)

    def _later(self, target):
        async def run(*args):
            path, _, first = target.partition("(")
            if first:
                args = (self.find(first[:-1]),) + args
            with heap.scope("command"):  # the console's own commands' code is not kept (channels/ LET_GO)
                result = self.find(path)(*args)  # a module's plain function, or a coroutine to await
                return (await result) if hasattr(result, "send") else result

        return run

    def find(self, path):
        """The object at "app.<attribute>..." or "<module>:<attribute>..." (see add_lines), the module
        imported now."""
        module, _, path = path.rpartition(":")
        names = path.split(".")
        if module:
            found = __import__(module, None, None, ["_"])
        else:
            found = self.app
            names.pop(0)  # "app"
        for name in names:
            found = getattr(found, name)
        return found

    def target(self, name):
        """The handler path a command's line names ("<module>:<function>(app.<first argument>)" or
        "app.<path>", found when it runs), or None for a built-in or a command added with its handler."""
        found = None if name in self.table else self._line(name)
        if found is None:
            return None
        text, fields = found
        return fields[_HANDLER_FIELD] if text is not _BUILTINS or ":" in fields[_HANDLER_FIELD] else None

    def secret_from(self, line):
        """Where a secret starts in a line as typed (the console shows it as stars from there and keeps the line
        out of its history), or -1: the argument a command's line names as its first secret, the value of a
        setter of a secret setting, or of config_set naming one. Words are split at spaces, as typed: a quoted
        argument with spaces starts the stars early, never late."""
        space = line.find(" ")
        if space < 1:
            return -1
        name = line[:space]
        if name == "config_set":
            first, setting = 2, _word(line, 1)
            if setting is None or "." not in setting[2] or _word(line, 2) is None:
                return -1  # the setting's name is not typed whole yet
            from mimi import settings

            if not settings.is_secret(*setting[2].split(".", 1)):
                return -1
        else:
            found = None if name in self.table else self._line(name)
            if found is None:
                return -1
            text, fields = found
            if len(fields) > _SECRET_FIELD:
                first = int(fields[_SECRET_FIELD])
            elif text is _BUILTINS and "." in fields[_HANDLER_FIELD] and ":" not in fields[_HANDLER_FIELD]:
                from mimi import settings  # a setter: its setting says

                first = 1 if settings.is_secret(*fields[_HANDLER_FIELD].split(".", 1)) else 0
            else:
                first = 0
            if not first:
                return -1
        word = _word(line, first)
        return -1 if word is None else word[0]

    def out(self, text):
        platform.console_write(text + "\n")

    async def execute(self, line):
        line = line.strip()
        name = line.split(None, 1)[0] if line else ""
        if not name:
            return
        entry = self.entry(name)
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
        near = nearest(name, self.names())
        if near:
            self.out("{}; did you mean {}?".format(shown, " or ".join(near[:3])))
        else:
            self.out("{}; type help for the list, or chat <text> to talk to the agent".format(shown))

    def setter(self, ns, key):
        async def set_value(value):
            dropped = self.app.config.set(ns, key, value)  # True: the URL's key went (another host)
            shown = [row[2] for row in self.app.config.shown() if row[0] == ns and row[1] == key]
            said = "{}.{} = {} (saved; in effect now)".format(ns, key, shown[0] if shown else "?")
            if dropped:
                from mimi.settings import KEY_DROPPED

                said += "; " + KEY_DROPPED
            self.out(said)

        return set_value

    async def chat(self, text):
        await self.console.chat(text)


def _word(line, index):
    """(start, end, text) of the line's word `index` (0: the command), split at spaces; None if not typed yet."""
    at = 0
    while True:
        while at < len(line) and line[at] == " ":
            at += 1
        if at >= len(line):
            return None
        end = line.find(" ", at)
        end = len(line) if end < 0 else end
        if not index:
            return at, end, line[at:end]
        index -= 1
        at = end


def _safe(exc):
    # Exception text from the config layer never holds a secret; others are shown by type and text.
    return str(exc) or exc.__class__.__name__
