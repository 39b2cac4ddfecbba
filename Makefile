# MimiClaw-Py: run the firmware on a laptop, test it, build it for the board.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FLASH ?= flash
WS_PORT ?= 18789

.PHONY: venv sim test test-fast clean

venv: $(STAMP)

$(STAMP): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

# The firmware under the MicroPython unix port, with the fake Claude as its brain
# (the real API when ANTHROPIC_API_KEY is set).
sim: venv
	$(BIN)/python tools/sim.py --flash $(FLASH) --ws-port $(WS_PORT)

test: venv
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build .pytest_cache
