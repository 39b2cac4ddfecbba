# How the board shows itself on MQTT: availability, the retained state, Home Assistant discovery, the inbox check.
import asyncio

from mimi import platform
from mimi.mqtt import discovery, messages
from mimi.platform import const

_STATE_PERIOD_S = const(60)  # the retained state is refreshed this often (and after every reply)
_PROBE_WAIT_S = const(5)  # a test message to our own `in` must come back this soon, else the ACL drops it
_RECALL_WAIT_S = const(2)  # the broker sends a retained state right after the SUBACK; none for a new board
_REFUSED = const(0x80)


async def online(ch):
    """Right after connecting (the channel's connect has said online, retained, before any answer that waited):
    subscriptions, discovery, the state, the inbox check."""
    base, client = ch.base(), ch.client
    topics = [(base + "/in", 1), (base + "/reply", 1)] + [(t, 1) for t in ch.watched]
    codes = await client.subscribe(topics)
    if codes is None:
        platform.log("mqtt: the broker did not confirm the subscriptions")
    else:
        for (topic, _), code in zip(topics, codes):
            if code == _REFUSED:
                platform.log("mqtt: the broker refused the subscription to {} (its ACL does not let user '{}' "
                      "read it)".format(topic, _user(ch)))
    await announce(ch)
    if ch.recalling is not None:  # once a boot, before the first state: Last reply as the broker kept it
        await recall_state(ch, base)
    await publish_state(ch)
    await check_inbox(ch, base)


async def recall_state(ch, base):
    """Read this board's own retained state once (channel.remember takes its last reply and last error), so a
    restart or a crash does not blank Last reply; then unsubscribe."""
    topic = base + "/state"
    codes = await ch.client.subscribe([(topic, 1)])
    if codes is not None and codes[0] != _REFUSED:
        try:
            await asyncio.wait_for(ch.recalling.wait(), _RECALL_WAIT_S)
        except asyncio.TimeoutError:
            pass  # no retained state: a new board, or one whose state was cleared
    ch.recalling = None
    await ch.client.unsubscribe([topic])


def _user(ch):
    return ch.setting("user") or "(anonymous)"


async def check_inbox(ch, base):
    # MQTT 3.1.1 brokers (Mosquitto among them) grant any subscription and drop what the ACL refuses
    # without a word: a test message to our own `in` shows whether messages to this board can arrive.
    await ch.client.publish(base + "/in", ch.new_probe(), 1)
    for _ in range(_PROBE_WAIT_S * 10):
        if ch.probe_back() or not ch.client.connected:
            return
        await asyncio.sleep(0.1)
    platform.log("mqtt: a test message to {}/in did not come back within {} s: the broker's ACL does not let user "
          "'{}' read or write it, so messages to this board cannot arrive".format(base, _PROBE_WAIT_S, _user(ch)))


async def announce(ch, device_id=None, remove=False):
    """Home Assistant discovery: the configs (retained), or empty retained messages that remove them."""
    prefix, device_id, base = ch.setting("ha_prefix"), device_id or ch.device_id(), ch.base()
    if ch.setting("discovery") and not remove:
        for topic, config in discovery.configs(prefix, device_id, base):
            await ch.client.publish(topic, messages.encode(config), 1, True)
    else:
        for topic in discovery.topics(prefix, device_id):
            await ch.client.publish(topic, b"", 1, True)


def state(ch):
    app = ch.app
    free, _ = platform.heap_info()
    rssi = None
    try:
        if app.wifi.is_up():
            rssi = app.wifi.wlan.status("rssi")
    except (AttributeError, OSError, ValueError, TypeError):
        pass
    budget = getattr(app, "budget", None)
    if budget is not None and budget.store.dirty:
        budget.store.save()  # saved before published: after a crash the count goes on from here, never lower
    return {
        "online": ch.client.connected,
        "heap_free": free,
        "uptime_s": platform.ticks_diff(platform.ticks_ms(), app.started_ms) // 1000,
        "rssi_dbm": rssi,
        "tokens_today": budget.store.saved_used if budget is not None else None,
        "last_error": messages.cut(ch.last_error),
        "last_reply": messages.cut(ch.last_reply),
    }


async def publish_state(ch):
    await ch.client.publish(ch.base() + "/state", messages.encode(state(ch)), 0, True)


async def availability(ch, online, base=None):
    """online/offline (retained); offline also marks the state so (a goodbye: the will is not sent)."""
    base = base or ch.base()
    await ch.client.publish(base + "/availability", b"online" if online else b"offline", 1, True)
    if not online:
        shown = state(ch)
        shown["online"] = False
        await ch.client.publish(base + "/state", messages.encode(shown), 0, True)


async def periodic(ch):
    while True:
        await asyncio.sleep(_STATE_PERIOD_S)
        if ch.client.connected:
            await publish_state(ch)
