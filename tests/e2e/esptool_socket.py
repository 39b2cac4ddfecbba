# esptool's own command line (`python tests/e2e/esptool_socket.py ARGS` = `esptool ARGS`), its
# socket:// port telling how many bytes are waiting, as a serial port does: pyserial's socket://
# says 1 whenever any are, so esptool reads a read-flash one byte per call (16 MB took about ten
# minutes; about one this way). No Nagle delay on its acknowledgements either, as on a UART.
import fcntl
import socket
import struct
import termios

import esptool
from serial.urlhandler import protocol_socket

_open = protocol_socket.Serial.open


def _waiting(port):
    return struct.unpack("I", fcntl.ioctl(port._socket.fileno(), termios.FIONREAD, b"\0" * 4))[0]


def _open_without_nagle(port):
    _open(port)
    port._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


if __name__ == "__main__":
    protocol_socket.Serial.in_waiting = property(_waiting)
    protocol_socket.Serial.open = _open_without_nagle
    esptool._main()
