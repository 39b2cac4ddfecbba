# Discord (gateway v10 and REST): off until discord_set keeps a bot token; the channel's code loads only then.
# This boot part owns the settings' names and the console lines; App makes the channel (parts.py) at the first
# app.part("discord") once a token is set.
LET_GO = ".:boot,command commands:command"
NS = "dc_config"
OUTBOX_FILE = "dc_outbox.json"  # replies waiting for Discord (channels/chat_app.py)
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\ndiscord_set\tdiscord_set <bot-token> | discord_set off\t1\t1\tconnect the board's Discord bot"
    "\tmimi.discord.commands:cmd_set(app)\t1"
    "\ndiscord_allow\tdiscord_allow <user-id> [role]\t1\t2"
    "\tlet a Discord user talk to the bot (role: owner, operator (default) or observer)"
    "\tmimi.discord.commands:cmd_allow(app)"
    "\ndiscord_deny\tdiscord_deny <user-id>\t1\t1\tremove a Discord user\tmimi.discord.commands:cmd_deny(app)"
    "\ndiscord_status\tdiscord_status\t0\t0\tDiscord gateway, allowed users and counters"
    "\tmimi.discord.commands:cmd_status(app)"
    "\n"
)


def configured(config):
    return config.is_set(NS, "token")


def setup(app):
    """The discord_* console commands always; the channel only once a bot token is set."""
    app.console.commands.add_lines(_COMMANDS)
    return app.part("discord")
