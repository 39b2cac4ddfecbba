# Matrix (client-server API v3): off until matrix_set logs the board in; the channel's code loads only then.
# This boot part owns the settings' names and the console lines; App makes the channel (parts.py) at the first
# app.part("matrix") once an access token is kept.
LET_GO = ".:boot,command commands:command"
NS = "mx_config"
OUTBOX_FILE = "mx_outbox.json"  # replies waiting for the homeserver (channels/chat_app.py)
SYNC_FILE = "mx_sync.json"  # the sync's next_batch: a restart neither answers twice nor misses a message
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\nmatrix_set\tmatrix_set <homeserver-url> <user> <password> | matrix_set off\t1\t3"
    "\tlog the board in to a Matrix homeserver (only the access token is kept)\tmimi.matrix.commands:cmd_set(app)\t3"
    "\nmatrix_allow\tmatrix_allow <@user:server> [role]\t1\t2"
    "\tlet a Matrix user talk to the board (role: owner, operator (default) or observer)"
    "\tmimi.matrix.commands:cmd_allow(app)"
    "\nmatrix_deny\tmatrix_deny <@user:server>\t1\t1\tremove a Matrix user\tmimi.matrix.commands:cmd_deny(app)"
    "\nmatrix_status\tmatrix_status\t0\t0\tMatrix login, sync, allowed users and counters"
    "\tmimi.matrix.commands:cmd_status(app)"
    "\n"
)


def configured(config):
    return config.is_set(NS, "token") and bool(config.get(NS, "homeserver"))


def setup(app):
    """The matrix_* console commands always; the channel only once the board is logged in."""
    app.console.commands.add_lines(_COMMANDS)
    return app.part("matrix")
