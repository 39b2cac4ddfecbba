# Claude's own web search from the outside: server tools offered, a pause_turn continued, citations as links.
import json

import pytest

from host_sim.fake_anthropic import text, web_search
from tests.e2e.conftest import OWNER_ID

OWNER = OWNER_ID
METRO = ("Metro do Porto: hours", "https://www.metrodoporto.pt/en/hours")
STCP = ("STCP night buses", "https://www.stcp.pt/en/night")


@pytest.fixture
def bot(owner_bot):
    return owner_bot


def _types(request):
    return [(t.get("type", "custom"), t["name"]) for t in request["body"].get("tools") or ()]


def test_a_search_turn_with_citations_and_a_pause_turn_continuation(bot, tg, fake):
    dev = bot()
    fake.script(
        web_search("porto metro hours", [METRO], intro="Let me look that up.", pause=True, delay=0.05),
        web_search("porto night bus", [STCP], answer=[
            "Here is what I found:\n\n",
            ("The metro runs until about 1 am.", METRO[1]),
            (" Night buses run after that.", STCP[1])], delay=0.05),
    )
    tg.user_message(OWNER, "How late can I get home in Porto tonight?")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30), dev.output[-3000:]
    first, second = fake.wait_requests(2)
    # Claude's own web search is offered (no key on the device: server mode by default), not the device tool
    assert ("web_search_20250305", "web_search") in _types(first)
    assert ("custom", "web_search") not in _types(first)
    assert [t for t in first["body"]["tools"] if t["name"] == "web_search"][0]["max_uses"] == 3
    assert first["headers"]["anthropic-beta"] == "advanced-tool-use-2025-11-20"  # the tool search tool's, no other
    # pause_turn: the paused content goes back as it came, as the final assistant message
    sent_back = second["body"]["messages"][-1]
    assert sent_back["role"] == "assistant"
    assert [b["type"] for b in sent_back["content"]] == ["text", "server_tool_use", "web_search_tool_result"]
    assert sent_back["content"][2]["content"][0]["url"] == METRO[1]
    assert sent_back["content"][2]["content"][0]["encrypted_content"]  # the opaque content kept intact
    (final,) = tg.sent(OWNER)
    assert final["parse_mode"] == "HTML"
    assert '<a href="https://www.metrodoporto.pt/en/hours">metrodoporto.pt</a>' in final["text"]
    assert '<a href="https://www.stcp.pt/en/night">stcp.pt</a>' in final["text"]
    assert "The metro runs until about 1 am." in final["shown"] and "Let me look that up." in final["shown"]
    assert any("searching the web" in d["shown"] for d in tg.drafts(OWNER))
    assert "searching the web" not in final["shown"]
    out = dev.command("usage")
    assert "2 web searches" in out, out
    assert "Claude's web searches today: 2 of 100" in out


def test_search_modes_device_off_and_server_with_fetch(device, fake):
    fake.script(text("a"), text("b"), text("c"), text("d"))
    assert "server: Claude searches the web itself" in device.command("set_search")
    device.command("set_search_key BSA-test-key-0123456789abcdef")
    assert "device: this device searches" in device.command("set_search")
    device.command("chat one")
    device.command("set_search off")
    device.command("chat two")
    device.command("set_search server")
    device.command("config_set web_config.server_fetch 1")
    device.command("chat three")
    device.command("set_search auto")
    device.command("chat four")
    one, two, three, four = fake.wait_requests(4)
    assert ("custom", "web_search") in _types(one)  # the device's own (deferred), and no server tool but the search's
    assert [t for t in _types(one) if t[0] != "custom"] == [("tool_search_tool_bm25_20251119", "tool_search_tool_bm25")]
    assert "web_search" not in [t[1] for t in _types(two)] and ("custom", "web_fetch") in _types(two)
    assert ("web_search_20250305", "web_search") in _types(three)
    assert ("web_fetch_20250910", "web_fetch") in _types(three) and ("custom", "web_fetch") not in _types(three)
    assert three["headers"]["anthropic-beta"] == "advanced-tool-use-2025-11-20,web-fetch-2025-09-10"
    assert ("custom", "web_search") in _types(four)  # auto with a key: the device's own tool again
    assert all(r["status"] == 200 for r in (one, two, three, four))


def test_the_day_search_cap_leaves_search_out(device, fake):
    device.command("config_set safety_config.day_searches 1")
    fake.script(web_search("q", [METRO], answer=[("Found it.", METRO[1])]), text("Without search."))
    out = device.command("chat find it", timeout=30)
    assert "[metrodoporto.pt](https://www.metrodoporto.pt/en/hours)" in out
    device.command("chat again")
    first, second = fake.wait_requests(2)
    assert ("web_search_20250305", "web_search") in _types(first)
    assert "web_search" not in [t[1] for t in _types(second)]
    body = json.dumps(second["body"]["messages"])
    assert "Found it." in body  # the reply with its link is in the history


def test_pause_turn_continuations_are_bounded(device, fake):
    fake.script(*[web_search("q{}".format(i), [METRO], intro="Still searching {}.".format(i), pause=True,
                             search_seconds=0) for i in range(5)])
    out = device.command("chat search a lot", timeout=40)
    assert "Still searching 0." in out and "Still searching 3." in out
    requests = fake.wait_requests(4)
    assert len(fake.requests) == 4  # the first call and 3 continuations, then the turn ends
    assert fake.pending == 1
    assert all(r["body"]["messages"][-1]["role"] == "assistant" for r in requests[1:])
    assert requests[3]["body"]["messages"][-2]["role"] == "user"  # the paused parts make one assistant turn
    assert len(requests[3]["body"]["messages"][-1]["content"]) == 9  # 3 x (text, server_tool_use, result)
