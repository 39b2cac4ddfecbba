# Laptop stand-in for the ESP32 port's network module: a WLAN that is up unless a test says not.
#
# The laptop's own network counts as the WiFi link: until connect(), disconnect() or simulate() is
# called, isconnected() is True. State is module-level, shared by every WLAN object as on the chip.
# Status codes are the ESP32 port's (STAT_* and the ESP-IDF WIFI_REASON_* it reports); the ESP32
# port has no STAT_CONNECT_FAIL, so neither does this module.
STA_IF = 0
AP_IF = 1

STAT_IDLE = 1000
STAT_CONNECTING = 1001
STAT_GOT_IP = 1010
STAT_BEACON_TIMEOUT = 200
STAT_NO_AP_FOUND = 201
STAT_WRONG_PASSWORD = 202
STAT_ASSOC_FAIL = 203
STAT_HANDSHAKE_TIMEOUT = 204

_LAPTOP_RSSI = -55
_LAPTOP_IFCONFIG = ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")
_HOSTNAME = "mimiclaw"


def _fresh_state():
    return {
        "active": {STA_IF: False, AP_IF: False},
        "status": STAT_GOT_IP,  # the laptop's network is up from the start
        "ssid": "",
        "outcome": None,  # set by simulate(): how the next connect() ends
        "connects": 0,
        "ifconfig": _LAPTOP_IFCONFIG,
        "config": {"hostname": _HOSTNAME, "reconnects": -1, "txpower": 20, "pm": 0},
    }


_state = _fresh_state()


def _reset():
    """Host only: back to the laptop's initial state (network up, nothing simulated)."""
    _state.clear()
    _state.update(_fresh_state())


def simulate(status=None, drop_link=False):
    """Host only: every later connect() ends in `status` (None: succeeds again).
    drop_link=True also takes the current link down now, to that status (or STAT_IDLE)."""
    _state["outcome"] = status
    if drop_link:
        _state["status"] = STAT_IDLE if status is None else status


def connect_count():
    """Host only: how many times connect() was called since the last _reset()."""
    return _state["connects"]


def hostname(name=None):
    if name is None:
        return _state["config"]["hostname"]
    _state["config"]["hostname"] = name


class WLAN:
    def __init__(self, interface=STA_IF):
        if interface not in (STA_IF, AP_IF):
            raise ValueError("invalid WLAN interface")
        self._if = interface

    def __repr__(self):
        return "<WLAN {}>".format("STA" if self._if == STA_IF else "AP")

    def active(self, flag=None):
        if flag is None:
            return _state["active"][self._if]
        _state["active"][self._if] = bool(flag)
        if not flag and self._if == STA_IF:
            _state["status"] = STAT_IDLE

    def _require_sta(self):
        if self._if != STA_IF:
            raise OSError("STA required")
        if not _state["active"][STA_IF]:
            raise OSError("Wifi Not Started")

    def connect(self, ssid=None, key=None, bssid=None):
        """Records the network name (never the key); on the laptop the link is up at once."""
        self._require_sta()
        _state["connects"] += 1
        if ssid is not None:
            _state["ssid"] = ssid
        outcome = _state["outcome"]
        if outcome is None and ssid == "":
            outcome = STAT_NO_AP_FOUND  # no network has an empty name
        _state["status"] = STAT_GOT_IP if outcome is None else outcome

    def disconnect(self):
        _state["status"] = STAT_IDLE

    def isconnected(self):
        if self._if == AP_IF:
            return False  # no station ever joins the laptop's access point
        return _state["status"] == STAT_GOT_IP

    def status(self, param=None):
        if param is None:
            if self._if == AP_IF:
                return STAT_IDLE
            return _state["status"]
        if param == "rssi":
            if not self.isconnected():
                raise OSError("Wifi Not Connected")
            return _LAPTOP_RSSI
        if param == "stations":
            return []
        raise ValueError("unknown status param")

    def scan(self):
        self._require_sta()
        return []

    def ifconfig(self, config=None):
        if config is None:
            return _state["ifconfig"]
        _state["ifconfig"] = tuple(config)

    def config(self, *args, **kwargs):
        if args and kwargs:
            raise TypeError("either query or set parameters, not both")
        if kwargs:
            for name, value in kwargs.items():
                if name in ("essid", "ssid"):
                    _state["ssid"] = value
                else:
                    _state["config"][name] = value
            return None
        if len(args) != 1:
            raise TypeError("can query only one param")
        name = args[0]
        if name in ("essid", "ssid"):
            return _state["ssid"]
        if name == "mac":
            import machine

            return machine.unique_id()
        if name in _state["config"]:
            return _state["config"][name]
        raise ValueError("unknown config param")
