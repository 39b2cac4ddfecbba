# Who may run a tool (its tier against the asker's role) and how (its autonomy level): the registry approver.
import json

from mimi.bus.message import DISCORD, MATRIX, MCP, MQTT, TELEGRAM, WEBSOCKET, Message
from mimi.platform import const, log
from mimi.safety import NS, audit, roles

AUTONOMOUS = "autonomous"  # runs, nothing more said
REPORT = "report"  # runs, then the chat is told what ran
CONFIRM = "confirm"  # the chat is asked first; no answer in safety_config.confirm_s means no
BLOCKED = "blocked"  # never runs
LEVELS = (AUTONOMOUS, REPORT, CONFIRM, BLOCKED)
_REPORT_RESULT_MAX = const(200)  # characters of a tool result quoted in a report
# The console command (channels/commands.py add_lines).
_COMMANDS = (
    "\ntool_policy\ttool_policy [tool] [level]\t0\t2"
    "\tlist tools with tier and level, or set one: autonomous|report|confirm|blocked"
    "\tapp.policy.tool_policy"
    "\n"
)
_LEVELS_NS, _LEVELS_KEY = "tool_config", "policy"  # the owner's levels: "gpio_write=confirm,web_fetch=blocked"

# A tool's tier (the least trusted role that may use it), whether it acts and its default level are the
# tool's own facts: a built-in's in builtin_defs.DEFS (made by tools/tool_defs.py from the tool's class),
# any other's filled in when it is added (tools/tool_check.py). Observers: reading that reveals nothing
# private beyond the data folder. Operators: GPIO, cron, the web and messages to allowlisted users. The
# owner: files and the memory that goes into every later system prompt (everyone's turns), and settings.


def tier_of(tool):
    """The least trusted role that may run this tool; an unknown tool (refused later) needs an operator."""
    return tool.tier if tool is not None else roles.OPERATOR


def parse_levels(text):
    """{tool: level} from "gpio_write=confirm,write_file=blocked"; malformed parts are ignored."""
    levels = {}
    for part in (text or "").split(","):
        name, sep, level = part.strip().partition("=")
        if sep and name and level in LEVELS:
            levels[name] = level
    return levels


def encode_levels(levels):
    return ",".join("{}={}".format(name, levels[name]) for name in sorted(levels))


def level_of(config, name, tool):
    """The level the owner set for the tool, else its own default."""
    return parse_levels(config.get(_LEVELS_NS, _LEVELS_KEY)).get(name) or (
        tool.level if tool is not None else AUTONOMOUS)


def set_level(config, name, level, tool):
    """Store a tool's level (ValueError for an unknown level); a tool's default is not stored."""
    if level not in LEVELS:
        raise ValueError("level must be one of {}, not {!r}".format(", ".join(LEVELS), level))
    levels = parse_levels(config.get(_LEVELS_NS, _LEVELS_KEY))
    if level == tool.level:
        levels.pop(name, None)
    else:
        levels[name] = level
    config.set(_LEVELS_NS, _LEVELS_KEY, encode_levels(levels))


def shown_input(config, data):
    """A tool input as one line of JSON for a chat, secrets masked."""
    try:
        return json.dumps(audit.masked(data, audit.configured_secrets(config)))
    except (TypeError, ValueError):
        return "(input not shown)"


def _article(word):
    return ("an " if word[:1] in "aeiou" else "a ") + word


class Policy:
    """Registry approver: approve() before a call (tier, level, confirmation), ran() after it (reports)."""

    def __init__(self, app):
        self.app = app
        self.questions = None  # confirm.Questions, made with the first question (confirm.py loaded then)
        self.refused = 0

    async def approve(self, name, data, tool, turn):
        tier = tier_of(tool)
        refusal = None
        if not roles.allows(turn.role, tier):
            refusal = ("{} was not run: it needs the {} role and the user asking is {}. Only the device's "
                       "owner can change roles (on its console: {})."
                       .format(name, tier, _article(turn.role), self._role_command(turn.channel)))
        else:
            level = level_of(self.app.config, name, tool)
            if level == BLOCKED:
                refusal = ("{} was not run: the owner has blocked it on this device (console: tool_policy {} "
                           "<level>)".format(name, name))
            elif level == CONFIRM and turn.unattended:
                refusal = ("{} was not run: it is set to confirm (tool_policy) and nobody is there to press "
                           "Approve when a rule runs".format(name))
            elif level == CONFIRM:
                refusal = await self._confirm(turn, name, data, tier)
        if refusal:
            self.refused += 1
        return refusal

    def _role_command(self, channel):
        """The console command that sets the role of the channel's users."""
        if channel == MCP:
            return "mcp_role <role>"
        if channel == MQTT:
            return "mqtt_role <role>"
        if channel == WEBSOCKET:
            from mimi.gateway import TOKEN_KEY, TOKEN_NS

            token_off = self.app.config.get(TOKEN_NS, TOKEN_KEY) == "off"
            return "ws_open_role <role>" if token_off else "ws_role <role>"
        return "tg_role <user_id> <role>"

    async def _confirm(self, turn, name, data, tier):
        """Ask the chat the turn answers in: None when it approved the call, else why it was not run."""
        from mimi.safety import confirm  # loaded at the first tool set to confirm

        app = self.app
        channel_name, chat_id = turn.asker
        chat = app.channels.get(channel_name)
        ask_chat = None if chat is None else chat.confirm
        if ask_chat is None:
            return "{} needs the user's confirmation, but the {} chat cannot ask; it was not run".format(
                name, channel_name)
        asker = turn.meta.get("user_id") if turn.channel in (TELEGRAM, MATRIX, DISCORD) else None
        if self.questions is None:
            self.questions = confirm.Questions()
        question = self.questions.ask(name, shown_input(app.config, data), channel_name, chat_id, asker, tier)
        if question is None:
            return "{} was not run: too many confirmation questions are open; try again later".format(name)
        seconds = app.config.get(NS, "confirm_s")
        try:
            outcome = await ask_chat(question, seconds)
        except Exception as exc:  # a question that cannot be asked is a no
            log("policy: could not ask about {}: {}".format(name, exc))
            outcome = confirm.DENIED
        finally:
            self.questions.close(question)
        log("policy: {} {} in {}:{}".format(name, outcome, channel_name, chat_id))
        return confirm.refusal(outcome, name, seconds)

    async def ran(self, name, data, tool, text, is_error, turn):
        """After an approved call: a `report` tool tells the chat what it did."""
        if level_of(self.app.config, name, tool) != REPORT:
            return
        if turn.watcher or turn.unattended:
            return  # a watcher's turn lists every action in its own message; a rule says what it was told to
        result = (text or "").strip().replace("\n", " ")
        if len(result) > _REPORT_RESULT_MAX:
            result = result[:_REPORT_RESULT_MAX] + "\u2026"
        report = "\u2139\ufe0f {} {} {}: {}".format(
            "I ran" if not is_error else "I tried", name, shown_input(self.app.config, data),
            result if not is_error else "it failed: " + result)
        channel, chat_id = turn.asker
        if channel in self.app.channels:
            await self.app.bus.outbound.put(Message(channel, chat_id, report, {"kind": "report"}))

    async def tool_policy(self, name=None, level=None):
        """The `tool_policy [tool] [level]` console command."""
        config, registry = self.app.config, self.app.registry
        if name is None:
            log("  {:<18} {:<9} {}".format("tool", "tier", "level"))
            for tool_name in sorted(registry.tools):
                tool = registry.tools[tool_name]
                log("  {:<18} {:<9} {}".format(tool_name, tier_of(tool), level_of(config, tool_name, tool)))
            return
        if name not in registry.tools:
            raise ValueError("no tool named '{}' (tool_policy lists them)".format(name))
        tool = registry.tools[name]
        if level is None:
            log("{}: tier {}, level {}".format(name, tier_of(tool), level_of(config, name, tool)))
            return
        set_level(config, name, level, tool)
        log("{} is now {} (saved)".format(name, level))


def setup(app):
    """Put the policy in front of every tool call and add `tool_policy` to the console."""
    policy = Policy(app)
    app.registry.approvers.insert(0, policy)  # roles first: a refused user never gets a question
    app.console.commands.add_lines(_COMMANDS)  # app.policy: this policy (App)
    return policy
