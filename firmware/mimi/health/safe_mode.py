# Safe mode's stand-in for the agent: says so at boot and answers every message with why (loaded only then).
import asyncio

from mimi.bus.message import Message
from mimi.platform import log

REPLY = ("The device is in safe mode after repeated crashes at startup: the agent is off. "
         "Fix the cause (console or gateway), then type restart.")


def start(health):
    """Say that the board is in safe mode, and start the responder in the agent's place: its task."""
    log("SAFE MODE: {} crashes in a row soon after boot; console and gateway only, no agent, "
          "no Telegram. Fix the cause, then type restart.".format(health.crashes_at_boot))
    return asyncio.create_task(_respond(health.app.bus))


async def _respond(bus):
    while True:
        message = await bus.inbound.get()
        meta = {"kind": "error", "streamed": False, "request": message.meta}
        await bus.outbound.put(Message(message.channel, message.chat_id, REPLY, meta))
