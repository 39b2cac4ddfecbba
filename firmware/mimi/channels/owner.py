# Notices for the owner: always on the console, and to every Telegram owner when the bot can reach them.
import asyncio

from mimi import platform
from mimi.bus.message import TELEGRAM, Message
from mimi.platform import const
from mimi.safety import roles

_NOTICE_MAX = const(1000)  # characters of one notice
PREFIX = "notice: "
_DROPPED = "notice: not sent to owner {} on Telegram: the outbound queue is full"


class Owner:
    """`tell(text)` may be called from anywhere, sync or async: the Telegram copies are queued (or, with may_drop,
    dropped with a console line while the outbound queue is full: a notice sent when memory is short)."""

    def __init__(self, app):
        self.app = app
        self.told = 0

    def tell(self, text, may_drop=False):
        text = str(text)[:_NOTICE_MAX]
        platform.log(PREFIX + text)  # never glued to a reply that is streaming on the console
        self.told += 1
        if TELEGRAM not in self.app.channels:
            return
        for user_id in roles.owners(self.app.config):
            message = Message(TELEGRAM, user_id, text, {"kind": "notice"})
            try:
                self.app.bus.outbound.put_nowait(message)
            except Exception:  # the outbound queue is full: deliver as soon as there is room
                if may_drop:
                    platform.log(_DROPPED.format(user_id))
                    continue
                asyncio.create_task(self.app.bus.outbound.put(message))
