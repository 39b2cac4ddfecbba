# Who may run a tool (its tier against the asker's role) and how (its autonomy level): the registry approver.
import json

from mimi.bus.message import Message
from mimi.channels.system import requesting_chat
from mimi.platform import const
from mimi.safety import audit, breaker, roles

AUTONOMOUS = "autonomous"  # runs, nothing more said
REPORT = "report"  # runs, then the chat is told what ran
CONFIRM = "confirm"  # the chat is asked first; no answer in safety_config.confirm_s means no
BLOCKED = "blocked"  # never runs
LEVELS = (AUTONOMOUS, REPORT, CONFIRM, BLOCKED)
REPORT_RESULT_MAX = const(200)  # characters of a tool result quoted in a report
# The console command (channels/commands.py add_lines), its code (policy_console.py) imported when it is typed.
_COMMANDS = (
    "\ntool_policy\ttool_policy [tool] [level]\t0\t2"
    "\tlist tools with tier and level, or set one: autonomous|report|confirm|blocked"
    "\tmimi.safety.policy_console:tool_policy(app.policy)"
    "\n"
)
_NS, _KEY = "tool_config", "policy"

# The least trusted role that may use each built-in tool. Observers: reading that reveals nothing private
# beyond the data folder. Operators: GPIO, cron, the web and messages to allowlisted users. The owner: files
# and the memory that goes into every later system prompt (everyone's turns), and settings.
# A tool not listed here says so itself with `tier = "owner"` etc.; else operator, or owner when acting.
TIERS = (  # one tool a line: its name, then the role (a str constant stays in the image, not the heap)
    "\n"
    "get_current_time observer\n"
    "system_info observer\n"
    "read_file observer\n"
    "list_dir observer\n"
    "recall observer\n"
    "cron_list observer\n"
    "gpio_read operator\n"
    "gpio_write operator\n"
    "cron_add operator\n"
    "cron_remove operator\n"
    "web_search operator\n"
    "web_fetch operator\n"
    "get_weather operator\n"
    "send_message operator\n"
    "write_file owner\n"
    "edit_file owner\n"
    "remember owner\n"
    "note_today owner\n"
)


# Acting tools that only keep the agent's own books (the reply says what they did; cron_list and recall
# show it): autonomous by default, so the chat is not told twice.
QUIET_BY_DEFAULT = ("cron_add", "cron_remove", "remember", "note_today")


def tier_of(name, tool=None):
    """The least trusted role that may run this tool."""
    tier = getattr(tool, "tier", None)
    if tier in roles.ROLES:
        return tier
    at = TIERS.find("\n{} ".format(name)) + 1
    if at and " " not in name and "\n" not in name:
        return TIERS[at + len(name) + 1:TIERS.find("\n", at)]
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


def level_of(config, name, tool=None):
    return parse_levels(config.get(_NS, _KEY)).get(name) or default_level(name, tool)


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
        self.questions = None  # confirm.Questions, made with the first question (policy_confirm.py)
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
                from mimi.safety.policy_confirm import ask  # loaded at the first tool set to confirm

                refusal = await ask(self, turn, name, data, tier)
        if refusal:
            self.refused += 1
        return refusal

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


def setup(app):
    """Put the policy in front of every tool call and add `tool_policy` to the console."""
    policy = Policy(app)
    app.registry.approvers.insert(0, policy)  # roles first: a refused user never gets a question
    app.console.commands.add_lines(_COMMANDS)  # app.policy: this policy (App)
    return policy
