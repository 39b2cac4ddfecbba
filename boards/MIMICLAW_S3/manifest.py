# Frozen into the MimiClaw firmware: the port's usual modules, the mimi package, main.py, microdot.
# MicroPython runs this with the working directory set to this folder (boards/MIMICLAW_S3).
# MIMICLAW_MICRODOT (environment) names the microdot package folder to freeze; `make firmware` sets
# it to the venv's copy, which is also the one the host tests and `make bundle` use.
import glob
import os

# The same modules tools/bundle.py compiles (MICRODOT_MODULES): what the gateway imports.
MICRODOT_MODULES = ("__init__.py", "microdot.py", "websocket.py", "helpers.py")


def _microdot_dir():
    named = os.environ.get("MIMICLAW_MICRODOT")
    if named:
        return os.path.abspath(named)
    found = sorted(glob.glob("../../.venv/lib/python3*/site-packages/microdot"))
    if not found:
        raise ValueError("microdot not found: run `make venv` or set MIMICLAW_MICRODOT "
                         "to the microdot package folder")
    return os.path.abspath(found[-1])


include("$(PORT_DIR)/boards/manifest.py")

# Frozen modules come before /lib on sys.path: on this firmware the code is updated by flashing
# or OTA of the app image, not by `make deploy`.
package("mimi", base_path="../../firmware")
module("main.py", base_path="../../firmware")

_microdot = _microdot_dir()
package("microdot", files=MICRODOT_MODULES, base_path=os.path.dirname(_microdot))
