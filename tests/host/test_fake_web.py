# The fake outside web answers like the real services, errors included.
import json
import urllib.error
import urllib.request

import pytest

from host_sim.fake_web import BRAVE_PATH, FORECAST_PATH, GEOCODE_PATH, TAVILY_PATH, FakeWeb


@pytest.fixture(scope="module")
def web():
    server = FakeWeb()
    server.start()
    yield server
    server.stop()


def _call(url, headers=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, headers or {}, method="POST" if data else "GET")
    if data:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_brave_checks_the_token_and_the_parameters(web):
    status, body = _call(web.url + BRAVE_PATH + "?q=esp32")
    assert status == 422 and body["error"]["code"] == "VALIDATION"
    status, body = _call(web.url + BRAVE_PATH + "?q=esp32", {"X-Subscription-Token": "wrong"})
    assert status == 422 and body["type"] == "ErrorResponse"
    assert body["error"]["code"] == "SUBSCRIPTION_TOKEN_INVALID"
    token = {"X-Subscription-Token": web.brave_key}
    assert _call(web.url + BRAVE_PATH + "?q=esp32&count=21", token)[0] == 422
    status, body = _call(web.url + BRAVE_PATH + "?q=esp32&count=3", token)
    assert status == 200 and body["type"] == "search" and len(body["web"]["results"]) == 3
    assert "<strong>" in body["web"]["results"][0]["description"]
    web.fail_search(429)
    status, body = _call(web.url + BRAVE_PATH + "?q=esp32", token)
    assert status == 429 and body["error"]["code"] == "RATE_LIMITED"


def test_tavily_takes_a_bearer_key_or_the_older_api_key_field(web):
    status, body = _call(web.url + TAVILY_PATH, body={"query": "x"})
    assert status == 401 and body["detail"]["error"].startswith("Unauthorized")
    status, body = _call(web.url + TAVILY_PATH, {"Authorization": "Bearer " + web.tavily_key},
                         {"query": "micropython", "max_results": 2})
    assert status == 200 and [r["url"] for r in body["results"]][0] == "https://micropython.org/"
    assert len(body["results"]) == 2 and set(body["results"][0]) >= {"title", "url", "content", "score"}
    status, body = _call(web.url + TAVILY_PATH, body={"api_key": web.tavily_key, "query": "micropython"})
    assert status == 200 and len(body["results"]) == 5


def test_open_meteo_geocoding_and_forecast_shapes(web):
    status, body = _call(web.url + GEOCODE_PATH + "?name=Paris&count=10")
    assert status == 200 and [p["country_code"] for p in body["results"]] == ["FR", "US"]
    status, body = _call(web.url + GEOCODE_PATH + "?name=Atlantis&count=1")
    assert status == 200 and "results" not in body
    status, body = _call(web.url + FORECAST_PATH + "?latitude=52.52&longitude=13.41&current=temperature_2m,"
                         "weather_code&daily=weather_code,temperature_2m_max&timezone=auto&forecast_days=2")
    assert status == 200 and body["timezone"] == "Europe/Berlin"
    assert set(body["current"]) == {"time", "interval", "temperature_2m", "weather_code"}
    assert body["current_units"]["temperature_2m"] == "\u00b0C" and len(body["daily"]["time"]) == 2
    status, body = _call(web.url + FORECAST_PATH + "?latitude=91&longitude=0")
    assert status == 400 and body["error"] is True and "Latitude must be in range" in body["reason"]
    status, body = _call(web.url + FORECAST_PATH + "?latitude=1&longitude=0&current=bogus")
    assert status == 400 and "bogus" in body["reason"]
