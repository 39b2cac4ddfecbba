# Voice notes both ways: this boot part holds only the console lines; the code (speech-to-text, text-to-speech,
# the settings' commands) is imported when a voice note arrives, a reply is spoken or a command is typed.
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
# This boot part itself is let go once the boot has added its lines (mimi/heap.py): its lines stay in flash.
LET_GO = ".:boot"
_COMMANDS = (
    "\nset_stt\tset_stt <url|off> [model]\t1\t2\tthe speech-to-text service voice notes are sent to "
    "(OpenAI-compatible; model e.g. whisper-1)\tmimi.voice.commands:set_stt(app)"
    "\nset_stt_key\tset_stt_key <key|off>\t1\t1\tthe speech-to-text service's API key"
    "\tmimi.voice.commands:set_stt_key(app)\t1"
    "\nset_tts\tset_tts <url|off> [model] [voice]\t1\t3\tthe text-to-speech service for spoken replies (empty: "
    "the speech-to-text one)\tmimi.voice.commands:set_tts(app)"
    "\nset_tts_key\tset_tts_key <key|off>\t1\t1\tthe text-to-speech service's API key (empty: the "
    "speech-to-text key)\tmimi.voice.commands:set_tts_key(app)\t1"
    "\nset_voice\tset_voice on|off|auto\t1\t1\tanswer on Telegram with a voice note: always, never (default), "
    "or when spoken to\tmimi.voice.commands:set_voice(app)"
    "\nvoice_status\tvoice_status\t0\t0\tthe speech services, the voice replies and today's audio"
    "\tmimi.voice.commands:status(app)"
    "\n"
)


def setup(app):
    """The voice console commands (their code loads when one is typed); the boot lets this module go after
    (LET_GO)."""
    app.console.commands.add_lines(_COMMANDS)
