# The web tools through the firmware: web_fetch, web_search (Brave, Tavily) and get_weather on a fake web.
from host_sim.fake_anthropic import text, tool_use, tool_use_multi
from host_sim.fake_web import BRAVE_PATH, FORECAST_PATH, GEOCODE_PATH, HUGE_BYTES, TAVILY_PATH


def _results(fake, n):
    """The tool_result blocks the firmware sent in its n-th request to the model (1-based)."""
    blocks = fake.wait_requests(n)[n - 1]["body"]["messages"][-1]["content"]
    return [(b["content"], b["is_error"]) for b in blocks if b["type"] == "tool_result"]


def test_web_fetch_reads_pages_refuses_binaries_and_stops_on_huge_ones(device, fake, web):
    fake.script(tool_use_multi([("web_fetch", {"url": web.url + "/redirect/3"}),
                                ("web_fetch", {"url": web.url + "/image.png"}),
                                ("web_fetch", {"url": web.url + "/huge.html"}),
                                ("web_fetch", {"url": web.url + "/chunked.txt"})]),
                text("The page says Mimi lives on a chip."))
    assert "Mimi lives on a chip." in device.command("chat what does that page say?", timeout=60)
    (page, page_error), (image, image_error), (huge, huge_error), (chunked, _) = _results(fake, 2)
    assert not page_error
    assert page.startswith("URL: {}/page.html\nTitle: The Tiny Assistant \u2013 Notes\n".format(web.url))
    assert "Mimi lives on a chip" in page and "512 KB of SRAM & 8 MB of PSRAM" in page
    assert "- Talks to Claude" in page and "Board | \u20ac12" in page
    for hidden in ("SECRET-SCRIPT-TEXT", "COMMENTED-OUT", "NOSCRIPT-TEXT", "font-family", "<p>"):
        assert hidden not in page
    assert image_error and "image/png, not text" in image
    assert not huge_error and "The beginning of a huge page." in huge
    assert huge.endswith("[cut: only the first 64 KB of the page were read]")
    assert web.huge_sent < HUGE_BYTES  # the firmware hung up instead of reading on
    assert chunked.endswith("Line one of a chunked text.\nGr\u00fc\u00dfe \u2014 split in the middle of characters.")
    hops = [r["path"] for r in web.requests if r["path"].startswith(("/redirect", "/page"))]
    assert hops == ["/redirect/3", "/redirect/2", "/redirect/1", "/page.html"]  # tools of a round run side by side


def test_web_search_needs_a_key_then_searches_brave_and_tavily(device, fake, web):
    fake.script(tool_use("web_search", {"query": "micropython"}), text("Search is not set up."))
    device.command("chat search micropython", timeout=30)
    assert _results(fake, 2) == [("web search is not configured: set_search_key <key>", True)]

    out = device.command("set_search_key " + web.brave_key)
    assert "saved; provider brave" in out and web.brave_key not in out
    device.command("config_set web_config.search_api {}{}".format(web.url, BRAVE_PATH))
    fake.script(tool_use("web_search", {"query": "micropython esp32", "count": 2}), text("Found it."))
    device.command("chat search again", timeout=30)
    ((found, is_error),) = _results(fake, 4)
    assert not is_error
    assert found.splitlines()[:3] == ["Results for 'micropython esp32' (Brave Search):",
                                      "1. MicroPython - Python for microcontrollers", "   https://micropython.org/"]
    assert "<strong>" not in found and found.count("\n   https://") == 2
    (request,) = web.requests_to(BRAVE_PATH)
    assert request["headers"]["x-subscription-token"] == web.brave_key
    assert request["query"]["q"] == "micropython esp32" and request["query"]["count"] == "2"

    web.fail_search(429)
    fake.script(tool_use("web_search", {"query": "busy"}), text("Too busy."))
    device.command("chat search busy", timeout=30)
    ((busy, is_error),) = _results(fake, 6)
    assert is_error and busy.startswith("Brave Search rate limit reached (HTTP 429")

    out = device.command("set_search_key " + web.tavily_key)
    assert "saved; provider tavily" in out and web.tavily_key not in out
    device.command("config_set web_config.search_api {}{}".format(web.url, TAVILY_PATH))
    fake.script(tool_use("web_search", {"query": "open-meteo weather"}), text("Tavily found it."))
    device.command("chat search tavily", timeout=30)
    ((found, is_error),) = _results(fake, 8)
    assert not is_error
    assert found.startswith("Results for 'open-meteo weather' (Tavily):\n1. Open-Meteo: Free Weather API")
    (request,) = web.requests_to(TAVILY_PATH)
    assert request["headers"]["authorization"] == "Bearer " + web.tavily_key
    assert request["body"]["query"] == "open-meteo weather" and request["body"]["max_results"] == 5
    assert web.brave_key not in device.output and web.tavily_key not in device.output


def test_get_weather_for_a_place_and_for_coordinates(device, fake, web):
    device.command("config_set web_config.weather_api " + web.url)
    device.command("config_set web_config.geocode_api " + web.url)
    fake.script(tool_use_multi([("get_weather", {"place": "Paris, Texas", "days": 2}),
                                ("get_weather", {"latitude": 52.52, "longitude": 13.41}),
                                ("get_weather", {"place": "Atlantis"})]),
                text("Warm in Paris."))
    assert "Warm in Paris." in device.command("chat weather?", timeout=30)
    (paris, paris_error), (berlin, berlin_error), (atlantis, atlantis_error) = _results(fake, 2)
    assert not paris_error and not berlin_error
    lines = paris.splitlines()
    assert lines[0].startswith("Weather for Paris, Texas, United States (33.66094, -95.55551), local time ")
    assert lines[0].endswith("(America/Chicago):")
    assert lines[1].startswith("Now: ") and "\u00b0C" in lines[1] and "wind " in lines[1]
    assert len(lines) == 4  # now and two days, each in words
    assert "wmo" not in paris and "weather code" not in paris
    assert berlin.startswith("Weather for 52.52, 13.41, local time ") and len(berlin.splitlines()) == 5
    assert atlantis_error and atlantis.startswith("no place called 'Atlantis' found")
    geocoding = web.requests_to(GEOCODE_PATH)
    assert sorted(r["query"]["name"] for r in geocoding) == ["Atlantis", "Paris"]
    forecasts = web.requests_to(FORECAST_PATH)
    assert sorted(r["query"]["latitude"] for r in forecasts) == ["33.66094", "52.52"]
    assert all(r["query"]["timezone"] == "auto" for r in forecasts)
