# What travels on the board's topics: a request on `in` (JSON or plain text), replies, the state, board ids.
import json

from mimi import jsontext, utf8
from mimi.mqtt import packets
from mimi.platform import const

TEXT_MAX = const(4000)  # characters of one message to the agent
ID_MAX = const(64)  # characters of a request id
_DEVICE_ID_MAX = const(32)
STATE_TEXT_MAX = const(250)  # Home Assistant keeps at most 255 characters of a sensor's state


def check_device_id(text):
    """ValueError unless text can name a board: 1 to 32 of a-z, 0-9, _ and - (a topic level and an HA node id)."""
    text = str(text).strip()
    if not text or len(text) > _DEVICE_ID_MAX:
        raise ValueError("a device id is 1 to {} characters".format(_DEVICE_ID_MAX))
    for ch in text:
        if not ("a" <= ch <= "z" or "0" <= ch <= "9" or ch in "_-"):
            raise ValueError("a device id uses only a-z, 0-9, _ and -, like kitchen or mimi-1a2b3c")
    return text


def parse_request(payload):
    """{"text", "reply_to", "id", "from"} from a message on `in`: a JSON object with "text" (and optional
    "reply_to", "id", "from"), or plain UTF-8 text (what Home Assistant's text and notify entities send).
    ValueError says what is wrong."""
    try:
        raw = utf8.strict(bytes(payload))  # MicroPython's decode would let surrogate halves by
    except ValueError:
        raise ValueError("the message is not UTF-8 text")
    if raw.lstrip().startswith("{"):
        data = jsontext.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("a JSON message must be an object")
        text = data.get("text", data.get("message"))  # Home Assistant's notify service names it "message"
        reply_to, rid, sender = data.get("reply_to"), data.get("id"), data.get("from")
    else:
        text, reply_to, rid, sender = raw, None, None, None
    if not isinstance(text, str) or not text.strip():
        raise ValueError('the message has no text: send {"text": "..."} or plain text')
    if len(text) > TEXT_MAX:
        raise ValueError("the text is longer than {} characters".format(TEXT_MAX))
    if reply_to is not None:
        packets.check_topic(reply_to)
    if rid is not None:
        if isinstance(rid, bool) or not isinstance(rid, (str, int)) or len(str(rid)) > ID_MAX:
            raise ValueError("id must be text or a number of at most {} characters".format(ID_MAX))
        rid = str(rid)
    if sender is not None:
        sender = check_device_id(sender)
    return {"text": text.strip(), "reply_to": reply_to, "id": rid, "from": sender}


def encode(data):
    return json.dumps(data)


def cut(text, limit=STATE_TEXT_MAX):
    text = str(text or "")
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"
