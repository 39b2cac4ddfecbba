# Direct chats of the chat apps (Matrix, Discord): each kept with its one user in the app's `direct` setting, under a
# hash of its id; channels/chat_app.py writes them, safety/roles.py reads a chat's trust from them.
import hashlib


def chat_key(chat_id):
    """A chat id as the direct setting keeps it: 10 hex digits of its SHA-256 (a Matrix room id is a run of random
    letters and digits that a setting would refuse as a key pasted in clear)."""
    return "".join("{:02x}".format(b) for b in hashlib.sha256(str(chat_id).encode()).digest()[:5])


def user_role(config, ns, chat_id):
    """The role word the allow setting gives the one user chat_id is a direct chat with, else None."""
    key = chat_key(chat_id)
    for pair in config.get(ns, "direct").split(","):
        chat, _, user = pair.rpartition("=")
        if chat == key:
            for entry in config.get(ns, "allow").split(","):
                known, _, role = entry.strip().rpartition("=")
                if known == user:
                    return role
    return None
