# MimiClaw-Py: a personal Claude assistant for the ESP32-S3.
VERSION = "0.1.0"
