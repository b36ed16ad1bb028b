"""A CA's refusal of GARM's certificate, as the status and the log say it.

Written from the survivors of a mutation run of `relations.certificates`
(docs/reference/testing.md).
"""

from __future__ import annotations

import datetime
import logging

import pytest
import test_charm_tls
from charmlibs.interfaces.tls_certificates import (
    Certificate,
    CertificateSigningRequest,
    PrivateKey,
)
from cryptography import x509
from ops import testing
from test_certificate_checks import WITH_LOOPBACK
from test_charm_tls import TlsWalk

from doubles.tls_publication import Issuer, refused
from relations.certificates import certificate_problem
from workload.config import TlsFiles

# The TLS walk's fixtures, shared rather than copied.
tls_walk = test_charm_tls.tls_walk
garm_port = test_charm_tls.garm_port


def test_a_refusal_is_logged_with_the_cas_message_and_code(
    tls_walk: TlsWalk, caplog: pytest.LogCaptureFixture
):
    """Arrange: the leader asked for a certificate. Act: the provider refuses it (code 101).

    Assert: one warning names the CA's message and code, word for word (the status sends the
    operator to debug-log for them).
    """
    tls_walk.serve(None)
    tls_walk.state = refused(tls_walk.state)

    with caplog.at_level(logging.WARNING, logger="relations.certificates"):
        tls_walk.changed()

    assert "the CA refused GARM's certificate: IP addresses are not allowed in SANs (101)" in [
        record.getMessage() for record in caplog.records if record.name == "relations.certificates"
    ]


def test_a_long_error_name_is_cut_so_the_status_keeps_what_to_do(tls_walk: TlsWalk):
    """Arrange: the leader asked for a certificate.

    Act: the provider refuses it with an error name of 40 characters (the interface lets a
    provider send any name).
    Assert: Blocked, naming its first 26 characters, and whole: 120 characters ending in
    where to look (with 30, the status was cut before `debug-log`).
    """
    tls_walk.serve(None)
    tls_walk.state = refused(tls_walk.state, name="A" * 29 + "BCDEFGHIJKL")

    tls_walk.changed()

    assert tls_walk.state.unit_status == testing.BlockedStatus(
        "certificates: the CA refused GARM's certificate (" + "A" * 26 + "); "
        "GARM serves plain HTTP, see juju debug-log"
    )


def test_a_certificate_is_valid_on_the_first_and_the_last_second_of_its_window():
    """Arrange: a good certificate and key, valid for a day.

    Act: check them at its `notBefore` and at its `notAfter`, then a second outside each.
    Assert: no problem at either bound (X.509 windows include both); "is not valid yet" a
    second before, "has expired" a second after.
    """
    issuer, key = Issuer(), PrivateKey.generate()
    assert issuer.ca is not None
    csr = CertificateSigningRequest.generate(WITH_LOOPBACK, key)
    certificate = Certificate.generate(csr, issuer.ca, issuer.ca_key, datetime.timedelta(days=1))
    files = TlsFiles(str(certificate), str(key), str(issuer.ca))
    parsed = x509.load_pem_x509_certificate(str(certificate).encode())
    first, last = parsed.not_valid_before_utc, parsed.not_valid_after_utc
    second = datetime.timedelta(seconds=1)

    problems = [
        certificate_problem(files, now) for now in (first - second, first, last, last + second)
    ]

    assert problems == ["is not valid yet", "", "", "has expired"]
