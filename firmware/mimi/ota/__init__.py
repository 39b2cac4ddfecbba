# Firmware updates: a new app image into the other OTA slot, or new modules from a bundle manifest.
# At boot only this: the ota commands (their code, ota/commands.py, imported at the first one typed) and the
# healthy-boot confirmation, so a board that is never updated spends no heap on the writers (the heap diet).
# This boot part itself is let go once the boot has added its lines (mimi/heap.py): its lines stay in flash.
LET_GO = ".:boot"
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\nota\tota <https-url> [sha256]\t1\t2"
    "\tinstall a firmware image into the other app slot and restart (hash: given, or <url>.sha256)"
    "\tmimi.ota.commands:ota(app)"
    "\nota_bundle\tota_bundle <https-url> [manifest-sha256]\t1\t2"
    "\tupdate the modules from a bundle's manifest.json (stock firmware), or write a ROMFS image"
    " (<url>.img, make romfs; hash given or <url>.sha256) into the romfs partition, and restart"
    "\tmimi.ota.commands:ota_bundle(app)"
    "\n"
)


def bundle_root(data_root):
    """The board's '/' (where main.py, lib/ and certs/ live): the folder holding the data folder."""
    cut = data_root.rstrip("/").rfind("/")
    return data_root[:cut] if cut > 0 else "/"


def mark_valid():
    """Cancel the bootloader's rollback: this firmware booted and works. False where unsupported."""
    import esp32

    try:
        esp32.Partition.mark_app_valid_cancel_rollback()
        return True
    except (OSError, AttributeError):
        return False


def setup(app):
    """The console's ota and ota_bundle commands; app.updates (ota/commands.py) is made at the first one typed."""
    app.updates = None
    app.console.commands.add_lines(_COMMANDS)

