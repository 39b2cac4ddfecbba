# Runs the firmware on a laptop, unchanged, under `micropython` or `python3` (from the repository root).
#   run.py --flash DIR [--anthropic-api URL] [--telegram-api URL] [--ws-port N] [--api-key-env NAME]
#          [--bot-token-env NAME]   (API key / bot token from the environment, for this run only)
#          [--model NAME]   (claude's model for this run only, never stored: make sim's demo names offline-demo)
#          [--firmware DIR]   (the modules to run: firmware/ by default, or a compiled bundle's lib/)
#          [--setup-port N]   (the onboarding setup page's port; the chip uses 80)
#          [--health wdt_ms=N,turn_s=N,healthy_s=N]   (watchdog and healthy-boot limits, for tests)
#          [--flash-image PATH [--flash-size BYTES]]   (data/ and tools/ on a LittleFS image file, as on
#          the chip; a new image is BYTES big (default: the vfs partition of partitions.csv) and formatted,
#          an existing one mounted; NVS stays in DIR/nvs.json, its own partition on the chip)
#          [--romfs IMAGE]   (the romfs partition as a file: under MicroPython its ROMFS image is mounted
#          at /rom with vfs.VfsRom and the firmware imported from it, bytecode run in place; host_sim/romfs_host.py)
#          [--standins-rom IMAGE]   (under MicroPython: the stand-ins for the chip's built-in modules run in
#          place from their own ROMFS image, as the chip's C modules do from flash; host_sim/standins_rom.py)
#   A reset re-imports the firmware's modules; an unfed machine.WDT resets it (machine.wdt_watch).
#   MIMI_SIM_WIFI=FILE simulates the radio (standins/network.py), MIMI_SIM_NTP_FAILS=N failing NTP.
#   MIMI_SIM_HOST_HEAP=1 (MicroPython): prints, before the firmware first starts, the heap the laptop side holds
#   (this runner, the stand-ins, the ROMFS images); the bench subtracts it (BENCHMARKS.md "Memory by form").
import os
import sys

USAGE = (
    "usage: run.py --flash DIR [--anthropic-api URL] [--telegram-api URL] [--ws-port N]"
    " [--api-key-env NAME] [--bot-token-env NAME] [--firmware DIR] [--setup-port N] [--health LIMITS]"
    " [--flash-image PATH [--flash-size BYTES]] [--romfs IMAGE] [--standins-rom IMAGE] [--model NAME]"
)


def _repo_root():
    script = sys.argv[0] if sys.argv and sys.argv[0] else "host_sim/run.py"
    parts = script.replace("\\", "/").split("/")
    root = "/".join(parts[:-2])
    return root or "."


def _venv_site_packages(root):
    # microdot and other pure-Python firmware dependencies come from the project's venv.
    lib = root + "/.venv/lib"
    try:
        names = os.listdir(lib)
    except OSError:
        return None
    for name in names:
        if name.startswith("python3"):
            return lib + "/" + name + "/site-packages"
    return None


def _parse(argv):
    opts = {"flash": None, "anthropic-api": None, "telegram-api": None, "ws-port": None, "api-key-env": None,
            "bot-token-env": None,
            "firmware": None, "setup-port": None}
    opts["health"] = None  #
    opts["flash-image"] = opts["flash-size"] = None
    opts["romfs"] = opts["standins-rom"] = None
    opts["model"] = None  # claude's model for this run only (make sim's offline demo: offline-demo)
    i = 0
    while i < len(argv):
        name = argv[i][2:] if argv[i].startswith("--") else None
        if name not in opts or i + 1 >= len(argv):
            raise ValueError(USAGE)
        opts[name] = argv[i + 1]
        i += 2
    if not opts["flash"] or (opts["flash-size"] and not opts["flash-image"]):
        raise ValueError(USAGE)
    return opts


def _mount_image(opts, root):
    # Everything the firmware keeps on flash goes on a LittleFS image; returns the folder it shows as.
    import lfs_flash

    size = opts["flash-size"]
    try:
        size = lfs_flash.parse_size(size) if size else lfs_flash.vfs_partition_size(root + "/partitions.csv")
        print(lfs_flash.mount(opts["flash-image"], size))
    except (OSError, ValueError) as exc:
        print("flash: cannot use the image {}: {}".format(opts["flash-image"], exc))
        sys.exit(2)
    return lfs_flash.MOUNT


def _mkdirs(path):
    built = ""
    for part in path.split("/"):
        built = built + part + "/" if built or part else "/"
        if part:
            try:
                os.mkdir(built)
            except OSError:
                pass


def _close_sockets():
    # A real reset closes every socket; MicroPython's asyncio would keep the dropped tasks' open.
    import asyncio

    queue = getattr(getattr(asyncio, "core", None), "_io_queue", None)
    console = (sys.stdin, getattr(sys.stdin, "buffer", None))  # the serial line survives a reset
    for entry in list(getattr(queue, "map", {}).values()):
        try:
            if entry[2] in console:
                continue
            entry[2].close()
        except (OSError, AttributeError, IndexError, TypeError):
            pass


def _forget_firmware():
    # A reset loads every firmware module again; the stand-ins (the hardware) stay.
    core = getattr(sys.modules.get("asyncio"), "core", None)  # not imported before the first boot
    if hasattr(core, "cur_task"):  # MicroPython keeps the task that reset, and with it the old firmware
        core.cur_task = None
    for name in list(sys.modules):
        if name == "mimi" or name.startswith("mimi."):
            del sys.modules[name]
    import gc

    gc.collect()  # now, from a shallow stack: stale pointers deep in it would keep the old firmware


STANDINS = ("machine", "network", "esp32", "ntptime")  # the chip's C modules (esp32_ota comes with esp32)
HOST_HEAP_MARK = "host heap: "


def _report_host_heap():
    # What the laptop side holds before the firmware's first import: none of it is on the chip (the runner is
    # boot.py and main.py there, the stand-ins are C modules, the images mapped flash). The stand-ins the
    # firmware imports later are imported now, so all of them are counted here and none in the firmware.
    if not os.getenv("MIMI_SIM_HOST_HEAP") or sys.implementation.name != "micropython":
        return
    import gc

    for name in STANDINS:
        __import__(name)
    images = 0
    for name in ("romfs_host", "standins_rom"):
        for buf in getattr(sys.modules.get(name), "_buffers", ()):
            images += len(buf)
    gc.collect()
    print("{}{} bytes, of which {} the ROMFS images".format(HOST_HEAP_MARK, gc.mem_alloc(), images))
    import micropython

    micropython.qstr_info()  # "qstr pool: ... n_total_bytes=N": the firmware's names join these pools


async def _with_watchdog(firmware_main):
    # The chip's watchdog is hardware; here a task checks it and raises machine.WDTReset.
    import asyncio

    import machine

    asyncio.create_task(machine.wdt_watch())
    await firmware_main


def _mount_standins(image, root):
    # The stand-ins from their ROMFS image (MicroPython with vfs.VfsRom only; elsewhere their sources run).
    if not image:
        return False
    try:
        import vfs

        if not hasattr(vfs, "VfsRom"):
            return False
    except ImportError:
        return False
    sys.path.insert(0, root + "/host_sim")
    import standins_rom

    standins_rom.mount(image)
    return True


def main():
    try:
        opts = _parse(sys.argv[1:])
    except ValueError as exc:
        print(exc)
        sys.exit(2)
    root = _repo_root()
    romfs = None
    if opts["romfs"]:  # the image is read in first, before anything else takes the heap
        sys.path.insert(0, root + "/host_sim")
        import romfs_host

        romfs = romfs_host
    else:
        sys.path.insert(0, root + "/host_sim")
        import board_lib

        board_lib.use(opts["firmware"] or root + "/firmware")  # at /lib, as on the board (board_lib.py)
    if not _mount_standins(opts["standins-rom"], root):
        sys.path.insert(0, root + "/host_sim/standins")  # machine, network, esp32 stand-ins come first
    site = _venv_site_packages(root)
    if site:
        sys.path.append(site)
    if hasattr(sys.stdout, "reconfigure"):  # CPython: flush each line, also into a pipe
        sys.stdout.reconfigure(line_buffering=True)

    import esp32
    import machine

    flash = opts["flash"].rstrip("/") or "/"
    _mkdirs(flash)
    stored = _mount_image(opts, root) if opts["flash-image"] else flash  # holds data/ and tools/
    if romfs:
        mountable = romfs.setup(opts["romfs"], root, root + "/firmware")
        if not mountable:
            sys.path.insert(1, opts["firmware"] or root + "/firmware")  # CPython: the sources run
    overrides = []
    if opts["anthropic-api"]:
        overrides.append(("llm_config", "api_base", opts["anthropic-api"]))
    if opts["telegram-api"]:
        overrides.append(("tg_config", "api_base", opts["telegram-api"]))
    if opts["model"]:
        overrides.append(("llm_config", "model", opts["model"]))
    if opts["ws-port"]:
        overrides.append(("gw_config", "ws_port", opts["ws-port"]))
    if opts["setup-port"]:
        overrides.append(("wifi_config", "setup_port", opts["setup-port"]))
    if opts["api-key-env"]:
        key = os.getenv(opts["api-key-env"])
        if key:
            overrides.append(("llm_config", "api_key", key))
    if opts["bot-token-env"]:
        token = os.getenv(opts["bot-token-env"])
        if token:
            overrides.append(("tg_config", "bot_token", token))

    first_boot = True
    while True:
        esp32.set_flash_dir(flash)  # a reset drops NVS changes that were never committed
        _forget_firmware()  # a reset runs the modules on flash afresh (ota_bundle may replace them)
        in_rom = romfs.boot(stored, mountable) if romfs else False
        if first_boot:
            _report_host_heap()
            first_boot = False
        from mimi.health import crashes  #

        def start():  # as firmware/main.py on the board: inside the crash guard
            import asyncio  # the firmware's (the chip's is frozen in): imported after the host's heap was told

            from mimi import app

            if opts["health"]:
                from mimi.health import limits

                limits.configure(opts["health"])
            shipped = "/rom" if in_rom else root + "/firmware"  # certificates and pages: the image's
            firmware = app.App(
                data_root=stored + "/data", cert_dirs=[shipped + "/certs"], overrides=overrides,
                tools_dir=stored + "/tools", www_dir=shipped + "/www",
            )
            asyncio.run(_with_watchdog(firmware.main()))

        try:
            crashes.guarded(start)  # an exception is a crash: counted in NVS, then a reset
        except machine.ResetRequested:
            print("--- reset ---")
            _close_sockets()
            import asyncio

            asyncio.new_event_loop().close()  # MicroPython: drops every task of the previous boot
            continue
        except KeyboardInterrupt:
            print("\nstopped")
            return


main()
