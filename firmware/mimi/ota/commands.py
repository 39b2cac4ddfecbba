# The console's update commands: `ota <url> [sha256]` (a new app image) and `ota_bundle <url>` (new modules).
# The writers are imported when a command runs: they cost no RAM until an update is asked for.
from mimi import platform
from mimi.net.http import HTTPError


def bundle_root(data_root):
    """The board's '/' (where main.py, lib/ and certs/ live): the folder holding the data folder."""
    cut = data_root.rstrip("/").rfind("/")
    return data_root[:cut] if cut > 0 else "/"


class Updates:
    def __init__(self, app):
        self.app = app
        self.root = bundle_root(app.flash.root)
        self.busy = False
        add = app.console.commands.add
        add("ota", self.ota, "ota <https-url> [sha256]", 1, 2,
            "install a firmware image into the other app slot and restart (hash: given, or <url>.sha256)")
        add("ota_bundle", self.ota_bundle, "ota_bundle <https-url> [manifest-sha256]", 1, 2,
            "update the modules from a bundle's manifest.json (stock firmware), or write a ROMFS image"
            " (<url>.img, make romfs; hash given or <url>.sha256) into the romfs partition, and restart")

    def out(self, text):
        platform.console_write(text + "\n")

    async def ota(self, url, sha256=None):
        if await self._guarded(self._ota, url, sha256):
            self.out("ota: restarting into the new firmware; it must prove healthy or the bootloader rolls back")
            platform.reset()

    async def _ota(self, url, sha256):
        from mimi.ota import image

        if sha256 is None:
            sha256 = await image.published_hash(url)
            self.out("ota: published SHA-256 {}".format(sha256))
        target = image.next_slot()
        self.out("ota: downloading {} into {} ({})".format(url, image.slot_name(target), image.describe()))
        size = await image.install(url, sha256, target, self.out)
        self.out("ota: {} bytes written, SHA-256 verified; {} is the boot slot now".format(size, image.slot_name(target)))
        return True

    async def ota_bundle(self, url, manifest_sha256=None):
        if await self._guarded(self._bundle, url, manifest_sha256):
            self.out("ota_bundle: restarting to run the new modules")
            platform.reset()

    async def _bundle(self, url, manifest_sha256):
        if url.endswith(".img"):  # a ROMFS image for the romfs partition (make romfs)
            return await self._romfs(url, manifest_sha256)
        from mimi.ota.bundle import BundleUpdate

        self.out("ota_bundle: reading {}".format(url))
        update = BundleUpdate(self.root, url, manifest_sha256, progress=self.out)
        changed, removed = await update.run()
        if not changed and not removed:
            self.out("ota_bundle: every file is up to date; nothing to do")
            return False
        return True

    async def _romfs(self, url, sha256):
        from mimi.ota import image, romfs

        if sha256 is None:
            sha256 = await image.published_hash(url)
        self.out("ota_bundle: downloading the ROMFS image {} beside the running one".format(url))
        await romfs.stage(self.root, url, sha256, self.out)
        return True

    async def _guarded(self, step, *args):
        """Run one update step; any failure is reported and leaves the running firmware as it was."""
        if self.busy:
            self.out("error: an update is already running")
            return False
        self.busy = True
        from mimi.ota.image import UpdateError

        try:
            return await step(*args)
        except (UpdateError, HTTPError, OSError, ValueError) as exc:
            self.out("error: update failed: {}; the running firmware is unchanged".format(exc))
            return False
        finally:
            self.busy = False
