# Staying alive: the watchdog, the early-crash counter and safe mode.
