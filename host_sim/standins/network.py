# Laptop stand-in for the ESP32 port's network module: a WLAN that is up unless a test says not.
#
# The laptop's own network counts as the WiFi link: until connect(), disconnect() or simulate() is
# called, isconnected() is True. State is module-level, shared by every WLAN object as on the chip.
# Status codes are the ESP32 port's (STAT_* and the ESP-IDF WIFI_REASON_* it reports); the ESP32
# port has no STAT_CONNECT_FAIL, so neither does this module.
#
# A simulated radio (host only): with MIMI_SIM_WIFI=<file> in the environment, or after
# use_radio(<file>), the station starts down and only the access points listed in that file are in
# reach, one "<ssid> <password>" per line. connect() joins a listed network with the right
# password, else ends in STAT_WRONG_PASSWORD or STAT_NO_AP_FOUND; a joined network that leaves the
# file drops the link (STAT_BEACON_TIMEOUT). Tests edit the file while the firmware runs.
import os

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

AUTH_OPEN = 0
AUTH_WPA2_PSK = 3

RADIO_ENV = "MIMI_SIM_WIFI"

_LAPTOP_RSSI = -55
_LAPTOP_IFCONFIG = ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")
_HOSTNAME = "mimiclaw"
_AP_IFCONFIG = ("192.168.4.1", "255.255.255.0", "192.168.4.1", "192.168.4.1")


def _fresh_state(radio=None):
    return {
        "active": {STA_IF: False, AP_IF: False},
        "status": STAT_IDLE if radio else STAT_GOT_IP,  # the laptop's network is up at once
        "ssid": "",
        "outcome": None,  # set by simulate(): how the next connect() ends
        "connects": 0,
        "ifconfig": _LAPTOP_IFCONFIG,
        "config": {"hostname": _HOSTNAME, "reconnects": -1, "txpower": 20, "pm": 0},
        "radio": radio,  # the file of access points in reach, or None: the laptop's own network
        "joined": None,  # (ssid, password) of the radio network joined
        "ap": {"essid": "", "password": "", "authmode": AUTH_OPEN, "channel": 1},
    }


_state = _fresh_state(os.getenv(RADIO_ENV) or None)


def _reset():
    """Host only: back to the laptop's initial state (network up, nothing simulated)."""
    _state.clear()
    _state.update(_fresh_state())


def use_radio(path):
    """Host only: the radio from a file of "<ssid> <password>" lines; the link starts down."""
    _state.clear()
    _state.update(_fresh_state(path))


def _in_reach():
    """{ssid: password} of the access points listed in the radio file (missing file: none)."""
    networks = {}
    try:
        with open(_state["radio"]) as f:
            for line in f:
                parts = line.strip().split(" ", 1)
                if parts[0]:
                    networks[parts[0]] = parts[1] if len(parts) > 1 else ""
    except OSError:
        pass
    return networks


def _check_link():
    # A joined radio network that left the file (or changed its password) takes the link down.
    joined = _state["joined"]
    if joined and _state["status"] == STAT_GOT_IP and _in_reach().get(joined[0]) != joined[1]:
        _state["joined"] = None
        _state["status"] = STAT_BEACON_TIMEOUT


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
        if outcome is None and _state["radio"]:
            outcome = self._join(_state["ssid"], key or "")
        _state["status"] = STAT_GOT_IP if outcome is None else outcome

    def _join(self, ssid, key):
        wanted = _in_reach().get(ssid)
        if wanted is None:
            return STAT_NO_AP_FOUND
        if wanted != key:
            return STAT_WRONG_PASSWORD
        _state["joined"] = (ssid, key)
        return None

    def disconnect(self):
        _state["status"] = STAT_IDLE
        _state["joined"] = None

    def isconnected(self):
        if self._if == AP_IF:
            return False  # no station ever joins the laptop's access point
        import machine

        machine.memory_error_if_asked("wlan_isconnected")
        _check_link()
        return _state["status"] == STAT_GOT_IP

    def status(self, param=None):
        if param is None:
            if self._if == AP_IF:
                return STAT_IDLE
            _check_link()
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
        if self._if == AP_IF:
            return _AP_IFCONFIG
        if config is None:
            return _state["ifconfig"]
        _state["ifconfig"] = tuple(config)

    def config(self, *args, **kwargs):
        if args and kwargs:
            raise TypeError("either query or set parameters, not both")
        if self._if == AP_IF:
            return self._ap_config(args, kwargs)
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

    def _ap_config(self, args, kwargs):
        ap = _state["ap"]
        for name, value in kwargs.items():
            name = "essid" if name == "ssid" else ("password" if name == "key" else name)
            if name not in ap:
                raise ValueError("unknown config param")
            ap[name] = value
        if kwargs:
            return None
        if len(args) != 1:
            raise TypeError("can query only one param")
        name = "essid" if args[0] == "ssid" else args[0]
        if name == "password":
            raise ValueError("can't read the password")  # the chip does not give it back either
        if name == "mac":
            import machine

            return machine.unique_id()
        if name not in ap:
            raise ValueError("unknown config param")
        return ap[name]
