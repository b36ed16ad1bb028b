"""The `certificates` relation's rarer answers, through the charm (ops.testing).

An intermediate the provider sends with the certificate, a refusal of an earlier request
(before the names changed), and the relation while the config is invalid.
"""

from __future__ import annotations

import dataclasses
import datetime
import json

import test_charm_tls
from charmlibs.interfaces.tls_certificates import (
    Certificate,
    CertificateRequestAttributes,
    CertificateSigningRequest,
    PrivateKey,
)
from ops import testing
from test_charm import Ctx, Resources, bootstrap_secrets
from test_charm_tls import TlsWalk

from doubles.tls_publication import (
    certificates_relation,
    csr_pem,
    private_key_pem,
    requested,
    server_context,
)
from doubles.workload_double import RecordingWorkload

# The TLS walk's fixtures, shared rather than copied.
tls_walk = test_charm_tls.tls_walk
garm_port = test_charm_tls.garm_port

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
