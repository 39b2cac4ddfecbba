# The APIs behind the web tools, offline: Brave Search, Tavily, Open-Meteo forecast and geocoding answers.
import hashlib
import html
import re
import time
import uuid
from datetime import datetime, timedelta, timezone

BRAVE_COUNT_MAX = 20  # the real API refuses more with 422
TAVILY_RESULTS_MAX = 20

# A tiny web to search: (title, url, text). Matched on the query's words; otherwise generic results.
DOCUMENTS = (
    ("MicroPython - Python for microcontrollers", "https://micropython.org/",
     "MicroPython is a lean and efficient implementation of the Python 3 programming language that "
     "is optimised to run on microcontrollers."),
    ("ESP32-S3 Wi-Fi & Bluetooth SoC | Espressif Systems", "https://www.espressif.com/en/products/socs/esp32-s3",
     "ESP32-S3 is a dual-core XTensa LX7 MCU, capable of running at 240 MHz, with 512 KB of SRAM."),
    ("Open-Meteo: Free Weather API", "https://open-meteo.com/",
     "Open-Meteo offers free weather forecast APIs for open-source developers and non-commercial use. "
     "No API key required."),
    ("Claude (language model) - Wikipedia", "https://en.wikipedia.org/wiki/Claude_(language_model)",
     "Claude is a family of large language models developed by Anthropic."),
)

# A few places, in the shape Open-Meteo's geocoding API gives them.
PLACES = (
    {"id": 2950159, "name": "Berlin", "latitude": 52.52437, "longitude": 13.41053, "elevation": 74.0,
     "feature_code": "PPLC", "country_code": "DE", "admin1": "Land Berlin", "timezone": "Europe/Berlin",
     "population": 3426354, "country": "Germany", "country_id": 2921044, "admin1_id": 2950157},
    {"id": 2988507, "name": "Paris", "latitude": 48.85341, "longitude": 2.3488, "elevation": 42.0,
     "feature_code": "PPLC", "country_code": "FR", "admin1": "\u00cele-de-France", "timezone": "Europe/Paris",
     "population": 2138551, "country": "France", "country_id": 3017382, "admin1_id": 3012874},
    {"id": 4717560, "name": "Paris", "latitude": 33.66094, "longitude": -95.55551, "elevation": 177.0,
     "feature_code": "PPLA2", "country_code": "US", "admin1": "Texas", "admin2": "Lamar",
     "timezone": "America/Chicago", "population": 24782, "country": "United States", "country_id": 6252001},
    {"id": 2657896, "name": "Z\u00fcrich", "latitude": 47.36667, "longitude": 8.55, "elevation": 429.0,
     "feature_code": "PPLA", "country_code": "CH", "admin1": "Zurich", "timezone": "Europe/Zurich",
     "population": 341730, "country": "Switzerland", "country_id": 2658434},
    {"id": 1850147, "name": "Tokyo", "latitude": 35.6895, "longitude": 139.69171, "elevation": 44.0,
     "feature_code": "PPLC", "country_code": "JP", "admin1": "Tokyo", "timezone": "Asia/Tokyo",
     "population": 8336599, "country": "Japan", "country_id": 1861060},
)

FORECAST_CURRENT = ("temperature_2m", "relative_humidity_2m", "apparent_temperature", "is_day", "precipitation",
                    "rain", "showers", "snowfall", "weather_code", "cloud_cover", "pressure_msl",
                    "surface_pressure", "wind_speed_10m", "wind_direction_10m", "wind_gusts_10m")
FORECAST_DAILY = ("weather_code", "temperature_2m_max", "temperature_2m_min", "apparent_temperature_max",
                  "apparent_temperature_min", "sunrise", "sunset", "precipitation_sum",
                  "precipitation_probability_max", "wind_speed_10m_max")
UNITS = {"temperature_2m": "\u00b0C", "apparent_temperature": "\u00b0C", "relative_humidity_2m": "%",
         "precipitation": "mm", "rain": "mm", "showers": "mm", "snowfall": "cm", "weather_code": "wmo code",
         "cloud_cover": "%", "pressure_msl": "hPa", "surface_pressure": "hPa", "wind_speed_10m": "km/h",
         "wind_direction_10m": "\u00b0", "wind_gusts_10m": "km/h", "is_day": "", "temperature_2m_max": "\u00b0C",
         "temperature_2m_min": "\u00b0C", "apparent_temperature_max": "\u00b0C",
         "apparent_temperature_min": "\u00b0C", "sunrise": "iso8601", "sunset": "iso8601",
         "precipitation_sum": "mm", "precipitation_probability_max": "%", "wind_speed_10m_max": "km/h"}
_CODES = (0, 1, 2, 3, 45, 61, 63, 71, 80, 95)
_OFFSETS = {"Europe/Berlin": 7200, "Europe/Paris": 7200, "Europe/Zurich": 7200, "America/Chicago": -18000,
            "Asia/Tokyo": 32400}


class ApiFailure(Exception):
    def __init__(self, status, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _matches(query):
    words = [w for w in query.lower().split() if len(w) > 2]
    found = [d for d in DOCUMENTS if any(w in (d[0] + " " + d[2]).lower() for w in words)]
    generic = [("{} - result {}".format(query, i), "https://example.com/{}/{}".format(i, "-".join(query.split())),
                "A page about {} (number {}).".format(query, i)) for i in range(1, 25)]
    return found + generic


def _emphasised(text, query):
    """Brave marks query words with <strong> and escapes the rest as HTML."""
    words = [re.escape(html.escape(w)) for w in query.split() if len(w) > 2]
    if not words:
        return html.escape(text)
    return re.sub("(" + "|".join(words) + ")", r"<strong>\1</strong>", html.escape(text), flags=re.IGNORECASE)


# ---- Brave Search: GET /res/v1/web/search ----

def brave_error(status, code, detail, meta=None):
    return ApiFailure(status, {"type": "ErrorResponse", "error": {
        "id": str(uuid.uuid4()), "status": status, "code": code, "detail": detail, "meta": meta or {}},
        "time": int(time.time())})


BRAVE_FAULTS = {
    401: ("UNAUTHORIZED", "The request is not authorized."),
    422: ("SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid."),
    429: ("RATE_LIMITED", "Request rate limit exceeded for plan."),
    500: ("INTERNAL_SERVER_ERROR", "Internal server error."),
}


def brave_search(params, token, expected_token):
    if not token:
        raise brave_error(422, "VALIDATION", "Unable to validate request parameter(s)", {"errors": [
            {"type": "missing", "loc": ["header", "x-subscription-token"], "msg": "Field required"}]})
    if token != expected_token:
        raise brave_error(422, *BRAVE_FAULTS[422])
    query = params.get("q", "")
    try:
        count = int(params.get("count", "20"))
    except ValueError:
        count = -1
    if not query.strip() or not 1 <= count <= BRAVE_COUNT_MAX or len(query) > 400:
        raise brave_error(422, "VALIDATION", "Unable to validate request parameter(s)")
    results = []
    for title, url, text in _matches(query)[:count]:
        host = url.split("/")[2]
        results.append({
            "title": _emphasised(title, query), "url": url, "is_source_local": False, "is_source_both": False,
            "description": _emphasised(text, query), "page_age": "2024-11-02T08:15:00", "age": "November 2, 2024",
            "profile": {"name": host, "url": url, "long_name": host, "img": "https://imgs.search.brave.com/x"},
            "language": "en", "family_friendly": True, "type": "search_result", "subtype": "generic",
            "is_live": False,
            "meta_url": {"scheme": "https", "netloc": host, "hostname": host, "favicon": "", "path": ""},
        })
    body = {"query": {"original": query, "show_strict_warning": False, "is_navigational": False,
                      "more_results_available": True, "spellcheck_off": True, "country": "us"},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": i, "all": False}
                                                for i in range(len(results))], "top": [], "side": []},
            "type": "search",
            "web": {"type": "search", "results": results, "family_friendly": True}}
    return body


def brave_rate_headers(remaining):
    return {"X-RateLimit-Limit": "1, 2000", "X-RateLimit-Policy": "1;w=1, 2000;w=2592000",
            "X-RateLimit-Remaining": "{}, {}".format(min(1, remaining), remaining),
            "X-RateLimit-Reset": "1, 1419704"}


# ---- Tavily: POST /search ----

def tavily_error(status, text):
    return ApiFailure(status, {"detail": {"error": text}})


TAVILY_FAULTS = {
    401: "Unauthorized: missing or invalid API key.",
    429: "Your request has been blocked due to excessive requests. Please reduce the rate of requests.",
    432: "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
    500: "Internal Server Error",
}


def tavily_search(body, bearer, expected_key):
    key = bearer or (body.get("api_key") if isinstance(body, dict) else None)  # older clients send api_key
    if key != expected_key:
        raise tavily_error(401, TAVILY_FAULTS[401])
    if not isinstance(body, dict) or not isinstance(body.get("query"), str) or not body["query"].strip():
        raise tavily_error(400, "Query is missing.")
    count = body.get("max_results", 5)
    if not isinstance(count, int) or not 0 <= count <= TAVILY_RESULTS_MAX:
        raise tavily_error(400, "max_results must be between 0 and {}.".format(TAVILY_RESULTS_MAX))
    query = body["query"]
    results = [{"title": title, "url": url, "content": text, "score": round(0.9 - 0.05 * i, 4),
                "raw_content": None, "favicon": None}
               for i, (title, url, text) in enumerate(_matches(query)[:count])]
    return {"query": query, "follow_up_questions": None, "answer": None, "images": [], "results": results,
            "response_time": 0.84, "request_id": str(uuid.uuid4())}


# ---- Open-Meteo: GET /v1/search (geocoding) and GET /v1/forecast ----

def meteo_error(reason):
    return ApiFailure(400, {"error": True, "reason": reason})


def geocode(params):
    name = params.get("name")
    if name is None:
        raise meteo_error("Parameter 'name' is required")
    count = int(params.get("count", "10"))
    if not 1 <= count <= 100:
        raise meteo_error("Parameter 'count' must be between 1 and 100")
    wanted = name.strip().lower()
    found = [dict(p) for p in PLACES if len(wanted) >= 2 and p["name"].lower().startswith(wanted)]
    body = {"generationtime_ms": 0.53}
    if found:  # the real API leaves "results" out when nothing matches
        body["results"] = found[:count]
    return body


def _seed(lat, lon):
    return int(hashlib.sha256("{:.2f},{:.2f}".format(lat, lon).encode()).hexdigest()[:8], 16)


def _number(params, name, low, high, what):
    text = params.get(name)
    if text is None:
        raise meteo_error("Parameter '{}' is required".format(name))
    try:
        value = float(text)
    except ValueError:
        raise meteo_error("Parameter '{}' must be a number".format(name))
    if not low <= value <= high:
        raise meteo_error("{} must be in range of {} to {}\u00b0. Given: {}.".format(what, low, high, value))
    return value


def _variables(params, name, known):
    names = [v for v in params.get(name, "").split(",") if v]
    for var in names:
        if var not in known:
            raise meteo_error("Cannot initialize ForecastVariable{} from invalid String value {} for key {}".format(
                "Daily" if name == "daily" else "", var, name))
    return names


def forecast(params):
    lat = _number(params, "latitude", -90, 90, "Latitude")
    lon = _number(params, "longitude", -180, 180, "Longitude")
    current_vars = _variables(params, "current", FORECAST_CURRENT)
    daily_vars = _variables(params, "daily", FORECAST_DAILY)
    days = int(params.get("forecast_days", "7"))
    if not 0 <= days <= 16:
        raise meteo_error("Forecast days is invalid. Allowed range 0 to 16.")
    seed = _seed(lat, lon)
    zone = "GMT"
    if params.get("timezone") == "auto":
        near = [p for p in PLACES if abs(p["latitude"] - lat) < 1 and abs(p["longitude"] - lon) < 1]
        zone = near[0]["timezone"] if near else "GMT"
    offset = _OFFSETS.get(zone, 0)
    now = datetime.now(timezone.utc) + timedelta(seconds=offset)
    now = now.replace(minute=now.minute - now.minute % 15, second=0, microsecond=0)
    base = 5 + seed % 20 + 0.1 * (seed % 10)
    body = {"latitude": round(lat, 4), "longitude": round(lon, 4), "generationtime_ms": 0.08,
            "utc_offset_seconds": offset, "timezone": zone,
            "timezone_abbreviation": "GMT" if zone == "GMT" else "GMT{:+d}".format(offset // 3600),
            "elevation": 38.0}
    if current_vars:
        values = {"temperature_2m": round(base, 1), "apparent_temperature": round(base - 1.4, 1),
                  "relative_humidity_2m": 40 + seed % 50, "precipitation": 0.0, "rain": 0.0, "showers": 0.0,
                  "snowfall": 0.0, "weather_code": _CODES[seed % len(_CODES)], "cloud_cover": seed % 100,
                  "pressure_msl": 1013.2, "surface_pressure": 1008.9, "wind_speed_10m": round(3 + seed % 25 + 0.3, 1),
                  "wind_direction_10m": seed % 360, "wind_gusts_10m": 30.2, "is_day": 1}
        body["current_units"] = dict([("time", "iso8601"), ("interval", "seconds")] +
                                     [(v, UNITS[v]) for v in current_vars])
        body["current"] = dict([("time", now.strftime("%Y-%m-%dT%H:%M")), ("interval", 900)] +
                               [(v, values[v]) for v in current_vars])
    if daily_vars:
        dates = [(now + timedelta(days=i)).strftime("%Y-%m-%d") for i in range(days)]
        series = {
            "weather_code": [_CODES[(seed + i) % len(_CODES)] for i in range(days)],
            "temperature_2m_max": [round(base + 3 + i * 0.5, 1) for i in range(days)],
            "temperature_2m_min": [round(base - 4 - i * 0.3, 1) for i in range(days)],
            "apparent_temperature_max": [round(base + 2, 1) for _ in range(days)],
            "apparent_temperature_min": [round(base - 5, 1) for _ in range(days)],
            "sunrise": [d + "T06:12" for d in dates], "sunset": [d + "T20:31" for d in dates],
            "precipitation_sum": [0.0 for _ in range(days)],
            "precipitation_probability_max": [(seed + 17 * i) % 100 for i in range(days)],
            "wind_speed_10m_max": [round(10 + i * 1.5, 1) for i in range(days)],
        }
        body["daily_units"] = dict([("time", "iso8601")] + [(v, UNITS[v]) for v in daily_vars])
        body["daily"] = dict([("time", dates)] + [(v, series[v]) for v in daily_vars])
    return body
