# MimiClaw on an ESP32-S3 with 16 MB flash: ESP32_GENERIC_S3's settings, our partitions, rollback.
# Built by `make firmware MICROPY_DIR=...` (tools/firmware.py); variant SPIRAM_OCT: N16R8 modules.
set(IDF_TARGET esp32s3)

# ESP-IDF resolves a relative CONFIG_PARTITION_TABLE_CUSTOM_FILENAME against ports/esp32, which
# cannot know where this repository is: name our table by absolute path, in a generated fragment.
get_filename_component(MIMICLAW_PARTITIONS_CSV ${MICROPY_BOARD_DIR}/../../partitions.csv ABSOLUTE)
if(NOT EXISTS ${MIMICLAW_PARTITIONS_CSV})
    message(FATAL_ERROR "MimiClaw partition table not found: ${MIMICLAW_PARTITIONS_CSV}")
endif()
set(MIMICLAW_SDKCONFIG_PARTITIONS ${CMAKE_BINARY_DIR}/sdkconfig.mimiclaw_partitions)
file(WRITE ${MIMICLAW_SDKCONFIG_PARTITIONS}
    "CONFIG_PARTITION_TABLE_CUSTOM_FILENAME=\"${MIMICLAW_PARTITIONS_CSV}\"\n")

set(SDKCONFIG_DEFAULTS
    boards/sdkconfig.base
    ${SDKCONFIG_IDF_VERSION_SPECIFIC}
    boards/sdkconfig.usb
    boards/sdkconfig.ble
    boards/sdkconfig.spiram_sx
    ${MICROPY_BOARD_DIR}/sdkconfig.board
    ${MIMICLAW_SDKCONFIG_PARTITIONS}
)

set(MICROPY_FROZEN_MANIFEST ${MICROPY_BOARD_DIR}/manifest.py)
