# Runs first at every boot; kept minimal: everything else starts from main.py.
import gc

try:
    import romfs_boot  # the LittleFS root's copy (source, run from RAM): writes a staged ROMFS image

    romfs_boot.boot()  # then /rom and /rom/lib before /lib: the image's modules win
    del romfs_boot
    import sys

    sys.modules.pop("romfs_boot", None)  # its RAM back: an update imports it again
except ImportError:  # no romfs_boot.py on this board (make deploy before ROMFS)
    pass
gc.collect()
