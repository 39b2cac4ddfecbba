# Who may talk to the bot: the allowlist (tg_config.allowlist) and its console commands (tg_allow, tg_role,
# tg_deny, tg_allowlist). Loaded at the first of them typed, or with the bot (bot.py), a system turn to a
# Telegram chat or a heartbeat: a board without a token that never uses them spends no heap on them.
from mimi.platform import log
from mimi.safety import roles


def parse_allowlist(text):
    ids = []
    for part in (text or "").split(","):
        part = part.strip()
        if part.isdigit():
            ids.append(int(part))
    return ids


def allowed(config):
    return parse_allowlist(config.get("tg_config", "allowlist"))


def _save(config, ids):
    config.set("tg_config", "allowlist", ",".join(str(i) for i in ids))


async def cmd_allow(app, user_id, role=None):
    if not user_id.isdigit():
        log("error: a Telegram user id is a number, e.g. tg_allow 123456789")
        return
    if role is not None and role not in roles.ROLES:
        log("error: role must be one of {}".format(", ".join(roles.ROLES)))
        return
    ids = allowed(app.config)
    if int(user_id) not in ids:
        ids.append(int(user_id))
        _save(app.config, ids)
    if role is not None:
        roles.set_role(app.config, int(user_id), role)
    log("Telegram user {} may now chat as {} ({} allowed)".format(
        user_id, roles.of_user(app.config, int(user_id)), len(ids)))


async def cmd_role(app, user_id, role):
    if not user_id.isdigit() or int(user_id) not in allowed(app.config):
        log("error: {} is not on the allowlist; add them with tg_allow {} {}".format(user_id, user_id, role))
        return
    roles.set_role(app.config, int(user_id), role)
    log("Telegram user {} is now {}".format(user_id, role))


async def cmd_deny(app, user_id):
    ids = allowed(app.config)
    if user_id.isdigit() and int(user_id) in ids:
        ids.remove(int(user_id))
        _save(app.config, ids)
        roles.forget(app.config, int(user_id))
        log("Telegram user {} removed ({} allowed)".format(user_id, len(ids)))
    else:
        log("Telegram user {} was not on the allowlist".format(user_id))


async def cmd_allowlist(app):
    ids = allowed(app.config)
    shown = ", ".join("{} ({})".format(i, roles.of_user(app.config, i)) for i in ids)
    log("allowed Telegram users: {}".format(shown if ids else "nobody yet (tg_allow <id> [role])"))
