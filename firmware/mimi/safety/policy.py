# Who may run a tool (its tier against the asker's role) and how (its autonomy level): the registry approver.
import json

from mimi.bus.message import Message
from mimi.channels.system import requesting_chat
from mimi.platform import const
from mimi.safety import audit, breaker, confirm, roles

AUTONOMOUS = "autonomous"  # runs, nothing more said
REPORT = "report"  # runs, then the chat is told what ran
CONFIRM = "confirm"  # the chat is asked first; no answer in safety_config.confirm_s means no
BLOCKED = "blocked"  # never runs
LEVELS = (AUTONOMOUS, REPORT, CONFIRM, BLOCKED)
REPORT_RESULT_MAX = const(200)  # characters of a tool result quoted in a report
_NS, _KEY = "tool_config", "policy"

# The least trusted role that may use each built-in tool. Observers: reading that reveals nothing private
# beyond the data folder. Operators: GPIO, cron, the web and messages to allowlisted users. The owner: files
# and the memory that goes into every later system prompt (everyone's turns), and settings.
# A tool not listed here says so itself with `tier = "owner"` etc.; else operator, or owner when acting.
TIERS = {
    "get_current_time": roles.OBSERVER,
    "system_info": roles.OBSERVER,
    "read_file": roles.OBSERVER,
    "list_dir": roles.OBSERVER,
    "recall": roles.OBSERVER,
    "cron_list": roles.OBSERVER,
    "gpio_read": roles.OPERATOR,
    "gpio_write": roles.OPERATOR,
    "cron_add": roles.OPERATOR,
    "cron_remove": roles.OPERATOR,
    "web_search": roles.OPERATOR,
    "web_fetch": roles.OPERATOR,
    "get_weather": roles.OPERATOR,
    "send_message": roles.OPERATOR,
    "write_file": roles.OWNER,
    "edit_file": roles.OWNER,
    "remember": roles.OWNER,
    "note_today": roles.OWNER,
}


# Acting tools that only keep the agent's own books (the reply says what they did; cron_list and recall
# show it): autonomous by default, so the chat is not told twice.
QUIET_BY_DEFAULT = ("cron_add", "cron_remove", "remember", "note_today")


def tier_of(name, tool=None):
    """The least trusted role that may run this tool."""
    tier = getattr(tool, "tier", None)
    if tier in roles.ROLES:
        return tier
    if name in TIERS:
        return TIERS[name]
    return roles.OWNER if breaker.is_acting(name, tool) else roles.OPERATOR


def default_level(name, tool=None):
    """Read-only tools run on their own; a tool that acts runs and says so in the chat."""
    if name in QUIET_BY_DEFAULT or tier_of(name, tool) == roles.OBSERVER or not breaker.is_acting(name, tool):
        return AUTONOMOUS
    return REPORT


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


def level_of(config, name, tool=None):
    return parse_levels(config.get(_NS, _KEY)).get(name) or default_level(name, tool)


def set_level(config, name, level, tool=None):
    """Store a tool's level (ValueError for an unknown level); a tool's default is not stored."""
    if level not in LEVELS:
        raise ValueError("level must be one of {}, not {!r}".format(", ".join(LEVELS), level))
    levels = parse_levels(config.get(_NS, _KEY))
    if level == default_level(name, tool):
        levels.pop(name, None)
    else:
        levels[name] = level
    config.set(_NS, _KEY, encode_levels(levels))


def shown_input(config, data):
    """A tool input as one line of JSON for a chat, secrets masked."""
    try:
        return json.dumps(audit.masked(data, audit.configured_secrets(config)))
    except (TypeError, ValueError):
        return "(input not shown)"


def role_of(config, turn):
    """The role a turn acts with. A system turn (cron, heartbeat) without its own role has the trust of the
    chat it answers in: the console and gateway are the owner, an allowlisted user's private chat that
    user's role, anything else the least trusted role."""
    meta = turn.get("meta") if isinstance(turn.get("meta"), dict) else {}
    if turn.get("channel") != "system" or meta.get("role") in roles.ROLES:
        return roles.of_turn(turn)
    channel, chat_id = requesting_chat(turn)
    if channel in roles.OWNER_CHANNELS:
        return roles.OWNER
    allowed = [part.strip() for part in config.get("tg_config", "allowlist").split(",")]
    if channel == "telegram" and chat_id.isdigit() and chat_id in allowed:
        return roles.of_user(config, int(chat_id))
    return roles.OBSERVER


def _article(word):
    return ("an " if word[:1] in "aeiou" else "a ") + word


class Policy:
    """Registry approver: approve() before a call (tier, level, confirmation), ran() after it (reports)."""

    def __init__(self, app):
        self.app = app
        self.questions = confirm.Questions()
        self.refused = 0

    async def approve(self, name, data, tool):
        from mimi.tools import registry

        turn = dict(registry.current)  # taken before any await: the turn may change while we ask
        role = role_of(self.app.config, turn)
        tier = tier_of(name, tool)
        refusal = None
        if not roles.allows(role, tier):
            refusal = ("{} was not run: it needs the {} role and the user asking is {}. Only the device's "
                       "owner can change roles (on its console: tg_role <user_id> <role>)."
                       .format(name, tier, _article(role)))
        else:
            level = level_of(self.app.config, name, tool)
            if level == BLOCKED:
                refusal = ("{} was not run: the owner has blocked it on this device (console: tool_policy {} "
                           "<level>)".format(name, name))
            elif level == CONFIRM:
                refusal = await self._confirm(turn, name, data, tier)
        if refusal:
            self.refused += 1
        return refusal

    async def _confirm(self, turn, name, data, tier):
        channel_name, chat_id = requesting_chat(turn)
        channel = self.app.channels.get(channel_name)
        ask = getattr(channel, "confirm", None)
        if ask is None:
            return "{} needs the user's confirmation, but the {} chat cannot ask; it was not run".format(
                name, channel_name)
        meta = turn.get("meta") if isinstance(turn.get("meta"), dict) else {}
        asker = meta.get("user_id") if turn.get("channel") == "telegram" else None
        question = self.questions.ask(name, shown_input(self.app.config, data), channel_name, chat_id, asker, tier)
        if question is None:
            return "{} was not run: too many confirmation questions are open; try again later".format(name)
        seconds = self.app.config.get("safety_config", "confirm_s")
        try:
            outcome = await ask(question, seconds)
        except Exception as exc:  # a question that cannot be asked is a no
            print("policy: could not ask about {}: {}".format(name, exc))
            outcome = confirm.DENIED
        finally:
            self.questions.close(question)
        print("policy: {} {} in {}:{}".format(name, outcome, channel_name, chat_id))
        if outcome == confirm.APPROVED:
            return None
        if outcome == confirm.DENIED:
            return "the user denied running {}; it was not run".format(name)
        return "nobody approved {} within {} s; it was not run".format(name, seconds)

    async def ran(self, name, data, tool, text, is_error, turn):
        """After an approved call: a `report` tool tells the chat what it did."""
        if level_of(self.app.config, name, tool) != REPORT:
            return
        meta = (turn or {}).get("meta")
        if isinstance(meta, dict) and meta.get("watcher"):
            return  # a watcher's turn lists every action in its own message to the chat
        result = (text or "").strip().replace("\n", " ")
        if len(result) > REPORT_RESULT_MAX:
            result = result[:REPORT_RESULT_MAX] + "\u2026"
        report = "\u2139\ufe0f {} {} {}: {}".format(
            "I ran" if not is_error else "I tried", name, shown_input(self.app.config, data),
            result if not is_error else "it failed: " + result)
        channel, chat_id = requesting_chat(turn)
        if channel in self.app.channels:
            await self.app.bus.outbound.put(Message(channel, chat_id, report, {"kind": "report"}))

    # -- the console --
    async def cmd_policy(self, name=None, level=None):
        registry = self.app.registry
        if name is None:
            print("  {:<18} {:<9} {}".format("tool", "tier", "level"))
            for tool_name in sorted(registry.tools):
                tool = registry.tools[tool_name]
                print("  {:<18} {:<9} {}".format(tool_name, tier_of(tool_name, tool),
                                                   level_of(self.app.config, tool_name, tool)))
            return
        if name not in registry.tools:
            raise ValueError("no tool named '{}' (tool_policy lists them)".format(name))
        tool = registry.tools[name]
        if level is None:
            print("{}: tier {}, level {}".format(name, tier_of(name, tool), level_of(self.app.config, name, tool)))
            return
        set_level(self.app.config, name, level, tool)
        print("{} is now {} (saved)".format(name, level))


def setup(app):
    """Put the policy in front of every tool call and add `tool_policy` to the console."""
    policy = Policy(app)
    app.registry.approvers.insert(0, policy)  # roles first: a refused user never gets a question
    app.console.commands.add("tool_policy", policy.cmd_policy, "tool_policy [tool] [level]", 0, 2,
                             "list tools with tier and level, or set one: autonomous|report|confirm|blocked")
    return policy
