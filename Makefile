# MimiClaw-Py: run the firmware on a laptop, test it, build it for the board.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FLASH ?= flash
WS_PORT ?= 18789

.PHONY: venv sim test test-fast clean system-deps

venv: $(STAMP)

$(STAMP): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

# The firmware under the MicroPython unix port, with the fake Claude as its brain
# (the real API when ANTHROPIC_API_KEY is set).
sim: venv
	@$(BIN)/python tools/sim.py --flash $(FLASH) --ws-port $(WS_PORT)

# Debian packages the tests drive (chromium, mosquitto): installed when root with apt-get, else
# named in one line (tools/system_deps.py).
system-deps:
	@$(PYTHON) tools/system_deps.py

test: system-deps venv
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build .pytest_cache

# ---- Board-side toolchain: bundle, file-system image, NVS provisioning, API check ----------
# PARTITIONS=partitions-8MiB.csv for 8 MB boards; PORT=... only fills in the printed flash commands.
PARTITIONS ?= partitions.csv

.PHONY: bundle fsimage provision check-api

# firmware/ compiled with mpy-cross for the S3, microdot, CA certificates -> build/bundle/
bundle: venv
	$(BIN)/python tools/bundle.py

# LittleFS image of the vfs partition (bundle + default SOUL/USER) -> build/fs.bin
fsimage: bundle
	$(BIN)/python tools/fsimage.py --partitions $(PARTITIONS) $(if $(PORT),--port $(PORT))

# NVS image of the settings in provision.csv (git-ignored) -> build/nvs.bin
provision: venv
	$(BIN)/python tools/provision.py --partitions $(PARTITIONS) $(if $(PORT),--port $(PORT))

# firmware/ against the ESP32-S3 port's stubs (also run by `make test`)
check-api: venv
	$(BIN)/python tools/check_api.py

# ---- Benchmarks: memory, latency, throughput, scaling (see BENCHMARKS.md) -----------------
# Merges its figures into bench/results.json and prints a table; BENCH_QUICK=1 for a fast subset (one repetition).
# BENCH_ONLY=figure,figure measures only those figures: they replace theirs in the file, every other figure stays.
.PHONY: bench

bench: venv
	$(BIN)/python -m bench $(if $(BENCH_ONLY),--only $(BENCH_ONLY))

# ---- Soak: 1000 turns, 10 Telegram chats + 4 WebSocket clients, seeded faults (RELIABILITY.md) ----
# Writes bench/soak_results.json; SOAK_QUICK=1 for 40 turns; SOAK_SEED, SOAK_RATE, SOAK_HEAP (1024K), SOAK_TURNS;
# SOAK_FORM=romfs: the ROMFS form over TLS in small-board mode at the bench's smallest heap + 15 % (RELIABILITY.md).
.PHONY: soak

soak: venv
	$(BIN)/python -m bench.soak

# ---- Board: frozen firmware build, deploy, flash, erase -------------------------------------
# Every command they run is printed. Which partitions each one writes: README ("Flash a board").
MICROPY_DIR ?=
FIRMWARE ?=

.PHONY: firmware deploy flash erase

# MicroPython with firmware/ and microdot frozen in (boards/MIMICLAW_S3) -> build/firmware/;
# needs a MicroPython checkout and ESP-IDF (`. $IDF_PATH/export.sh`), says what is missing.
firmware: venv
	$(BIN)/python tools/firmware.py $(if $(MICROPY_DIR),--micropython $(MICROPY_DIR))

# The bundle onto a board running MicroPython (stock is enough), only changed files; never /data.
deploy: venv
	$(BIN)/python tools/deploy.py --port "$(PORT)"

# A MicroPython image (FIRMWARE=firmware.bin or micropython.bin): bootloader, table, app; keeps
# nvs (settings) and vfs (files).
flash: venv
	$(BIN)/python tools/flash.py flash --port "$(PORT)" --firmware "$(FIRMWARE)" --partitions $(PARTITIONS)

# The firmware as a ROMFS image run in place from flash (README, "Flash a board") -> build/romfs.img;
# deploy-romfs writes it into the board's romfs partition (mpremote romfs deploy), main.py beside it.
.PHONY: romfs deploy-romfs

romfs: venv
	$(BIN)/python tools/romfs.py build --partitions $(PARTITIONS) $(if $(PORT),--port $(PORT))

deploy-romfs: venv
	$(BIN)/python tools/romfs.py deploy --port "$(PORT)"

# Wipes the WHOLE flash: firmware, settings and every file, /data included.
erase: venv
	$(BIN)/python tools/flash.py erase --port "$(PORT)"

# No board? An emulated ESP32-S3 in its ROM bootloader (esp32-mock-bootloader; MOCK_FLASH=8MB for
# the 8 MB table): flash, erase and the printed esptool commands take PORT=socket://127.0.0.1:9876.
MOCK_PORT ?= 9876
MOCK_FLASH ?= 16MB
.PHONY: mock-board

mock-board: venv
	$(BIN)/python tools/mock_board.py --port $(MOCK_PORT) --flash-size $(MOCK_FLASH)
