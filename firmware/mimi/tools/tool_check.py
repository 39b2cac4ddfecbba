# A tool that is not a built-in (an owner's /tools/tool_<name>.py, MQTT's): checked when added, and the safety
# facts it leaves out (tier, acting, level) filled in, so every registered tool carries all three.
from mimi.platform import const
from mimi.safety import roles
from mimi.safety.policy import AUTONOMOUS, LEVELS, REPORT

NAME_MAX = const(64)


def valid_name(name):
    if not isinstance(name, str) or not 0 < len(name) <= NAME_MAX:
        return False
    for ch in name:
        if not (ch.isalpha() or ch.isdigit() or ch in "_-") or ord(ch) > 127:
            return False
    return True


def default_tier(acting):
    """A tool that says nothing: an operator's, or the owner's when it acts."""
    return roles.OWNER if acting else roles.OPERATOR


def default_level(tier, acting):
    """Read-only tools run on their own; a tool that acts runs and says so in the chat."""
    return AUTONOMOUS if tier == roles.OBSERVER or not acting else REPORT


def check_tool(tool):
    """The reason a tool object is unusable, or None when it is fine; then its safety facts are complete:
    `acting` (False unless it says True), `tier` and `level` (its own when valid, else default_tier and
    default_level)."""
    name = getattr(tool, "name", None)
    if not valid_name(name):
        return "its name must be 1-64 characters of letters, digits, _ or -"
    if not isinstance(getattr(tool, "description", None), str) or not tool.description:
        return "it has no description"
    schema = getattr(tool, "schema", None)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "its schema must be a JSON Schema object ({\"type\": \"object\", ...})"
    if not callable(getattr(tool, "run", None)):
        return "it has no run(input) function"
    acting = getattr(tool, "acting", False) is True
    tier, level = getattr(tool, "tier", None), getattr(tool, "level", None)
    tool.acting = acting
    tool.tier = tier if tier in roles.ROLES else default_tier(acting)  # an unknown tier is ignored
    tool.level = level if level in LEVELS else default_level(tool.tier, acting)
    return None
