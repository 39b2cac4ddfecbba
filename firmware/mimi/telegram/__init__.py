# telegram layer
OUTBOX_FILE = "tg_outbox.json"  # replies waiting for Telegram (outbox.py); found at boot, they wake the bot
BOT_COMMANDS = " start help new "  # the bot's own /words (bot.py); a rule's command may not take one
