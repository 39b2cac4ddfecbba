# telegram layer
OUTBOX_FILE = "tg_outbox.json"  # replies waiting for Telegram (outbox.py); found at boot, they wake the bot
