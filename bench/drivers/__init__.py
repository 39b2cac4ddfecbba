# Small scripts run under MicroPython (and CPython) that import firmware modules and time them.
