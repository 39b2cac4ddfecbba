// MimiClaw on an ESP32-S3 module: the same hardware settings as ESP32_GENERIC_S3.
#ifndef MICROPY_HW_BOARD_NAME
// Set by mpconfigvariant_SPIRAM_OCT.cmake for octal-PSRAM modules.
#define MICROPY_HW_BOARD_NAME               "MimiClaw ESP32-S3"
#endif
#define MICROPY_HW_MCU_NAME                 "ESP32-S3"

// UART REPL for modules that have an external USB-UART and don't use native USB.
#define MICROPY_HW_ENABLE_UART_REPL         (1)

#define MICROPY_HW_I2C0_SCL                 (9)
#define MICROPY_HW_I2C0_SDA                 (8)

// ROMFS: the firmware as an image in the "romfs" partition (make romfs), mounted at /rom at boot and
// run in place from flash; /rom and /rom/lib come before /lib on sys.path (boot.py makes sure).
#define MICROPY_VFS_ROM                     (1)
