# A provider's error that quotes the request's key, from the outside (both runtimes): the console, the web chat's
# error frame, the owner's notice (console and Telegram) and the log show it masked, never whole.
import asyncio
import re

from websockets.asyncio.client import connect

from host_sim import fake_anthropic
from host_sim.fake_openai import error, text
from tests.e2e.conftest import API_KEY, OWNER_ID, TG_TOKEN, free_port
from tests.e2e.gateway_client import Gateway, hello, listening, say, until_reply
from tests.e2e.test_models import lan, lan_server  # noqa: F401  (the LAN model server's fixtures)

KEY = "sk-proj-e2e" + "p" * 30 + "EBKEYTAIL"  # model profile eb's key
UNKNOWN = "sk-other-" + "o" * 30 + "NOBODYSKEY"  # a key no setting holds, quoted after "Bearer": masked all the same
MODEL = "qwen2.5:7b"
QUOTED = "Invalid request: Authorization: Bearer {} (after Authorization: Bearer {})".format(KEY, UNKNOWN)
SHOWN = "Invalid request: Authorization: Bearer sk-p\u2026TAIL (after Authorization: Bearer sk-o\u2026SKEY)"


def _never_whole(text):
    return KEY not in text and "EBKEYTAIL" not in text and "NOBODYSKEY" not in text and "p" * 20 not in text


def test_a_provider_error_quoting_the_key_is_masked_on_the_console_the_web_chat_the_owners_notice_and_the_log(
        boot, tg, fake, lan):  # noqa: F811
    port = free_port()
    tg.add_chat(OWNER_ID)  # the owner has opened the bot's chat: notices reach it
    dev = boot("--telegram-api", tg.url, "--ws-port", str(port))
    listening(dev, port)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TG_TOKEN, "tg_allow {} owner".format(OWNER_ID),
                 "llm_add eb openai {} {} {}".format(lan.base, MODEL, KEY),
                 "llm_add local openai {} {}".format(lan.base, MODEL), "llm_use eb,local"):
        dev.command(line)
    assert "eb" in dev.command("llm_list")

    # A 403 quoting the key: the next profile answers, and the owner is told why, on the console and Telegram.
    lan.script(error(403, QUOTED), text("The local model answers."))
    out = dev.command("chat hello", 60)
    assert "The local model answers." in out
    assert lan.requests[0]["headers"]["Authorization"] == "Bearer " + KEY  # the key the error quotes
    notice = "Model profile eb's key is not allowed to do that (403): " + SHOWN
    assert tg.wait_for(lambda: any(notice in m["shown"] for m in tg.sent(OWNER_ID)), 30), dev.output[-3000:]
    assert re.search(re.escape("notice: " + notice), dev.output)  # the console's notice
    assert re.search(re.escape("llm: eb refused its key (" + notice), dev.output)  # the log's line

    # A 400 quoting it: the console's answer is the error, masked (eb rests after its refusal: local is asked).
    lan.script(error(400, QUOTED))
    out = dev.command("chat and again", 60)
    assert "Model profile local rejected the request (400): " + SHOWN in out, out
    assert "(eb resting " in out and "s more: refused its key)" in out

    # The same in the web chat: its error frame.
    lan.script(error(400, QUOTED))
    gateway = Gateway(dev, port)

    async def web():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("hello from the web"))
            return await until_reply(ws)

    frames = asyncio.run(web())
    assert frames[-1]["type"] == "error" and SHOWN in frames[-1]["error"], frames
    assert all(_never_whole(str(frame)) for frame in frames)

    # Claude's own API quoting its x-api-key: the same.
    dev.command("llm_use claude")
    fake.script(fake_anthropic.error(400, "invalid_request_error", "bad header x-api-key: " + API_KEY))
    out = dev.command("chat and Claude?", 60)
    assert "The Anthropic API rejected the request (400): bad header x-api-key: sk-a\u2026TAIL" in out, out

    assert _never_whole(dev.output) and API_KEY not in dev.output and "SECRETTAIL" not in dev.output
    assert all(_never_whole(m["shown"]) for m in tg.sent(OWNER_ID))
