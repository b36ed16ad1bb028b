"""The `certificates` relation (tls-certificates) through charmlibs-interfaces-tls-certificates.

Each unit asks for its own certificate (the library's unit mode: a standby unit has one ready
when it becomes the leader). Its names cover every way GARM is reached: the `external-url` host
(runners, GitHub), the unit's address (the default URL), and `localhost` and `127.0.0.1` (the
charm's own calls and the metrics scrape on this machine). The library keeps the private key in
a unit-owned Juju secret, renews before expiry, and asks again when the names change.

An issued certificate is checked before GARM restarts onto it: it must match the private key, be
valid now, and name 127.0.0.1 (the charm's own calls reach GARM there). One that fails stays
unused: GARM keeps the certificate it serves (or plain HTTP), and the status names
`certificates`.

The library (pydantic models and `cryptography`) is imported only when a `certificates`
relation exists (docs/adr/0016-tls-certificates-relation.md): a charm without TLS never pays for
it in a hook.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import ops

from workload.config import TlsFiles

if TYPE_CHECKING:
    from charmlibs.interfaces.tls_certificates import (
        CertificateRequestAttributes,
        ProviderCertificate,
        TLSCertificatesRequiresV4,
    )
    from cryptography import x509

logger = logging.getLogger(__name__)

RELATION_NAME: Final = "certificates"
# The charm's own calls and the metrics scrape reach GARM on this machine by these.
LOCAL_NAMES: Final = ("localhost", "127.0.0.1")
LOCAL_URL_HOST: Final = "127.0.0.1"
FALLBACK_COMMON_NAME: Final = "garm"
# X.509 bounds a common name at 64 characters; the names all go in the SANs anyway.
MAX_COMMON_NAME: Final = 64


@dataclasses.dataclass(frozen=True)
class CertificateNames:
    """What the certificate must be valid for."""

    common_name: str
    dns: tuple[str, ...]
    ips: tuple[str, ...]


def certificate_names(external_url: str, address: str) -> CertificateNames:
    """The names of every way GARM is reached: `external-url`'s host, the address, loopback.

    Args:
        external_url: the `external-url` option; empty when unset.
        address: the unit's address (the default URL's host).
    """
    hosts = [urlsplit(external_url).hostname or ""] if external_url else []
    hosts = [host for host in (*hosts, address, *LOCAL_NAMES) if host]
    dns: list[str] = []
    ips: list[str] = []
    for host in dict.fromkeys(hosts):
        try:
            ips.append(str(ipaddress.ip_address(host)))
        except ValueError:
            dns.append(host.lower())
    common_name = hosts[0] if len(hosts[0]) <= MAX_COMMON_NAME else FALLBACK_COMMON_NAME
    return CertificateNames(common_name, tuple(dict.fromkeys(dns)), tuple(dict.fromkeys(ips)))


class Certificates(ops.Object):
    """Requests GARM's certificate and reads it back with its key and CA."""

    def __init__(
        self,
        charm: ops.CharmBase,
        names: Callable[[], CertificateNames | None],
        relation_name: str = RELATION_NAME,
        *,
        served: Callable[[], TlsFiles | None] = lambda: None,
    ) -> None:
        """Register the library's handlers when the relation exists and the names are known.

        Args:
            charm: the charm.
            names: what to request, asked only while the relation exists (finding the unit's
                address is a hook tool call); None (the config is invalid) requests nothing.
            relation_name: the endpoint.
            served: the certificate GARM serves now (its files on this machine), or None: what
                stays when an issued one fails its checks.
        """
        super().__init__(charm, relation_name)
        self.requirer: TLSCertificatesRequiresV4 | None = None
        self._served = served
        # Checked once per hook: (what GARM is to serve, why the issued one is not it).
        self._checked: tuple[TlsFiles | None, str] | None = None
        if not self.model.relations[relation_name]:
            return
        requested = names()
        if requested is not None:
            self.requirer = _requirer(charm, relation_name, requested)

    def observe(self, handler: Callable[[Any], None]) -> None:
        """Send the library's `certificate_available` (first issue and renewal) to `handler`."""
        if self.requirer is not None:
            self.framework.observe(self.requirer.on.certificate_available, handler)

    def tls_files(self) -> TlsFiles | None:
        """What GARM serves: the issued certificate, chain, key and CA once they pass the checks.

        None without a relation or an issued certificate. An issued one that fails the checks
        (`rejection`) leaves the one GARM serves now, or None (plain HTTP).
        """
        return self._check()[0]

    def rejection(self) -> str:
        """Why the issued certificate is not served (a status naming `certificates`), or ""."""
        return self._check()[1]

    def _check(self) -> tuple[TlsFiles | None, str]:
        if self._checked is None:
            issued = self._issued()
            problem = "" if issued is None else certificate_problem(issued, _now())
            if not problem:
                self._checked = (issued, "")
            else:
                served = self._served()
                kept = "GARM keeps its previous certificate" if served else "GARM serves HTTP"
                logger.warning("the issued certificate is not used: it %s; %s", problem, kept)
                self._checked = (served, f"certificates: the issued certificate {problem}; {kept}")
        return self._checked

    def _issued(self) -> TlsFiles | None:
        """The provider's answer to the request in force, with the unit's key; None if none.

        Matched by the request alone: the library's own lookup silently drops a certificate
        for another key, which would send GARM back to plain HTTP without a word.
        """
        if self.requirer is None:
            return None
        current = {
            str(request.certificate_signing_request)
            for request in self.requirer.get_csrs_from_requirer_relation_data()
        }
        private_key = self.requirer.private_key
        usable = [
            certificate
            for certificate in self.requirer.get_provider_certificates()
            if str(certificate.certificate_signing_request) in current and not certificate.revoked
        ]
        if private_key is None or not usable:
            logger.info("no certificate issued yet: GARM serves plain HTTP meanwhile")
            return None
        return TlsFiles(
            certificate_chain=_chain(usable[0]),
            private_key=str(private_key),
            ca=str(usable[0].ca).strip() + "\n",
        )

    def requested(self) -> bool:
        """Whether this unit asks for a certificate (the relation exists, the config is valid)."""
        return self.requirer is not None

    def refusal(self) -> str:
        """Why the relation's certificate is not served (a status text), or "" if it is.

        The issued certificate failed its checks (`rejection`), or the provider refused this
        unit's request: only refusals of the request in force count (an error about an earlier
        request, before `external-url` changed, says nothing about the current one).
        """
        if self.requirer is None:
            return ""
        if self.rejection():
            return self.rejection()
        current = {
            str(request.certificate_signing_request)
            for request in self.requirer.get_csrs_from_requirer_relation_data()
        }
        for refused in self.requirer.get_request_errors():
            if str(refused.certificate_signing_request) in current:
                error = refused.error
                logger.warning(
                    "the CA refused GARM's certificate: %s (%s)", error.message, error.code
                )
                # 26 characters keep the status within 120 (the interface's names have 20).
                return (
                    f"certificates: the CA refused GARM's certificate ({error.name[:26]}); "
                    "GARM serves plain HTTP, see juju debug-log"
                )
        return ""


def certificate_problem(files: TlsFiles, now: datetime.datetime) -> str:
    """What makes `files` unfit for GARM ("" when fit), worded to follow "the certificate".

    GARM would fail to start with a key that does not match, clients refuse a certificate out
    of its validity window, and the charm itself reaches GARM at 127.0.0.1.
    """
    from cryptography import x509  # noqa: PLC0415 - only with the relation, as the library
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    try:
        certificate = x509.load_pem_x509_certificates(files.certificate_chain.encode())[0]
        key = serialization.load_pem_private_key(files.private_key.encode(), password=None)
    except (ValueError, TypeError, IndexError):
        return "or its key is not PEM"
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if certificate.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        return "does not match its private key"
    if now < certificate.not_valid_before_utc:
        return "is not valid yet"
    if now > certificate.not_valid_after_utc:
        return "has expired"
    if LOCAL_URL_HOST not in _ip_names(certificate):
        return f"does not name {LOCAL_URL_HOST}"
    return ""


def _ip_names(certificate: x509.Certificate) -> list[str]:
    """The IP addresses among the certificate's SANs."""
    from cryptography import x509  # noqa: PLC0415 - see certificate_problem

    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return [str(address) for address in names.value.get_values_for_type(x509.IPAddress)]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _chain(issued: ProviderCertificate) -> str:
    """The certificate, then the intermediates the provider sent (its root left out)."""
    certificate, root = str(issued.certificate).strip(), str(issued.ca).strip()
    blocks = [certificate]
    for link in issued.chain:
        pem = str(link).strip()
        if pem not in (certificate, root) and pem not in blocks:
            blocks.append(pem)
    return "\n".join(blocks) + "\n"


def _requirer(
    charm: ops.CharmBase, relation_name: str, names: CertificateNames
) -> TLSCertificatesRequiresV4:
    from charmlibs.interfaces.tls_certificates import (  # noqa: PLC0415 - only with the relation
        Mode,
        TLSCertificatesRequiresV4,
    )

    return TLSCertificatesRequiresV4(
        charm,
        relation_name,
        [request_attributes(names)],
        mode=Mode.UNIT,
        # A changed external-url or address changes the names: the library asks again.
        refresh_events=[charm.on.config_changed, charm.on.upgrade_charm],
    )


def request_attributes(names: CertificateNames) -> CertificateRequestAttributes:
    """The library's request for `names` (tests issue certificates for the same request)."""
    from charmlibs.interfaces.tls_certificates import (  # noqa: PLC0415 - see _requirer
        CertificateRequestAttributes,
    )

    return CertificateRequestAttributes(
        common_name=names.common_name, sans_dns=names.dns, sans_ip=names.ips
    )
