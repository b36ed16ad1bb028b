"""The controller's CA bundle (what runners trust GARM with) on the four targets.

The charm sets it through `reconcile.bootstrap.bootstrap` while the `certificates` relation gives
GARM a certificate, and clears it when the relation goes (garm-behaviour B29).
"""

from __future__ import annotations

import datetime

from charmlibs.interfaces.tls_certificates import (
    Certificate,
    CertificateRequestAttributes,
    PrivateKey,
)

from contract.conftest import ADMIN, PASSWORD, Target
from garm_api import GarmClient
from reconcile.bootstrap import BootstrapSecrets, ControllerUrls, bootstrap, pem_blocks

CREDS = BootstrapSecrets(
    jwt_secret="unused", db_passphrase="unused", admin_username=ADMIN, admin_password=PASSWORD
)


def a_ca(name: str) -> str:
    """A CA certificate, PEM, as the relation's provider sends it (no trailing newline)."""
    return str(
        Certificate.generate_self_signed_ca(
            CertificateRequestAttributes(common_name=name, is_ca=True),
            PrivateKey.generate(),
            datetime.timedelta(days=30),
        )
    )


def test_the_ca_bundle_is_set_once_kept_and_cleared(target: Target):
    """Arrange: a bootstrapped GARM.

    Act: bootstrap with a CA bundle (twice, a duplicate inside), then without one.
    Assert: GARM holds the CA (each certificate once); the second pass changes nothing although
    GARM re-encodes the bundle; without the relation's CA the bundle is cleared.
    """
    client = GarmClient(target.url)
    ca = a_ca("runners-ca")
    urls = ControllerUrls.from_base(target.url, f"{ca}\n{ca}".encode())

    first = bootstrap(client, CREDS, urls)
    held = client.controller_info().ca_cert_bundle
    again = bootstrap(client, CREDS, urls)
    cleared = bootstrap(client, CREDS, ControllerUrls.from_base(target.url))

    assert first.urls_updated
    assert pem_blocks(held) == pem_blocks(ca.encode())
    assert not again.urls_updated
    assert cleared.urls_updated
    assert client.controller_info().ca_cert_bundle == b""


def test_setting_and_clearing_the_bundle_at_once_is_refused(target: Target):
    """Arrange: a bootstrapped GARM. Act: PUT /controller with a bundle and the clear flag.

    Assert: 400, and the bundle is unchanged.
    """
    body = {"ca_cert_bundle": "LS0tLQ==", "clear_ca_cert_bundle": True}

    reply = target.call("PUT", "/controller", body)

    assert reply.status == 400, reply.raw
    assert "ca_cert_bundle" not in target.call("GET", "/controller-info").json
