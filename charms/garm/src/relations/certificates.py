"""The `certificates` relation (tls-certificates) through charmlibs-interfaces-tls-certificates.

Each unit asks for its own certificate (the library's unit mode: a standby unit has one ready
when it becomes the leader). Its names cover every way GARM is reached: the `external-url` host
(runners, GitHub), the unit's address (the default URL), and `localhost` and `127.0.0.1` (the
charm's own calls and the metrics scrape on this machine). The library keeps the private key in
a unit-owned Juju secret, renews before expiry, and asks again when the names change.

The library (pydantic models and `cryptography`) is imported only when a `certificates`
relation exists (docs/adr/0016-tls-certificates-relation.md): a charm without TLS never pays for
it in a hook.
"""

from __future__ import annotations

import dataclasses
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
    ) -> None:
        """Register the library's handlers when the relation exists and the names are known.

        Args:
            charm: the charm.
            names: what to request, asked only while the relation exists (finding the unit's
                address is a hook tool call); None (the config is invalid) requests nothing.
            relation_name: the endpoint.
        """
        super().__init__(charm, relation_name)
        self.requirer: TLSCertificatesRequiresV4 | None = None
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
        """GARM's certificate chain, key and CA; None without a relation or an issued one."""
        if self.requirer is None:
            return None
        certificates, private_key = self.requirer.get_assigned_certificates()
        usable = [certificate for certificate in certificates if not certificate.revoked]
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
        """Why the provider refused this unit's request (a status text), or "" if it did not.

        Only refusals of the request in force count: an error about an earlier request (before
        `external-url` changed) says nothing about the current one.
        """
        if self.requirer is None:
            return ""
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
                return (
                    f"certificates: the CA refused GARM's certificate ({error.name[:30]}); "
                    "GARM serves plain HTTP, see juju debug-log"
                )
        return ""


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
