# tools layer: what the agent can do besides talking
# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it: the boot's loading,
# and the built-in tools' code and the turn their calls run for, loaded at a call (on a tight heap let go when no
# tool call is under way; a turn that holds a Turn across its rounds keeps that one's code while it does).
LET_GO = ("loading:boot clock:tool files:tool memory_tools:tool system:tool gpio:tool web:tool cron_tools:tool "
          "send_message:tool watch_tools:tool media_tools:tool finder:tool turn:tool")
