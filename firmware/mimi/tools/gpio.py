# gpio_read / gpio_write on pins the owner allowed with the console's gpio_allow <pin>.
import machine

from mimi import platform
from mimi.platform import const
from mimi.tools.registry import Tool, ToolError

_PIN_MAX = const(48)  # ESP32-S3 GPIO numbers run 0..21 and 26..48
_NO_SUCH_PINS = (22, 23, 24, 25)
# Pins that would break the board if driven: never allowed, whatever the setting says.
RESERVED = (
    ((19, 20), "USB (the console and flashing port)"),
    ((26, 27, 28, 29, 30, 31, 32), "the SPI flash and PSRAM"),
    ((33, 34, 35, 36, 37), "octal flash and PSRAM"),
    ((43, 44), "UART0 (the serial console)"),
)
_NS, _KEY = "tool_config", "gpio_allow"
# The console commands (channels/commands.py add_lines; builtin_defs.COMMANDS keeps a copy for boot).
COMMANDS = (
    "\ngpio_allow\tgpio_allow [pin]\t0\t1\tlet the agent read/write a GPIO pin (no pin: list the allowed ones)"
    "\tmimi.tools.gpio:allow_command(app.config)"
    "\ngpio_deny\tgpio_deny <pin>\t1\t1\ttake a GPIO pin back from the agent"
    "\tmimi.tools.gpio:deny_command(app)"
    "\n"
)



def reserved_use(pin):
    """What a reserved pin is wired to, or None when it is free to use."""
    for pins, use in RESERVED:
        if pin in pins:
            return use
    return None


def check_usable(pin):
    """Raise ValueError unless pin is a GPIO of the ESP32-S3 that is not reserved."""
    if pin < 0 or pin > _PIN_MAX or pin in _NO_SUCH_PINS:
        raise ValueError("GPIO {} does not exist on the ESP32-S3 (0..21 and 26..48)".format(pin))
    use = reserved_use(pin)
    if use:
        raise ValueError("GPIO {} is reserved for {} and is never available to the agent".format(pin, use))


def allowed_pins(config):
    """Sorted pin numbers in the gpio_allow setting."""
    pins = []
    for part in config.get(_NS, _KEY).split(","):
        part = part.strip()
        if part.isdigit() and int(part) not in pins:
            pins.append(int(part))
    pins.sort()
    return pins


def _save(config, pins):
    config.set(_NS, _KEY, ",".join(str(p) for p in sorted(pins)))


def _pin_number(text):
    text = text.strip()
    if not text.isdigit():
        raise ValueError("a pin is a GPIO number, like 4 (for GPIO4)")
    return int(text)


def _say(text):
    platform.console_write(text + "\n")


async def allow_command(config, pin=None):
    pins = allowed_pins(config)
    if pin is not None:
        number = _pin_number(pin)
        check_usable(number)
        if number not in pins:
            pins.append(number)
            _save(config, pins)
        pins = allowed_pins(config)
    _say("GPIO pins the agent may use: {}".format(", ".join(str(p) for p in pins) or "none"))


async def deny_command(app, pin):
    number = _pin_number(pin)
    pins = allowed_pins(app.config)
    if number in pins:
        pins.remove(number)
        _save(app.config, pins)
        app.outputs.pop(number, None)
        _say("GPIO {} taken back; allowed now: {}".format(number, ", ".join(str(p) for p in pins) or "none"))
    else:
        _say("GPIO {} was not allowed".format(number))


def _allowed_pin(config, input):
    """The input's pin when the agent may use it, else a ToolError naming the command to allow it."""
    pin = input["pin"]
    try:
        check_usable(pin)
    except ValueError as exc:
        raise ToolError(str(exc))
    if pin not in allowed_pins(config):
        raise ToolError("GPIO {} is not allowed; the owner can allow it with the console command "
                        "'gpio_allow {}'".format(pin, pin))
    return pin


_PIN_SCHEMA = {"type": "integer", "description": "GPIO number, e.g. 4 for GPIO4"}


class GpioRead(Tool):
    name = "gpio_read"
    description = (
        "Read the level (0 or 1) of a GPIO pin the owner allowed. A pin you set with gpio_write "
        "reports its output level; any other pin is switched to input first (optional pull-up/down)."
    )
    schema = {
        "type": "object",
        "properties": {
            "pin": _PIN_SCHEMA,
            "pull": {"type": "string", "enum": ["none", "up", "down"],
                     "description": "internal pull resistor for an input (default none)"},
        },
        "required": ["pin"],
    }
    tier, acting, level = "operator", False, "autonomous"

    def run(self, input):
        pin = _allowed_pin(self.app.config, input)
        driven = self.app.outputs.get(pin)
        if driven is not None:
            return {"pin": pin, "value": driven.value(), "mode": "output"}
        pull = input.get("pull", "none")
        Pin = machine.Pin
        pull_code = Pin.PULL_UP if pull == "up" else (Pin.PULL_DOWN if pull == "down" else None)
        gpio = Pin(pin, Pin.IN, pull_code)
        return {"pin": pin, "value": gpio.value(), "mode": "input"}


class GpioWrite(Tool):
    name = "gpio_write"
    description = (
        "Set a GPIO pin the owner allowed to output 0 (low) or 1 (high), e.g. to switch a relay or LED."
    )
    schema = {
        "type": "object",
        "properties": {
            "pin": _PIN_SCHEMA,
            "value": {"type": "integer", "enum": [0, 1], "description": "0 for low, 1 for high"},
        },
        "required": ["pin", "value"],
    }
    tier, acting, level = "operator", True, "report"

    def run(self, input):
        pin = _allowed_pin(self.app.config, input)
        value = input["value"]
        if value not in (0, 1):
            raise ToolError("value must be 0 or 1")
        gpio = self.app.outputs.get(pin)  # the board's driven pins: the app's, they outlive this code
        if gpio is None:
            self.app.outputs[pin] = machine.Pin(pin, machine.Pin.OUT, value=value)
        else:
            gpio.value(value)
        return {"pin": pin, "value": value}


TOOLS = (GpioRead, GpioWrite)
