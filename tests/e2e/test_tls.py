# TLS for real on loopback: the firmware trusts exactly the CA certificates on its flash.
import shutil

from host_sim.fake_anthropic import text
from tests.e2e.conftest import API_KEY


def test_server_signed_by_a_configured_ca_is_accepted(boot, flash, tls_fake):
    fake, paths = tls_fake
    certs = flash / "data" / "certs"
    certs.mkdir(parents=True)
    shutil.copy(paths["ca.der"], certs / "test_ca.der")
    dev = boot(api=fake.url)
    dev.command("set_api_key " + API_KEY)
    fake.script(text("Secure hello."))
    assert "mimi: Secure hello." in dev.command("chat over tls", timeout=30)


def test_server_signed_by_an_unknown_ca_is_refused(boot, tls_fake):
    fake, _ = tls_fake
    before = len(fake.requests)
    dev = boot(api=fake.url)
    dev.command("set_api_key " + API_KEY)
    start = len(dev.output)
    dev.command("chat over tls", timeout=60)
    out = dev.output[start:]
    assert "error: Cannot reach the Anthropic API" in out
    assert "TLS certificate of localhost is not trusted" in out
    assert "retrying" not in out  # a refused certificate is final, not retried
    assert len(fake.requests) == before  # nothing was sent over the untrusted connection
