# The discord_* console commands (loaded when one is typed): the bot token, who may talk, how it goes.
from mimi import discord, platform
from mimi.safety import roles
from mimi.settings import mask


def _say(text):
    platform.console_write(text + "\n")


async def cmd_set(app, token):
    cfg = app.config
    if token == "off":
        cfg.unset(discord.NS, "token")  # the gateway closes; the allowlist stays
        _say("Discord off: the bot token is forgotten (discord_set <bot-token> connects again)")
        return
    token = token.strip()
    if len(token) < 50 or " " in token or token.count(".") != 2:
        raise ValueError("a Discord bot token has three parts joined by dots (the developer portal's Bot page, "
                         "Reset Token); nothing was saved")
    cfg.set(discord.NS, "token", token)
    channel = app.part("discord")
    held = app.health.held_back(channel)
    _say("Discord bot token {} saved{}".format(mask(token), "; Discord starts after a normal boot: " + held
                                                 if held else "; connecting (discord_status shows how it goes)"))
    if not channel.users():
        _say("  nobody may talk to the bot yet: discord_allow <user-id> [role]")


def _check_user(user):
    if not user.isdigit() or not 15 <= len(user) <= 21:
        raise ValueError("a Discord user id is a number of 17 to 20 digits (Developer Mode on, then right-click "
                         "the user, Copy User ID), e.g. discord_allow 123456789012345678")


def _channel(app):
    """The channel when made, else the same settings without it."""
    channel = app.part("discord")
    if channel is not None:
        return channel
    from mimi.channels.chat_app import Offline

    return Offline(app, discord.NS)


async def cmd_allow(app, user, role=None):
    _check_user(user)
    if role is not None and role not in roles.ROLES:
        raise ValueError("role must be one of {}".format(", ".join(roles.ROLES)))
    channel = _channel(app)
    count = channel.allow(user, role)
    _say("Discord user {} may now talk to the bot as {} ({} allowed)".format(user, channel.role_of(user), count))


async def cmd_deny(app, user):
    channel = _channel(app)
    if channel.deny(user):
        _say("Discord user {} removed ({} allowed)".format(user, len(channel.users())))
    else:
        _say("Discord user {} was not allowed".format(user))


def line(app):
    """The status command's line."""
    if not discord.configured(app.config):
        return "off (discord_set <bot-token>)"
    channel = app.part("discord")
    held = app.health.held_back(channel)
    if held:
        return "not started on this boot: " + held
    if channel.connected:
        return "connected to the gateway (session resumed {} times)".format(channel.resumes)
    return "connecting" + ("; last problem: " + channel.error if channel.error else "")


async def cmd_status(app):
    _say("Discord: " + line(app))
    channel = _channel(app)
    users = channel.users()
    _say("  allowed: {}".format(", ".join("{} ({})".format(u, r) for u, r in users) if users
                                else "nobody yet (discord_allow <user-id> [role])"))
    made = app.part("discord")
    if made is not None:
        _say("  message content intent: {}; {} messages received, {} answered, {} replies waiting".format(
            "on" if app.config.get(discord.NS, "content") else "off", made.received, made.answered,
            len(made.outbox)))
