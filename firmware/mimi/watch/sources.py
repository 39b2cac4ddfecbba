# What a watcher reads: a GPIO or ADC pin, the chip's temperature, a tool's result, or a field of a JSON URL.
import json

import esp32
import machine

from mimi.platform import const
from mimi import jsontext

_READING_MAX = const(300)  # characters of one reading handed to the model
_HTTP_MAX = const(16384)  # bytes of a JSON answer read for an http source
_PATH_DEPTH_MAX = const(8)  # parts of a JSON field path: a.b.0.c
ADC_PINS = tuple(range(1, 11))  # ADC1 of the ESP32-S3; ADC2 (GPIO11-20) cannot be read while WiFi is on
_ADC_FULL_SCALE_MV = const(3100)  # 11 dB attenuation: 0..~3.1 V
HELP = ("a source is gpio:<pin>, adc:<pin>, temperature, tool:<name> (or tool:<name>{json input}), "
        "mqtt:<topic>, or an http(s) URL of a JSON document with #<field.path>; for a local rule also "
        "gpio:<pin>:rising|falling|change (the pin's edges) or command:/<word> (an owner's command)")
EDGES = ("rising", "falling", "change")
EVENTS = ("edge", "command")  # sources that are events, not readings: only a local rule takes them
_WORD_MAX = const(24)
# The reading a rule compares, when a source reads more than one value: its field
_RULE_FIELD = {"temperature": "chip_temperature_c", "gpio": "value", "edge": "value", "adc": "millivolts",
               "mqtt": "value"}


class SourceError(ValueError):
    """A source that cannot be used or read; the text is meant for the user (or the model)."""


def parse(text):
    """A spec dict from a source text; SourceError when it names no known source."""
    text = str(text).strip()
    if text.startswith("http:http") or text.startswith("http:https"):
        text = text[5:]  # "http:<url>#field" is the same as "<url>#field"
    if text == "temperature":
        return {"kind": "temperature", "text": text}
    if text.startswith("http://") or text.startswith("https://"):
        url, _, path = text.partition("#")
        from mimi.tools.http_text import clean_url

        try:
            url = clean_url(url)
        except ValueError as exc:
            raise SourceError(str(exc))
        parts = [p for p in path.split(".") if p] if path else []
        if len(parts) > _PATH_DEPTH_MAX:
            raise SourceError("a JSON field path has at most {} parts".format(_PATH_DEPTH_MAX))
        return {"kind": "http", "url": url, "path": parts, "text": text}
    kind, sep, rest = text.partition(":")
    if sep and kind == "gpio" and rest.partition(":")[2]:
        pin, _, edge = rest.partition(":")
        if not pin.isdigit() or edge not in EDGES:
            raise SourceError("a pin edge is gpio:<pin>:rising, gpio:<pin>:falling or gpio:<pin>:change")
        return {"kind": "edge", "pin": int(pin), "edge": edge, "text": text}
    if sep and kind == "command":
        word = rest[1:] if rest.startswith("/") else rest
        ok = 0 < len(word) <= _WORD_MAX
        for ch in word:
            ok = ok and ("a" <= ch <= "z" or "0" <= ch <= "9" or ch == "_")
        if not ok:
            raise SourceError("a command is command:/<word>, the word 1 to {} of a-z, 0-9 and _".format(_WORD_MAX))
        return {"kind": "command", "word": word, "text": "command:/" + word}
    if sep and kind in ("gpio", "adc"):
        if not rest.isdigit():
            raise SourceError("{}: needs a pin number, like {}:4".format(kind, kind))
        return {"kind": kind, "pin": int(rest), "text": text}
    if sep and kind == "mqtt" and rest:
        from mimi.mqtt.packets import check_topic

        try:
            check_topic(rest, wildcards=True)
        except ValueError as exc:
            raise SourceError(str(exc))
        return {"kind": "mqtt", "topic": rest, "text": text}
    if sep and kind == "tool" and rest:
        name, brace, data = rest.partition("{")
        tool_input = {}
        if brace:
            try:
                tool_input = jsontext.loads(brace + data)
            except ValueError:
                raise SourceError("the tool input after {} is not valid JSON".format(name))
            if not isinstance(tool_input, dict):
                raise SourceError("the tool input must be a JSON object")
        return {"kind": "tool", "name": name.strip(), "input": tool_input, "text": text}
    raise SourceError("unknown source '{}': {}".format(text, HELP))


def _allowed_pin(app, pin):
    from mimi.tools import gpio

    try:
        gpio.check_usable(pin)
    except ValueError as exc:
        raise SourceError(str(exc))
    if pin not in gpio.allowed_pins(app.config):
        raise SourceError("GPIO {} is not allowed; the owner allows it with the console command 'gpio_allow {}'"
                          .format(pin, pin))


def unattended_problem(app, name, tool, role, actor, when):
    """Why the tool may not run for `role` with nobody there (a watcher reading its source, a rule's action), or
    None: its tier above the role, or the owner's tool_policy: blocked, or confirm (nobody to press Approve).
    actor: who acts ("this rule"); when: when it would run ("a rule runs")."""
    from mimi.safety import policy, roles

    tier = policy.tier_of(tool)
    if not roles.allows(role, tier):
        return "{} needs the {} role and {} acts as {}".format(name, tier, actor, role)
    level = policy.level_of(app.config, name, tool)
    if level == policy.CONFIRM:
        return ("{} is set to confirm (tool_policy): nobody is there to press Approve when {}; choose another "
                "tool or level".format(name, when))
    if level == policy.BLOCKED:
        return "{} is blocked on this device (tool_policy {} <level> unblocks it)".format(name, name)
    return None


def _tool(app, spec, role):
    from mimi.safety.breaker import is_acting
    from mimi.tools.registry import check_input

    name = spec["name"]
    tool = app.registry.tools.get(name)
    if tool is None:
        raise SourceError("no tool named '{}' (see tool_list)".format(name))
    if is_acting(tool) or name.startswith("watch_"):
        raise SourceError("{} changes things, so it cannot be read as a source".format(name))
    problem = check_input(tool.schema, spec["input"])
    if problem:
        raise SourceError("invalid input for {}: {}".format(name, problem))
    problem = unattended_problem(app, name, tool, role, "this watcher", "a watcher reads it")
    if problem:
        raise SourceError("a watcher cannot read {}: {}".format(name, problem))
    return tool


def check(app, text, role):
    """The source text, checked now for a watcher acting as `role` (pin allowed, tool known, only reading, and
    allowed to this role with nobody there by the tool policy, URL well formed)."""
    spec = parse(text)
    kind = spec["kind"]
    if kind in ("gpio", "adc", "edge"):
        if kind == "adc" and spec["pin"] not in ADC_PINS:
            raise SourceError("adc: the pin must be GPIO1 to GPIO10 (ADC1; ADC2 stops while WiFi is on)")
        _allowed_pin(app, spec["pin"])
    elif kind == "tool":
        _tool(app, spec, role)
    elif kind == "mqtt" and app.part("mqtt") is None:
        raise SourceError("MQTT is not set up on this device (console: mqtt_set <host> [port])")
    return spec["text"]  # a command's word is checked by the rule engine (watch/rules.py): it knows its own


def shown(value):
    """A reading as text for the model, cut to _READING_MAX."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= _READING_MAX else text[:_READING_MAX] + "\u2026"


def turn_of(watcher):
    """The turn a watcher reads a tool for (tools/turn.py): its chat, its creator's role."""
    from mimi.tools.turn import Turn

    return Turn(watcher["channel"], watcher["chat_id"], {"watcher": watcher["name"]}, watcher["role"])


async def read(app, text, turn):
    """One reading of the source, as text for the model, for the watcher's turn (turn_of); SourceError
    (user-readable) when it cannot be read."""
    return shown(await _reading(app, text, turn))


async def value(app, text, turn):
    """One reading as a local rule compares it: the pin's level, the chip's degrees, the millivolts, the MQTT
    value, the tool's result or the JSON field."""
    found = await _reading(app, text, turn)
    field = _RULE_FIELD.get(parse(text)["kind"])
    return found[field] if field is not None else found


async def _reading(app, text, turn):
    spec = parse(text)
    check(app, text, turn.role)  # the owner may have taken a pin back, removed or blocked a tool since
    kind = spec["kind"]
    if kind == "temperature":
        return {"chip_temperature_c": _temperature()}
    if kind in ("gpio", "edge"):  # an edge's pin, read now (watch_check's dry run)
        gpio_read = app.registry.code("mimi.tools.gpio", "gpio_read")  # set up at its first use
        return gpio_read.run({"pin": spec["pin"]})  # an output pin reports its level
    if kind == "adc":
        return _adc(spec["pin"])
    if kind == "tool":
        return await _tool_result(app, spec, turn)
    if kind == "mqtt":
        try:
            topic, value, age = await app.part("mqtt").reading(spec["topic"])
        except ValueError as exc:
            raise SourceError(str(exc))
        return {"topic": topic, "value": value, "age_s": age}
    if kind == "command":
        raise SourceError("{} is an event, not a reading: only a local rule takes it".format(spec["text"]))
    return await _http_field(spec)


def _temperature():
    read_c = getattr(esp32, "mcu_temperature", None)  # ESP32-S2/S3/C3: degrees Celsius
    if read_c is not None:
        return read_c()
    raw_f = getattr(esp32, "raw_temperature", None)  # the original ESP32: Fahrenheit
    if raw_f is None:
        raise SourceError("this chip has no temperature sensor")
    return round((raw_f() - 32) * 5 / 9, 1)


def _adc(pin):
    adc = machine.ADC(machine.Pin(pin), atten=machine.ADC.ATTN_11DB)
    raw = adc.read_u16()
    read_uv = getattr(adc, "read_uv", None)
    millivolts = read_uv() // 1000 if read_uv else raw * _ADC_FULL_SCALE_MV // 65535
    return {"pin": pin, "millivolts": millivolts, "raw_u16": raw}


async def _tool_result(app, spec, turn):
    """The tool's result, called through the registry with the watcher's turn as any call is: audited, under
    the tool policy, the circuit breakers and the registry's timeout."""
    name = spec["name"]
    text, is_error = await app.registry.execute(name, spec["input"], turn)
    if is_error:
        raise SourceError(text if text.startswith(name) else "{}: {}".format(name, text))
    try:
        return jsontext.loads(text)
    except ValueError:  # a result in words (or one the registry cut at its RESULT_MAX)
        return text


def field(data, path):
    """The value at a dotted path (list items by number); SourceError naming the missing part."""
    for depth, part in enumerate(path):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise SourceError("the JSON has no field '{}'".format(".".join(path[:depth + 1])))
    return data


async def _http_field(spec):
    from mimi.tools.http_text import ServiceError, request_json

    try:
        status, data, head = await request_json("GET", spec["url"], limit=_HTTP_MAX)
    except ServiceError as exc:
        raise SourceError("could not read {}: {}".format(spec["url"], exc))
    if status != 200:
        raise SourceError("{} answered HTTP {}".format(spec["url"], status))
    if data is None:
        raise SourceError("{} did not answer with JSON (or it is over {} bytes)".format(spec["url"], _HTTP_MAX))
    return field(data, spec["path"])
