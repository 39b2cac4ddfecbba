# telegram layer
OUTBOX_FILE = "tg_outbox.json"  # replies waiting for Telegram (outbox.py); found at boot, they wake the bot
# The bot's own /words (bot.py): /start and /help greet and list the commands, /new starts a fresh conversation.
# A rule's /command may not take one (watch/rules.py).
START, HELP, NEW = "start", "help", "new"
BOT_COMMANDS = (START, HELP, NEW)
