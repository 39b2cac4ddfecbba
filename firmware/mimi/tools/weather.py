# get_weather's code: Open-Meteo (no key) for a place name or coordinates, as a short text in words.
from mimi.platform import const
from mimi.tools.http_text import ServiceError, query, request_json
from mimi.tools.registry import ToolError
from mimi.tools.web import DAYS_DEFAULT, DAYS_MAX

WEATHER_API = "https://api.open-meteo.com"
GEOCODE_API = "https://geocoding-api.open-meteo.com"
_CANDIDATES = const(10)  # places asked for when the name says which country or region is meant
CURRENT = "temperature_2m,apparent_temperature,relative_humidity_2m,precipitation,weather_code,wind_speed_10m"
DAILY = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max"

# WMO weather interpretation codes, as Open-Meteo documents them.
WEATHER_CODES = {
    0: "clear sky", 1: "mainly clear", 2: "partly cloudy", 3: "overcast", 45: "fog", 48: "freezing fog",
    51: "light drizzle", 53: "drizzle", 55: "dense drizzle", 56: "light freezing drizzle",
    57: "dense freezing drizzle", 61: "light rain", 63: "rain", 65: "heavy rain", 66: "light freezing rain",
    67: "heavy freezing rain", 71: "light snow", 73: "snow", 75: "heavy snow", 77: "snow grains",
    80: "light rain showers", 81: "rain showers", 82: "violent rain showers", 85: "light snow showers",
    86: "heavy snow showers", 95: "thunderstorm", 96: "thunderstorm with light hail",
    99: "thunderstorm with heavy hail",
}

def _base(cfg, key, default):
    value = cfg.get("web_config", key) if cfg is not None else ""
    return (value or default).rstrip("/")


def describe_code(code):
    """A WMO weather code in words."""
    return WEATHER_CODES.get(code, "weather code {}".format(code))


def _number(value):
    """A JSON number as short text (Open-Meteo sends one decimal already)."""
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


async def _get(url, who):
    try:
        status, data, raw = await request_json("GET", url)
    except ServiceError as exc:
        raise ToolError("{} is unreachable: {}".format(who, exc))
    if status != 200 or not isinstance(data, dict):
        reason = data.get("reason") if isinstance(data, dict) else None
        raise ToolError("{} refused the request (HTTP {}: {})".format(who, status, reason or " ".join(raw.split())))
    return data


def pick_place(results, qualifier):
    """The first geocoding result, or the first whose country/region/code matches the qualifier."""
    qualifier = qualifier.strip().lower()
    for place in results:
        if not qualifier:
            return place
        for field in ("country", "admin1", "admin2", "country_code"):
            if str(place.get(field) or "").lower() == qualifier:
                return place
    return results[0] if results else None


async def find_place(cfg, place):
    """Open-Meteo geocoding -> its result dict; ToolError when no such place is known."""
    city, _, qualifier = place.partition(",")
    city = city.strip()
    if not city:
        raise ToolError("get_weather needs a place name, or latitude and longitude")
    params = (("name", city), ("count", _CANDIDATES if qualifier.strip() else 1), ("language", "en"),
              ("format", "json"))
    url = _base(cfg, "geocode_api", GEOCODE_API) + "/v1/search?" + query(params)
    data = await _get(url, "Open-Meteo geocoding")
    results = data.get("results")
    found = pick_place([r for r in results if isinstance(r, dict)], qualifier) if isinstance(results, list) else None
    if found is None or "latitude" not in found or "longitude" not in found:
        raise ToolError("no place called '{}' found; try a larger town nearby or give latitude and longitude".format(
            place.strip()))
    return found


def place_label(found):
    parts = [found.get("name")]
    for field in ("admin1", "country"):
        value = found.get(field)
        if value and value not in parts:
            parts.append(value)
    return ", ".join(str(p) for p in parts if p)


def format_weather(label, forecast):
    """The forecast JSON as a few lines of text: now, then one line per day."""
    current = forecast.get("current") or {}
    units = forecast.get("current_units") or {}
    lines = ["Weather for {}, local time {} ({}):".format(
        label, current.get("time", "?"), forecast.get("timezone", "GMT"))]
    now = []
    if "temperature_2m" in current:
        now.append("{} {}".format(_number(current["temperature_2m"]), units.get("temperature_2m", "\u00b0C")))
        if "apparent_temperature" in current:
            now[-1] += " (feels like {} {})".format(_number(current["apparent_temperature"]),
                                                   units.get("apparent_temperature", "\u00b0C"))
    if "weather_code" in current:
        now.append(describe_code(current["weather_code"]))
    if "wind_speed_10m" in current:
        now.append("wind {} {}".format(_number(current["wind_speed_10m"]), units.get("wind_speed_10m", "km/h")))
    if "relative_humidity_2m" in current:
        now.append("humidity {}{}".format(_number(current["relative_humidity_2m"]),
                                          units.get("relative_humidity_2m", "%")))
    if current.get("precipitation"):
        now.append("precipitation {} {}".format(_number(current["precipitation"]), units.get("precipitation", "mm")))
    lines.append("Now: " + (", ".join(now) or "no current data"))
    lines.extend(_daily_lines(forecast.get("daily") or {}, forecast.get("daily_units") or {}))
    return "\n".join(lines)


def _at(daily, key, i):
    values = daily.get(key) or []
    return values[i] if i < len(values) else None


def _daily_lines(daily, units):
    lines = []
    days = daily.get("time") or []
    for i in range(len(days)):
        parts = []
        code, low, high = _at(daily, "weather_code", i), _at(daily, "temperature_2m_min", i), \
            _at(daily, "temperature_2m_max", i)
        rain = _at(daily, "precipitation_probability_max", i)
        if code is not None:
            parts.append(describe_code(code))
        if low is not None and high is not None:
            parts.append("{} to {} {}".format(_number(low), _number(high), units.get("temperature_2m_max", "\u00b0C")))
        if rain is not None:
            parts.append("{}{} chance of precipitation".format(_number(rain),
                                                               units.get("precipitation_probability_max", "%")))
        lines.append("{}: {}".format(days[i], ", ".join(parts) or "no data"))
    return lines


def _coordinate(value, most, what):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not -most <= value <= most:
        raise ToolError("{} must be a number from {} to {}".format(what, -most, most))
    return value


async def weather(cfg, place=None, latitude=None, longitude=None, days=DAYS_DEFAULT):
    """The weather text for a place name or coordinates; ToolError with a clear message on failure."""
    if place and place.strip():
        found = await find_place(cfg, place)
        latitude, longitude, label = found["latitude"], found["longitude"], place_label(found)
    elif latitude is None or longitude is None:
        raise ToolError("get_weather needs a place name, or both latitude and longitude")
    else:
        label = None
    latitude = _coordinate(latitude, 90, "latitude")
    longitude = _coordinate(longitude, 180, "longitude")
    label = "{} ({}, {})".format(label, latitude, longitude) if label else "{}, {}".format(latitude, longitude)
    days = max(1, min(DAYS_MAX, days))
    params = (("latitude", latitude), ("longitude", longitude), ("current", CURRENT), ("daily", DAILY),
              ("timezone", "auto"), ("forecast_days", days))
    url = _base(cfg, "weather_api", WEATHER_API) + "/v1/forecast?" + query(params)
    return format_weather(label, await _get(url, "Open-Meteo"))


async def run(input, config):
    days = input.get("days", DAYS_DEFAULT)
    return await weather(config, input.get("place"), input.get("latitude"), input.get("longitude"),
                         days if isinstance(days, int) else DAYS_DEFAULT)
