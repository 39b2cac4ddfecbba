# run.py --romfs IMAGE: the romfs partition as a file, mounted at /rom with vfs.VfsRom and run in place.
# At each boot, as boot.py on the chip: a staged image (ota_bundle <url>.img) is written first
# (firmware/romfs_boot.py over host_sim/standins/romfs_flash.py), then the partition is mounted.
# Under CPython (no VfsRom) the partition still works for updates, and the sources run.
import sys

ROM = "/rom"
BLOCK = 4096  # the image is read into whole flash blocks

# The RAM that stands in for mapped flash. A reset here keeps the process, and with it the qstrs the
# last image's modules interned, which point into that buffer (MicroPython keeps names found in ROM in
# place): a buffer once mounted is never changed or freed. A plain reset mounts the same one again;
# an image written by an update gets a new one (the chip's reset clears all of this).
_buffers = []
# MIMI_SIM_ROMFS_UPDATE_ROOM=1 holds a hole for one update's image from the first boot on (later the
# heap is too fragmented for 300 KB in one piece); it is given up when an update is mounted.
UPDATE_SLACK = 65536
_room = [None]


def _env(name):
    import os

    getenv = getattr(os, "getenv", None)
    return getenv(name) if getenv else None


def partition_size(csv_path, name="romfs"):
    """Size of a partition in an ESP-IDF partition table CSV."""
    import lfs_flash

    with open(csv_path) as f:
        for line in f:
            cells = [cell.strip() for cell in line.split("#", 1)[0].split(",")]
            if len(cells) >= 5 and cells[0] == name:
                return lfs_flash.parse_size(cells[4])
    raise ValueError("no {} partition in {}".format(name, csv_path))


def setup(image, root, firmware_dir):
    """The partition file configured, romfs_boot imported (then its folder off the path). True: mountable."""
    import romfs_flash

    romfs_flash.configure(image, partition_size(root + "/partitions.csv"))
    sys.path.insert(0, firmware_dir)
    import romfs_boot  # noqa: F401  (kept in sys.modules: mimi.ota.romfs imports it by name)

    sys.path.remove(firmware_dir)
    try:
        import vfs

        return hasattr(vfs, "VfsRom")
    except ImportError:
        return False


def boot(stored, mountable):
    """As the chip's boot: unmount, finish a staged install, mount the partition's image at /rom."""
    import romfs_boot

    if mountable:
        import vfs

        try:
            vfs.umount(ROM)
        except OSError:
            pass
    written = romfs_boot.install(stored)
    if not mountable:
        return False
    seg = romfs_boot.segment()
    length = seg.image_length()
    if not length:
        print("romfs: no image in the romfs partition; nothing mounted at /rom")
        return False
    if written is not None or not _buffers:  # a new image (or a failed update's restore), or the first boot
        if _room[0] is not None:
            _room[0] = None
            import gc

            gc.collect()
        buf = bytearray((length + BLOCK - 1) // BLOCK * BLOCK)
        seg.read_into(buf)  # on the chip: flash mapped into the address space
        _buffers.append(buf)
        if len(_buffers) == 1 and _env("MIMI_SIM_ROMFS_UPDATE_ROOM"):
            _room[0] = bytearray(len(buf) + UPDATE_SLACK)
    import vfs

    vfs.mount(vfs.VfsRom(_buffers[-1]), ROM)

    for entry in (ROM + "/lib",):
        if entry not in sys.path:
            sys.path.insert(1, entry)  # after the stand-ins (the chip's built-in modules), before the rest
    print("romfs: {} bytes mounted at /rom".format(length))
    return True
