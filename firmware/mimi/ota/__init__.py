# Firmware updates: a new app image into the other OTA slot, or new modules from a bundle manifest.
# At boot only this: the ota commands (their code, ota/commands.py, imported at the first one typed) and the
# healthy-boot confirmation, so a board that is never updated spends no heap on the writers (the heap diet).


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
    add = app.console.commands.add
    add("ota", _later(app, "ota"), "ota <https-url> [sha256]", 1, 2,
        "install a firmware image into the other app slot and restart (hash: given, or <url>.sha256)")
    add("ota_bundle", _later(app, "ota_bundle"), "ota_bundle <https-url> [manifest-sha256]", 1, 2,
        "update the modules from a bundle's manifest.json (stock firmware), or write a ROMFS image"
        " (<url>.img, make romfs; hash given or <url>.sha256) into the romfs partition, and restart")


def _later(app, name):
    async def handler(*args):
        if app.updates is None:
            from mimi.ota.commands import Updates

            app.updates = Updates(app)
        await getattr(app.updates, name)(*args)

    return handler
