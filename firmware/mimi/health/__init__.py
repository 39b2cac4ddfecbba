# Staying alive: the watchdog, the early-crash counter and safe mode.
# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it.
LET_GO = "boot_verdict:boot"
