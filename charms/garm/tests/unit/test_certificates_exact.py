"""A CA's refusal of GARM's certificate, as the status and the log say it.

Written from the survivors of a mutation run of `relations.certificates`
(docs/reference/testing.md).
"""

from __future__ import annotations

import datetime
import json
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
from test_certificate_checks import WITH_LOOPBACK, issued_for
from test_charm_tls import UNIT_ADDRESS, TlsWalk

from doubles.tls_publication import Issuer, refused, requested
from relations.certificates import CertificateNames, certificate_names, certificate_problem
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


def test_the_csr_carries_the_common_name(tls_walk: TlsWalk):
    """Arrange: a leader without external-url. Act: its first hook on the relation.

    Assert: the CSR's subject common name is the unit's address (CAs that ignore SANs read it).
    """
    relation = requested(tls_walk.state)
    requests = json.loads(relation.local_unit_data["certificate_signing_requests"])
    csr = CertificateSigningRequest.from_string(requests[0]["certificate_signing_request"])

    assert csr.common_name == UNIT_ADDRESS


def test_an_external_url_without_a_host_adds_no_name():
    """Arrange: an `external-url` with no host. Act: derive the names.

    Assert: only the address and loopback, nothing made up for the missing host.
    """
    names = certificate_names("garm.example", "10.1.2.3")

    assert names == CertificateNames("10.1.2.3", ("localhost",), ("10.1.2.3", "127.0.0.1"))


def test_a_host_of_exactly_64_characters_is_the_common_name():
    """Arrange: an `external-url` whose host is 64 characters, X.509's bound for a common name.

    Act: derive the names. Assert: that host is the common name (65 would fall back to `garm`).
    """
    host = "a" * 56 + ".example"

    names = certificate_names(f"https://{host}", "10.1.2.3")

    assert (len(host), names.common_name) == (64, host)


def test_an_unused_certificate_is_logged_with_its_problem_and_what_garm_serves(
    tls_walk: TlsWalk, caplog: pytest.LogCaptureFixture
):
    """Arrange: the leader asked for a certificate; GARM serves plain HTTP.

    Act: the provider answers with an expired certificate.
    Assert: one warning says it is not used, why, and that GARM serves HTTP, word for word.
    """
    tls_walk.serve(None)
    tls_walk.state = issued_for(
        tls_walk.state, tls_walk.issuer, validity=datetime.timedelta(seconds=-60)
    )

    with caplog.at_level(logging.WARNING, logger="relations.certificates"):
        tls_walk.changed()

    assert [
        record.getMessage() for record in caplog.records if record.name == "relations.certificates"
    ] == ["the issued certificate is not used: it has expired; GARM serves HTTP"]


def test_until_a_certificate_is_issued_the_log_says_garm_serves_http(
    tls_walk: TlsWalk, caplog: pytest.LogCaptureFixture
):
    """Arrange: the leader asked for a certificate; the provider has not answered.

    Act: a hook. Assert: an info line says none is issued yet and GARM serves plain HTTP.
    """
    tls_walk.serve(None)

    with caplog.at_level(logging.INFO, logger="relations.certificates"):
        tls_walk.changed()

    assert "no certificate issued yet: GARM serves plain HTTP meanwhile" in [
        record.getMessage() for record in caplog.records if record.name == "relations.certificates"
    ]
