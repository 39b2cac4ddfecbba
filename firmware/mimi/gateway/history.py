# The web chat's memory: a chat's recent turns from its session file, in one bounded frame.
import json

from mimi.platform import const

TURNS_MAX = const(40)  # messages in one history frame
TEXT_MAX = const(24 * 1024)  # characters of message text in one frame
MESSAGE_MAX = const(8 * 1024)  # a longer message is shown cut, with CUT_MARK
CUT_MARK = "\n\n[cut here: the whole message is longer]"


def recent(sessions, channel, chat_id):
    """([{"role", "content"}] oldest first, more): the newest turns that fit the caps; `more` says
    older ones were left out. The file is read from its end a block at a time, never whole."""
    picked, used, more = [], 0, False
    newest = sessions.newest(channel, chat_id)
    try:
        for message in newest:
            content = message["content"]
            if len(content) > MESSAGE_MAX:
                content = content[:MESSAGE_MAX] + CUT_MARK
            if len(picked) >= TURNS_MAX or (picked and used + len(content) > TEXT_MAX):
                more = True
                break
            used += len(content)
            picked.append({"role": message["role"], "content": content})
    finally:
        newest.close()  # closes the file at once, also when the caps stopped the reading
    picked.reverse()
    return picked, more


def frame(sessions, channel, chat_id, shown=None):
    """The history frame a client asked for: {"type": "history", "chat_id", "messages", "more"}, the chat named
    as the client names it (shown)."""
    messages, more = recent(sessions, channel, chat_id)
    return json.dumps({"type": "history", "chat_id": shown or chat_id, "messages": messages, "more": more})
