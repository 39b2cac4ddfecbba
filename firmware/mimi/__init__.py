# MimiClaw-Py: a personal Claude assistant for the ESP32-S3.
# What of the firmware's top level loads late and may be let go (mimi/heap.py), with the scopes that use it.
LET_GO = "parts:part board_names:boot url:setting,command"
VERSION = "0.1.0"
