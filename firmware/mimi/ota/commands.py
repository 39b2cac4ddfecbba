# The console's update commands: `ota <url> [sha256]` (a new app image) and `ota_bundle <url>` (new modules).
# This module is imported at the first of them typed (ota/__init__.py registers them at boot), and the
# writers when a command runs: they cost no RAM until an update is asked for.
from mimi import platform
from mimi.net.http import HTTPError
from mimi.ota import bundle_root  # noqa: F401  (re-exported: its old home)


class Updates:
    """app.updates: what the ota and ota_bundle commands run (ota/__init__.py adds them to the console)."""

    def __init__(self, app):
        self.app = app
        self.root = bundle_root(app.flash.root)
        self.busy = False

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
        self.out("ota: {} bytes written, SHA-256 verified; {} is the boot slot now".format(
            size, image.slot_name(target)))
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


# The console's commands (ota/__init__.py lists them): app.updates is made at the first one typed.
async def ota(app, *args):
    await updates(app).ota(*args)


async def ota_bundle(app, *args):
    await updates(app).ota_bundle(*args)


def updates(app):
    if app.updates is None:
        app.updates = Updates(app)
    return app.updates
