# Who is asking: owner, operator or observer. Telegram users have one each; console and gateway are the owner.
OWNER = "owner"
OPERATOR = "operator"
OBSERVER = "observer"
ROLES = (OBSERVER, OPERATOR, OWNER)  # least to most trusted
DEFAULT_ROLE = OPERATOR  # an allowlisted Telegram user with no role set
OWNER_CHANNELS = ("cli", "websocket")  # whoever holds the console or the gateway token owns the device
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


def of_turn(turn):
    """The role behind a turn ({"channel", "chat_id", "meta"}): meta["role"] when a channel set it,
    else the owner for the console and the gateway, else the least trusted role."""
    turn = turn or {}
    meta = turn.get("meta")
    role = meta.get("role") if isinstance(meta, dict) else None
    if role in ROLES:
        return role
    return OWNER if turn.get("channel") in OWNER_CHANNELS else OBSERVER
