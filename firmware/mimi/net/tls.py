# One verifying TLS client context, trusting the CA certificates (DER) shipped on flash and added by the owner.
import os
import ssl

_context = [None]
_cert_dirs = []


def configure(cert_dirs):
    """Folders of *.der CA certificates to trust; the context is rebuilt on next use."""
    _cert_dirs[:] = list(cert_dirs)
    _context[0] = None


def _der_files():
    for folder in _cert_dirs:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".der"):
                yield folder + "/" + name


def context():
    """The shared client context: CERT_REQUIRED, hostname checked, built once."""
    if _context[0] is None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.verify_mode = ssl.CERT_REQUIRED
        loaded = 0
        for path in _der_files():
            with open(path, "rb") as f:
                der = f.read()
            try:
                ctx.load_verify_locations(cadata=der)  # MicroPython takes one DER certificate per call
                loaded += 1
            except (ValueError, OSError) as exc:
                print("TLS: skipping unreadable CA certificate {} ({})".format(path, exc))
        _context[0] = ctx
        if not loaded:
            print("TLS: no CA certificates found; https connections will be refused")
    return _context[0]
