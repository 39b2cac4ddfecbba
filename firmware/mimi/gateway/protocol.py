# The gateway's JSON frames: check what a client sends, build what the server sends.
import json

from mimi.platform import const
from mimi import jsontext

CHAT_ID_MAX = const(64)
# The web app's views ask with these (gateway/views.py answers; README: the gateway's frames).
VIEW_KINDS = ("status", "settings", "set", "files", "file", "save", "watchers", "watcher", "usage")
_TYPE_SHOWN_MAX = const(32)  # an unknown type is quoted back at most this long


class BadFrame(ValueError):
    """A client frame the gateway cannot use; the text is sent back in an error frame."""


def valid_chat_id(chat_id):
    """True for 1..64 characters of [A-Za-z0-9_-]."""
    if not isinstance(chat_id, str) or not 0 < len(chat_id) <= CHAT_ID_MAX:
        return False
    for ch in chat_id:
        if not ("a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch in "_-"):
            return False
    return True


def parse(data):
    """(chat_id or None, content) from one message frame; BadFrame says what is wrong with it."""
    kind, chat_id, content = parse_frame(data)
    if kind != "message":
        raise BadFrame('expected a "message" frame')
    return chat_id, content


def parse_frame(data):
    """("message", chat_id or None, content), ("confirm", question id, approve: bool) or
    ("history", chat_id or None, None) from one client frame; BadFrame says what is wrong with it."""
    if not isinstance(data, str):
        raise BadFrame("send text frames holding JSON, not binary frames")
    try:
        obj = jsontext.loads(data)
    except ValueError:
        raise BadFrame('not JSON; send {"type":"message","content":"..."}')
    if not isinstance(obj, dict):
        raise BadFrame('expected a JSON object like {"type":"message","content":"..."}')
    kind = obj.get("type")
    if kind == "confirm":
        qid, approve = obj.get("id"), obj.get("approve")
        if not isinstance(qid, str) or not isinstance(approve, bool):
            raise BadFrame('a confirm frame needs an id and "approve": true or false')
        return "confirm", qid, approve
    if kind == "attach":  # a photo or file POSTed to /upload, sent with optional text
        upload_id, caption, chat_id = obj.get("attachment"), obj.get("content", ""), obj.get("chat_id")
        if not valid_chat_id(upload_id) or not isinstance(caption, str):
            raise BadFrame('an attach frame needs "attachment" (the id /upload answered) and text in content, '
                           'if any')
        if chat_id is not None and not valid_chat_id(chat_id):
            raise BadFrame("chat_id must be 1 to {} characters of A-Z a-z 0-9 _ -".format(CHAT_ID_MAX))
        return "attach", chat_id, (upload_id, caption)
    if kind in VIEW_KINDS:  # the page's other views: checked where they are answered
        return "view", kind, obj
    if kind not in ("message", "history"):
        shown = str(kind)[:_TYPE_SHOWN_MAX] if kind is not None else "(none)"
        raise BadFrame('unknown type {}; a client sends "message" (or "confirm" to answer a question, '
                       '"history" for the chat so far, or a view\'s frame: see the README)'.format(shown))
    chat_id = obj.get("chat_id")
    if chat_id is not None and not valid_chat_id(chat_id):
        raise BadFrame("chat_id must be 1 to {} characters of A-Z a-z 0-9 _ -".format(CHAT_ID_MAX))
    if kind == "history":
        return "history", chat_id, None
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        raise BadFrame("a message needs text in content")
    return "message", chat_id, content


def hello(chat_id, role=None, upload_key=None):
    """The first frame, and again when the role changes: the client's chat, the role it acts with (the page offers
    the owner's views only to the owner) and its upload key (POST /upload?key=: the upload is this connection's)."""
    frame = {"type": "hello", "chat_id": chat_id}
    if role is not None:
        frame["role"] = role
    if upload_key is not None:
        frame["upload_key"] = upload_key
    return json.dumps(frame)


def user(chat_id, text):
    """What another client of the same chat just sent (every open tab shows the whole chat)."""
    return json.dumps({"type": "user", "content": text, "chat_id": chat_id})


def token(chat_id, delta):
    return json.dumps({"type": "token", "content": delta, "chat_id": chat_id})


def tool(chat_id, name):
    return json.dumps({"type": "tool", "name": name, "chat_id": chat_id})


def response(chat_id, text):
    return json.dumps({"type": "response", "content": text, "chat_id": chat_id})


def error(chat_id, reason):
    return json.dumps({"type": "error", "error": reason, "chat_id": chat_id})


def notice(chat_id, text):
    """A line beside the reply (e.g. "I ran gpio_write ..."); the reply itself still follows."""
    return json.dumps({"type": "notice", "content": text, "chat_id": chat_id})


def confirm(chat_id, question):
    """Ask the client to approve a tool call; it answers {"type":"confirm","id":...,"approve":true|false}."""
    try:
        shown = json.loads(question.input_text)  # the input as sent, secrets masked
    except ValueError:  # cut short: the text as it is
        shown = question.input_text
    return json.dumps({"type": "confirm", "id": question.id, "tool": question.tool, "input": shown,
                       "text": question.text(), "chat_id": chat_id})


def confirmed(chat_id, question_id, outcome):
    """The question is closed: outcome is "approved", "denied" or "timed out"."""
    return json.dumps({"type": "confirmed", "id": question_id, "outcome": outcome, "chat_id": chat_id})
