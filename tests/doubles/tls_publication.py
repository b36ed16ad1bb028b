"""What a TLS provider (self-signed-certificates, Vault) publishes on `certificates`, for tests.

The charm's own library writes the request: a first hook on the relation leaves a private key
in a unit secret and a CSR in the unit's databag. `Issuer` signs that CSR with a throwaway CA
and puts the answer in the provider's app databag, in the shape the interface (v4) defines.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import ssl
from pathlib import Path

from charmlibs.interfaces.tls_certificates import (
    Certificate,
    CertificateRequestAttributes,
    CertificateSigningRequest,
    PrivateKey,
)
from ops import testing

RELATION = "certificates"
PROVIDER = "self-signed-certificates"


@dataclasses.dataclass
class Issuer:
    """A throwaway CA that answers the charm's certificate request."""

    ca_key: PrivateKey = dataclasses.field(default_factory=PrivateKey.generate)
    ca: Certificate | None = None

    def __post_init__(self) -> None:
        """Create the CA certificate."""
        self.ca = Certificate.generate_self_signed_ca(
            CertificateRequestAttributes(common_name="garm-tests-ca", is_ca=True),
            self.ca_key,
            datetime.timedelta(days=365),
        )

    @property
    def ca_pem(self) -> str:
        """The CA certificate, PEM."""
        assert self.ca is not None
        return str(self.ca)

    def answer(self, state: testing.State, *, days: int = 90) -> tuple[testing.State, str]:
        """Sign the CSR the charm left in `state`; return the state with the answer, and it.

        Each call issues a new certificate (a renewal, when there was one).
        """
        assert self.ca is not None
        relation = requested(state)
        csr = CertificateSigningRequest.from_string(csr_pem(relation))
        certificate = Certificate.generate(
            csr, self.ca, self.ca_key, datetime.timedelta(days=days)
        )
        issued = {
            "ca": str(self.ca),
            "certificate_signing_request": str(csr),
            "certificate": str(certificate),
            "chain": [str(certificate), str(self.ca)],
        }
        answered = dataclasses.replace(
            relation, remote_app_data={"certificates": json.dumps([issued])}
        )
        return dataclasses.replace(
            state, relations=(state.relations - {relation}) | {answered}
        ), str(certificate)


def refused(state: testing.State, name: str = "IP_NOT_ALLOWED", code: int = 101) -> testing.State:
    """The provider refuses the CSR the charm left in `state` (interface v4 `request_errors`)."""
    relation = requested(state)
    error = {"code": code, "name": name, "message": "IP addresses are not allowed in SANs"}
    answered = dataclasses.replace(
        relation,
        remote_app_data={
            "request_errors": json.dumps([{"csr": csr_pem(relation), "error": error}])
        },
    )
    return dataclasses.replace(state, relations=(state.relations - {relation}) | {answered})


def certificates_relation() -> testing.Relation:
    """The relation before the provider answered."""
    return testing.Relation(RELATION, remote_app_name=PROVIDER)


def requested(state: testing.State) -> testing.Relation:
    """The certificates relation in `state`."""
    return next(
        relation
        for relation in state.relations
        if isinstance(relation, testing.Relation) and relation.endpoint == RELATION
    )


def csr_pem(relation: testing.Relation) -> str:
    """The CSR the charm's library published."""
    requests = json.loads(relation.local_unit_data["certificate_signing_requests"])
    return requests[0]["certificate_signing_request"]


def private_key_pem(state: testing.State) -> str:
    """The private key the library keeps in a unit secret (labelled `<lib id>-private-key-...`)."""
    return next(
        str(secret.tracked_content["private-key"])
        for secret in state.secrets
        if secret.label and "-private-key-" in secret.label
    )


def untrusted_server_context(directory: Path) -> ssl.SSLContext:
    """A TLS server context for `localhost` and 127.0.0.1 whose CA nobody trusts.

    The certificate is valid in every other respect, so a client that refuses it refuses it for
    its issuer alone.
    """
    return localhost_server_context(Issuer(), directory)


def localhost_server_context(issuer: Issuer, directory: Path) -> ssl.SSLContext:
    """A TLS server context for `localhost` and 127.0.0.1 with a certificate `issuer` signed."""
    assert issuer.ca is not None
    key = PrivateKey.generate()
    names = CertificateRequestAttributes(
        common_name="localhost", sans_dns=("localhost",), sans_ip=("127.0.0.1",)
    )
    csr = CertificateSigningRequest.generate(names, key)
    certificate = Certificate.generate(csr, issuer.ca, issuer.ca_key, datetime.timedelta(days=1))
    return server_context(str(certificate), str(key), directory)


def server_context(certificate: str, private_key: str, directory: Path) -> ssl.SSLContext:
    """A TLS server context serving `certificate` (PEM) with `private_key` (PEM)."""
    directory.mkdir(parents=True, exist_ok=True)
    certfile, keyfile = directory / "server.crt", directory / "server.key"
    certfile.write_text(certificate)
    keyfile.write_text(private_key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    return context
