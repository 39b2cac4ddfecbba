# Firmware updates: a new app image into the other OTA slot, or new modules from a bundle manifest.
