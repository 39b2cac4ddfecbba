# Octal PSRAM modules (ESP32-S3 N16R8, N8R8): as ESP32_GENERIC_S3's SPIRAM_OCT variant.
set(SDKCONFIG_DEFAULTS
    ${SDKCONFIG_DEFAULTS}
    boards/sdkconfig.240mhz
    boards/sdkconfig.spiram_oct
)

list(APPEND MICROPY_DEF_BOARD
    MICROPY_HW_BOARD_NAME="MimiClaw ESP32-S3 with Octal-SPIRAM"
)
