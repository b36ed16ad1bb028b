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
import logging

import pytest
from charmlibs.interfaces.tls_certificates import (
    Certificate,
    CertificateRequestAttributes,
    CertificateSigningRequest,
    PrivateKey,
)
from cryptography import x509
from ops import testing

import unit.walks.tls as tls_walks
from doubles.tls_publication import (
    Issuer,
    certificates_relation,
    csr_pem,
    private_key_pem,
    refused,
    requested,
    server_context,
)
from doubles.workload_double import RecordingWorkload
from relations.certificates import CertificateNames, certificate_names, certificate_problem
from unit.walks.charm import Ctx, Resources, bootstrap_secrets
from unit.walks.tls import UNIT_ADDRESS, TlsWalk
from workload.config import TlsFiles

garm_port = tls_walks.garm_port
tls_walk = tls_walks.tls_walk
garm_port = tls_walks.garm_port
tls_walk = tls_walks.tls_walk
garm_port = tls_walks.garm_port
tls_walk = tls_walks.tls_walk

# The TLS walk's fixtures, shared rather than copied.

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


# --- Found by the coverage floors (hand-made mutants): the relation's rarer answers ---
# (was test_certificates_edges.py)
# The `certificates` relation's rarer answers, through the charm (ops.testing).
#
# An intermediate the provider sends with the certificate, a refusal of an earlier request
# (before the names changed), and the relation while the config is invalid.


# The TLS walk's fixtures, shared rather than copied.

DAYS = datetime.timedelta(days=90)


def intermediate(walk: TlsWalk) -> Certificate:
    """Another certificate the walk's CA signed: it stands in for an intermediate CA."""
    assert walk.issuer.ca is not None
    attributes = CertificateRequestAttributes(common_name="garm-tests-intermediate")
    csr = CertificateSigningRequest.generate(attributes, PrivateKey.generate())
    return Certificate.generate(csr, walk.issuer.ca, walk.issuer.ca_key, DAYS)


def test_the_providers_intermediates_follow_the_certificate_and_the_root_stays_out(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: the leader asked for a certificate.

    Act: the provider answers with the chain (certificate, intermediate, root, intermediate).
    Assert: GARM serves the certificate followed by the intermediate, once, without the root.
    """
    issuer = tls_walk.issuer
    assert issuer.ca is not None
    relation = requested(tls_walk.state)
    csr = CertificateSigningRequest.from_string(csr_pem(relation))
    certificate = Certificate.generate(csr, issuer.ca, issuer.ca_key, DAYS)
    middle = intermediate(tls_walk)
    issued = {
        "ca": str(issuer.ca),
        "certificate_signing_request": str(csr),
        "certificate": str(certificate),
        "chain": [str(certificate), str(middle), str(issuer.ca), str(middle)],
    }
    answered = dataclasses.replace(
        relation, remote_app_data={"certificates": json.dumps([issued])}
    )
    tls_walk.state = dataclasses.replace(
        tls_walk.state, relations=(tls_walk.state.relations - {relation}) | {answered}
    )
    tls_walk.serve(
        server_context(str(certificate), private_key_pem(tls_walk.state), tls_walk.directory)
    )

    tls_walk.changed()

    tls = workload.applied[-1].tls
    assert tls is not None
    assert tls.certificate_chain == f"{str(certificate).strip()}\n{str(middle).strip()}\n"
    assert tls_walk.state.unit_status == testing.ActiveStatus("")


def test_a_refusal_of_an_earlier_request_does_not_block(tls_walk: TlsWalk):
    """Arrange: the leader asked for a certificate; GARM runs on plain HTTP.

    Act: the provider's data holds a refusal of another request (one made before the names
    changed), none of the request in force.
    Assert: Active, waiting for a certificate: the old refusal does not block.
    """
    tls_walk.serve(None)
    relation = requested(tls_walk.state)
    attributes = CertificateRequestAttributes(common_name="garm.old.example.com")
    earlier = CertificateSigningRequest.generate(attributes, PrivateKey.generate())
    error = {"code": 101, "name": "IP_NOT_ALLOWED", "message": "IP addresses are not allowed"}
    answered = dataclasses.replace(
        relation,
        remote_app_data={"request_errors": json.dumps([{"csr": str(earlier), "error": error}])},
    )
    tls_walk.state = dataclasses.replace(
        tls_walk.state, relations=(tls_walk.state.relations - {relation}) | {answered}
    )

    tls_walk.changed()

    assert tls_walk.state.unit_status == testing.ActiveStatus(
        "waiting for a certificate (GARM serves plain HTTP)"
    )


def test_no_certificate_is_requested_while_the_config_is_invalid(ctx: Ctx, resources: Resources):
    """Arrange: a leader with the certificates relation and an invalid `port`.

    Act: config-changed. Assert: Blocked naming `port`; no CSR and no key published.
    """
    state = testing.State(
        leader=True,
        config={"port": 0},
        resources=resources,
        secrets=bootstrap_secrets(),
        relations=[certificates_relation()],
    )

    after = ctx.run(ctx.on.config_changed(), state)

    assert isinstance(after.unit_status, testing.BlockedStatus)
    assert "port" in after.unit_status.message
    assert "certificate_signing_requests" not in requested(after).local_unit_data
    assert not any(secret.label and "-private-key-" in secret.label for secret in after.secrets)


# --- Found by mutation testing (mutmut): a refusal's exact words ---
# (was test_certificates_exact.py)
# A CA's refusal of GARM's certificate, as the status and the log say it.
#
# Written from the survivors of a mutation run of `relations.certificates`
# (docs/reference/testing.md).


# The TLS walk's fixtures, shared rather than copied.


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
