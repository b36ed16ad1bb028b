"""An issued certificate is checked before GARM restarts onto it (issue #20).

Through the charm (ops.testing) with the certificates relation: a certificate that does not
match the unit's key, is out of its validity window, or does not name 127.0.0.1 is not used;
GARM keeps what it served (its previous certificate, or plain HTTP) and the status names
`certificates`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest
import test_charm_tls
from charmlibs.interfaces.tls_certificates import (
    Certificate,
    CertificateRequestAttributes,
    CertificateSigningRequest,
    PrivateKey,
)
from ops import testing
from test_charm_tls import UNIT_ADDRESS, TlsWalk

from doubles.tls_publication import Issuer, csr_pem, private_key_pem, requested
from doubles.workload_double import RecordingWorkload
from relations.certificates import certificate_problem
from workload.config import TlsFiles

# The TLS walk's fixtures, shared rather than copied.
tls_walk = test_charm_tls.tls_walk
garm_port = test_charm_tls.garm_port

WITH_LOOPBACK = CertificateRequestAttributes(
    common_name=UNIT_ADDRESS, sans_dns=("localhost",), sans_ip=(UNIT_ADDRESS, "127.0.0.1")
)
WITHOUT_LOOPBACK = CertificateRequestAttributes(
    common_name=UNIT_ADDRESS, sans_dns=("localhost",), sans_ip=(UNIT_ADDRESS,)
)


def issued_for(
    state: testing.State,
    issuer: Issuer,
    *,
    key: PrivateKey | None = None,
    names: CertificateRequestAttributes = WITH_LOOPBACK,
    validity: datetime.timedelta = datetime.timedelta(days=90),
) -> testing.State:
    """The provider answers the charm's request with a certificate made as told.

    By default it is a good one: for the unit's own key and names, valid for 90 days.
    """
    assert issuer.ca is not None
    relation = requested(state)
    key = key or PrivateKey.from_string(private_key_pem(state))
    csr = CertificateSigningRequest.generate(names, key)
    certificate = Certificate.generate(csr, issuer.ca, issuer.ca_key, validity)
    issued = {
        "ca": str(issuer.ca),
        # The request it answers, as the library matches it: the charm's own CSR.
        "certificate_signing_request": csr_pem(relation),
        "certificate": str(certificate),
        "chain": [str(certificate), str(issuer.ca)],
    }
    answered = dataclasses.replace(
        relation, remote_app_data={"certificates": json.dumps([issued])}
    )
    return dataclasses.replace(state, relations=(state.relations - {relation}) | {answered})


BAD_CERTIFICATES = {
    "another key": ({"key": PrivateKey.generate()}, "does not match its private key"),
    "expired": ({"validity": datetime.timedelta(seconds=-60)}, "has expired"),
    "no 127.0.0.1": ({"names": WITHOUT_LOOPBACK}, "does not name 127.0.0.1"),
}


@pytest.mark.parametrize(("made", "problem"), BAD_CERTIFICATES.values(), ids=BAD_CERTIFICATES)
def test_a_bad_first_certificate_leaves_garm_on_http_and_blocks_naming_certificates(
    tls_walk: TlsWalk, workload: RecordingWorkload, made: dict[str, object], problem: str
):
    """Arrange: the leader asked for a certificate; GARM serves plain HTTP.

    Act: the provider answers with a bad certificate.
    Assert: GARM keeps running without TLS (no restart onto it); Blocked naming certificates
    and the problem, within 120 characters; GARM's objects are still reconciled over HTTP.
    """
    tls_walk.serve(None)
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.update_status(), tls_walk.state)
    restarts = workload.restarts
    tls_walk.state = issued_for(tls_walk.state, tls_walk.issuer, **made)  # type: ignore[arg-type]

    tls_walk.changed()

    assert tls_walk.state.unit_status == testing.BlockedStatus(
        f"certificates: the issued certificate {problem}; GARM serves HTTP"
    )
    assert len(tls_walk.state.unit_status.message) <= 120
    assert workload.applied[-1].tls is None
    assert workload.restarts == restarts
    assert workload.running
    assert "GET /api/v1/scalesets" in tls_walk.garm.calls()


@pytest.mark.parametrize(("made", "problem"), BAD_CERTIFICATES.values(), ids=BAD_CERTIFICATES)
def test_a_bad_renewal_keeps_the_previous_certificate(
    tls_walk: TlsWalk, workload: RecordingWorkload, made: dict[str, object], problem: str
):
    """Arrange: GARM serves a good certificate. Act: the provider renews with a bad one.

    Assert: GARM keeps serving the previous certificate (no restart); the charm still reaches
    it over HTTPS; Blocked naming certificates and the problem.
    """
    tls_walk.issue()
    tls_walk.changed()
    served, restarts = workload.applied[-1].tls, workload.restarts
    assert served is not None
    tls_walk.state = issued_for(tls_walk.state, tls_walk.issuer, **made)  # type: ignore[arg-type]

    tls_walk.changed()

    assert tls_walk.state.unit_status == testing.BlockedStatus(
        f"certificates: the issued certificate {problem}; GARM keeps its previous certificate"
    )
    assert workload.applied[-1].tls == served
    assert workload.restarts == restarts
    assert "GET /api/v1/scalesets" in tls_walk.garm.calls()


def test_a_good_certificate_after_a_bad_one_is_served(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: the provider answered with an expired certificate; GARM serves HTTP.

    Act: it answers again with a good one. Assert: GARM restarts onto it; Active.
    """
    tls_walk.serve(None)
    tls_walk.state = issued_for(
        tls_walk.state, tls_walk.issuer, validity=datetime.timedelta(seconds=-60)
    )
    tls_walk.changed()
    assert workload.applied[-1].tls is None

    tls_walk.issue()
    tls_walk.changed()

    assert workload.applied[-1].tls is not None
    assert tls_walk.state.unit_status == testing.ActiveStatus("")


def test_a_certificate_not_valid_yet_is_refused():
    """Arrange: a good certificate and key. Act: check them a day before it starts.

    Assert: "is not valid yet"; the same files now: no problem.
    """
    issuer, key = Issuer(), PrivateKey.generate()
    assert issuer.ca is not None
    csr = CertificateSigningRequest.generate(WITH_LOOPBACK, key)
    certificate = Certificate.generate(csr, issuer.ca, issuer.ca_key, datetime.timedelta(days=1))
    files = TlsFiles(str(certificate), str(key), str(issuer.ca))
    now = datetime.datetime.now(datetime.UTC)

    assert certificate_problem(files, now - datetime.timedelta(days=1)) == "is not valid yet"
    assert certificate_problem(files, now) == ""
    assert certificate_problem(dataclasses.replace(files, private_key="x"), now) == (
        "or its key is not PEM"
    )
