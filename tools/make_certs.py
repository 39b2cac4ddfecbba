#!/usr/bin/env python3
"""Extract the root CA certificates the firmware trusts from certifi into firmware/certs/*.der.

MicroPython's TLS takes one DER certificate per load_verify_locations() call, so each root is
its own file. The set covers the Anthropic and Telegram APIs and the common public roots behind
web_fetch-style requests, while staying small on flash.
"""
import base64
import os
import re
import sys

import certifi

# (file stem, substring of the certificate's label in certifi's bundle)
ROOTS = (
    ("isrg_root_x1", "ISRG Root X1"),
    ("isrg_root_x2", "ISRG Root X2"),
    ("gts_root_r1", "GTS Root R1"),
    ("gts_root_r3", "GTS Root R3"),
    ("gts_root_r4", "GTS Root R4"),
    ("globalsign_root_r3", "GlobalSign Root CA - R3"),
    ("godaddy_root_g2", "Go Daddy Root Certificate Authority - G2"),
    ("starfield_root_g2", "Starfield Root Certificate Authority - G2"),
    ("digicert_global_root_g2", "DigiCert Global Root G2"),
    ("amazon_root_ca1", "Amazon Root CA 1"),
    ("usertrust_rsa", "USERTrust RSA Certification Authority"),
)


def main(out_dir):
    bundle = open(certifi.where(), encoding="ascii").read()
    blocks = re.findall(
        r"# Label: \"([^\"]+)\".*?-----BEGIN CERTIFICATE-----\n(.*?)-----END CERTIFICATE-----",
        bundle, re.S)
    by_label = {label: body for label, body in blocks}
    os.makedirs(out_dir, exist_ok=True)
    missing = []
    for stem, label in ROOTS:
        body = by_label.get(label)
        if body is None:
            missing.append(label)
            continue
        with open(os.path.join(out_dir, stem + ".der"), "wb") as f:
            f.write(base64.b64decode("".join(body.split())))
    if missing:
        print("not in this certifi bundle:", ", ".join(missing))
    print("wrote {} certificates to {}".format(len(ROOTS) - len(missing), out_dir))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "firmware/certs"))
