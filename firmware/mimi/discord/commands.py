# The discord_* console commands (loaded when one is typed): the bot token, who may talk, how it goes.
from mimi import discord, platform
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
    from mimi.channels.chat_app import for_console

    return for_console(app, "discord", discord.NS, "Discord")


async def cmd_allow(app, user, role=None):
    from mimi.channels.chat_app import allow_said

    _check_user(user)
    _say(allow_said(_channel(app), user, role))


async def cmd_deny(app, user):
    from mimi.channels.chat_app import deny_said

    _say(deny_said(_channel(app), user))


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
    from mimi.channels.chat_app import allowed_said

    _say(allowed_said(_channel(app)))
    made = app.part("discord")
    if made is not None:
        _say("  message content intent: {}; {} messages received, {} answered, {} replies waiting".format(
            "on" if app.config.get(discord.NS, "content") else "off", made.received, made.answered,
            len(made.outbox)))
