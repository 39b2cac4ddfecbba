# A throwaway test CA and a `localhost` server certificate it signed, made with the openssl command.
import os
import ssl
import subprocess


def _openssl(folder, *args):
    subprocess.run(["openssl"] + list(args), cwd=folder, check=True, capture_output=True)


def make_test_ca(folder):
    """Writes ca.pem, ca.der, server.pem, server.key into folder; returns a dict of their paths."""
    folder = str(folder)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(folder, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=Throwaway Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    _openssl(folder, "req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(folder, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl(folder, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    _openssl(folder, "x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der")
    paths = {name: os.path.join(folder, name) for name in ("ca.pem", "ca.der", "server.pem", "server.key")}
    return paths


def server_context(paths):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(paths["server.pem"], paths["server.key"])
    return ctx
