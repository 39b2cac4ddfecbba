# Who is asking: owner, operator or observer. Telegram users have one each; console and gateway are the owner.
from mimi.bus.message import CLI, DISCORD, MATRIX, MCP, MQTT, SYSTEM, TELEGRAM, WEBSOCKET

OWNER = "owner"
OPERATOR = "operator"
OBSERVER = "observer"
ROLES = (OBSERVER, OPERATOR, OWNER)  # least to most trusted
DEFAULT_ROLE = OPERATOR  # an allowlisted Telegram user with no role set
OWNER_CHANNELS = (CLI, WEBSOCKET)  # whoever holds the console or the gateway token owns the device
_NS, _KEY = "tg_config", "roles"


def rank(role):
    """0 for observer up to 2 for owner; an unknown role ranks below everyone."""
    return ROLES.index(role) if role in ROLES else -1


def allows(role, needed):
    """True when `role` is trusted at least as much as `needed`."""
    return rank(role) >= rank(needed)


def parse(text):
    """{user_id: role} from "42=owner,7=observer"; malformed parts are ignored."""
    roles = {}
    for part in (text or "").split(","):
        user, sep, role = part.strip().partition("=")
        if sep and user.isdigit() and role in ROLES:
            roles[int(user)] = role
    return roles


def encode(roles):
    return ",".join("{}={}".format(user, roles[user]) for user in sorted(roles))


def of_user(config, user_id):
    """The role of an allowlisted Telegram user."""
    return parse(config.get(_NS, _KEY)).get(user_id, DEFAULT_ROLE)


def set_role(config, user_id, role):
    """Store a user's role (ValueError for an unknown one); the default role is not stored."""
    if role not in ROLES:
        raise ValueError("role must be one of {}, not {!r}".format(", ".join(ROLES), role))
    roles = parse(config.get(_NS, _KEY))
    if role == DEFAULT_ROLE:
        roles.pop(user_id, None)
    else:
        roles[user_id] = role
    config.set(_NS, _KEY, encode(roles))


def forget(config, user_id):
    roles = parse(config.get(_NS, _KEY))
    if roles.pop(user_id, None) is not None:
        config.set(_NS, _KEY, encode(roles))


def owners(config):
    """Telegram user ids with the owner role, in id order."""
    roles = parse(config.get(_NS, _KEY))
    return [user for user in sorted(roles) if roles[user] == OWNER]


def of_chat(config, channel, chat_id):
    """The trust of a chat: the console and the gateway's owner are the owner (a web chat of a client with
    another role is "<role>.<id>": gateway/clients.py), an allowlisted Telegram user's private chat that user's
    role, anything else the least trusted role."""
    if channel in OWNER_CHANNELS:
        role = str(chat_id).split(".", 1)[0] if "." in str(chat_id) else OWNER
        return role if role in ROLES else OBSERVER
    if channel == TELEGRAM and config is not None and chat_id.isdigit():
        allowed = [part.strip() for part in config.get("tg_config", "allowlist").split(",")]
        if chat_id in allowed:
            return of_user(config, int(chat_id))
    if channel in (MATRIX, DISCORD) and config is not None:  # a direct chat with one allowed user: theirs
        from mimi.channels import direct

        role = direct.user_role(config, "mx_config" if channel == MATRIX else "dc_config", chat_id)
        return role if role in ROLES else OBSERVER
    return OBSERVER


def of_conversation(config, channel, chat_id, turn_role=OWNER):
    """Whose a conversation is, for what it may feed (MEMORY.md, the daily notes: the owner's alone) and be shown
    (the owner's memory in its prompt): the chat's trust (of_chat; an MCP caller's or an MQTT peer's, the role
    mcp_role or mqtt_role gives them now; a Telegram group's, the least: others read it), never more than the
    role of the turn that asks (turn_role). Anything unknown is the least trusted."""
    if channel in (MCP, MQTT) and config is not None:
        role = config.get(channel + "_config", "role")
        role = role if role in ROLES else OBSERVER
    else:
        role = of_chat(config, channel, chat_id)
    return role if rank(role) <= rank(turn_role) else turn_role


def of_turn(config, channel, meta, asker):
    """The role a turn acts with: the role its channel gave it (meta["role"]: a Telegram user's, a cron job's,
    a watcher's), else the owner on the console and the gateway; a system turn (the heartbeat, an old cron
    job) without one has the trust of the chat it answers in (asker: (channel, chat_id)); anything else is
    the least trusted role."""
    role = meta.get("role") if isinstance(meta, dict) else None
    if role in ROLES:
        return role
    if channel == SYSTEM:
        return of_chat(config, asker[0], asker[1])
    return OWNER if channel in OWNER_CHANNELS else OBSERVER
