"""The `certificates` relation and the metrics token, through ops.testing state transitions.

The GARM simulator speaks HTTPS with the certificate the test's CA issued for the charm's own CSR,
so every call the charm makes in these tests verifies GARM against the relation's CA.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import hashlib
import hmac
import json
import subprocess
import sys
from pathlib import Path

import pytest
from charmlibs.interfaces.tls_certificates import CertificateSigningRequest
from ops import testing

import unit.walks.tls as tls_walks
from doubles.tls_publication import (
    csr_pem,
    private_key_pem,
    refused,
    requested,
)
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile import metrics_token
from relations import certificates as garm_tls
from unit.walks.charm import JWT, Ctx, Resources, bootstrap_secrets, bootstrapped
from unit.walks.tls import UNIT_ADDRESS, TlsWalk
from workload.config import TlsFiles

garm_port = tls_walks.garm_port
tls_walk = tls_walks.tls_walk


def test_the_csr_names_every_way_garm_is_reached(tls_walk: TlsWalk):
    """Arrange: a leader without external-url. Act: its first hook on the relation.

    Assert: the CSR asks for the unit's address, localhost and 127.0.0.1.
    """
    relation = requested(tls_walk.state)
    requests = json.loads(relation.local_unit_data["certificate_signing_requests"])
    csr = CertificateSigningRequest.from_string(requests[0]["certificate_signing_request"])

    assert csr.sans_dns == {"localhost"}
    assert csr.sans_ip == {UNIT_ADDRESS, "127.0.0.1"}


def test_a_certificate_turns_garm_to_https_with_one_restart(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: the leader asked for a certificate. Act: the provider answers.

    Assert: GARM runs with the certificate, its key and CA (one restart); the charm reached it
    over HTTPS verifying that CA; the runners' URLs are https and GARM holds the CA for them.
    """
    certificate = tls_walk.issue()

    tls_walk.changed()

    tls = workload.applied[-1].tls
    assert tls is not None
    assert tls.certificate_chain.startswith(certificate.strip())
    assert tls.private_key == private_key_pem(tls_walk.state)
    assert tls.ca == tls_walk.issuer.ca_pem.strip() + "\n"
    assert workload.restarts == 1
    assert tls_walk.state.unit_status == testing.ActiveStatus("")
    base = f"https://{UNIT_ADDRESS}:{tls_walk.port}"
    assert tls_walk.garm.controller_urls()["callback_url"] == f"{base}/api/v1/callbacks"
    assert tls_walk.garm.controller_urls()["metadata_url"] == f"{base}/api/v1/metadata"
    assert base64.b64decode(tls_walk.garm.state.controller.ca_cert_bundle).decode() == tls.ca


def test_a_renewal_restarts_garm_once_and_a_quiet_hook_never(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: GARM serving the first certificate.

    Act: a hook with nothing new, a renewal, another quiet hook.
    Assert: only the renewal restarts GARM, once, onto the new certificate.
    """
    tls_walk.issue()
    tls_walk.changed()
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.update_status(), tls_walk.state)
    before_renewal = workload.restarts

    renewed = tls_walk.issue()
    tls_walk.changed()
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.update_status(), tls_walk.state)

    assert before_renewal == 1
    assert workload.restarts == 2
    tls = workload.applied[-1].tls
    assert tls is not None
    assert tls.certificate_chain.startswith(renewed.strip())
    assert tls_walk.state.unit_status == testing.ActiveStatus("")


def test_removing_the_relation_returns_garm_to_http_with_one_restart(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: GARM serving HTTPS. Act: the relation goes (GARM back on plain HTTP); a hook.

    Assert: GARM runs without TLS after exactly one more restart; the runners' URLs are http
    again and GARM's CA bundle is cleared.
    """
    tls_walk.issue()
    tls_walk.changed()
    tls_walk.serve(None)

    tls_walk.state = tls_walk.ctx.run(
        tls_walk.ctx.on.relation_broken(requested(tls_walk.state)), tls_walk.state
    )
    # Juju drops the relation after relation-broken; the next hook changes nothing.
    tls_walk.state = dataclasses.replace(
        tls_walk.state, relations=tls_walk.state.relations - {requested(tls_walk.state)}
    )
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.update_status(), tls_walk.state)

    assert workload.applied[-1].tls is None
    assert workload.restarts == 2
    assert tls_walk.state.unit_status == testing.ActiveStatus("")
    base = f"http://{UNIT_ADDRESS}:{tls_walk.port}"
    assert tls_walk.garm.controller_urls()["callback_url"] == f"{base}/api/v1/callbacks"
    assert tls_walk.garm.state.controller.ca_cert_bundle == ""


def test_an_external_url_is_published_as_given(tls_walk: TlsWalk, workload: RecordingWorkload):
    """Arrange: GARM on plain HTTP; external-url set to a proxy in front of GARM.

    Act: the certificate (now also naming the proxy's host) arrives.
    Assert: GARM serves HTTPS; the runners' URLs keep the operator's URL as given.
    """
    tls_walk.serve(None)
    tls_walk.state = dataclasses.replace(
        tls_walk.state,
        config={"port": tls_walk.port, "external-url": "http://proxy.example.com:8080"},
    )
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.config_changed(), tls_walk.state)
    tls_walk.issue()

    tls_walk.changed()

    csr = CertificateSigningRequest.from_string(csr_pem(requested(tls_walk.state)))
    assert csr.sans_dns == {"proxy.example.com", "localhost"}
    assert workload.applied[-1].tls is not None
    assert (
        tls_walk.garm.controller_urls()["callback_url"]
        == "http://proxy.example.com:8080/api/v1/callbacks"
    )


def test_until_the_certificate_arrives_active_says_garm_serves_plain_http(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: the leader asked for a certificate; the CA has not answered. Act: a hook.

    Assert: GARM runs without TLS, and the Active status says it serves plain HTTP meanwhile.
    """
    tls_walk.serve(None)

    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.update_status(), tls_walk.state)

    assert workload.applied[-1].tls is None
    assert tls_walk.state.unit_status == testing.ActiveStatus(
        "waiting for a certificate (GARM serves plain HTTP)"
    )


def test_a_refused_certificate_blocks_with_garm_still_serving_http(
    tls_walk: TlsWalk, workload: RecordingWorkload
):
    """Arrange: the leader asked for a certificate; GARM runs on plain HTTP.

    Act: the provider refuses the request (IP SANs not allowed).
    Assert: Blocked naming the refusal; GARM keeps running without TLS, its objects reconciled.
    """
    tls_walk.serve(None)
    tls_walk.state = refused(tls_walk.state)

    tls_walk.changed()

    assert tls_walk.state.unit_status == testing.BlockedStatus(
        "certificates: the CA refused GARM's certificate (IP_NOT_ALLOWED); "
        "GARM serves plain HTTP, see juju debug-log"
    )
    assert workload.applied[-1].tls is None
    assert workload.running
    assert "GET /api/v1/scalesets" in tls_walk.garm.calls()


# The names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("external_url", "address", "common_name", "dns", "ips"),
    [
        ("", "10.1.2.3", "10.1.2.3", ("localhost",), ("10.1.2.3", "127.0.0.1")),
        (
            "https://GARM.example.com:8443/",
            "10.1.2.3",
            "garm.example.com",
            ("garm.example.com", "localhost"),
            ("10.1.2.3", "127.0.0.1"),
        ),
        (
            "https://[2001:db8::5]",
            "fd00::1",
            "2001:db8::5",
            ("localhost",),
            ("2001:db8::5", "fd00::1", "127.0.0.1"),
        ),
        (
            "https://" + "a" * 70 + ".example",
            "10.0.0.1",
            "garm",
            ("a" * 70 + ".example", "localhost"),
            ("10.0.0.1", "127.0.0.1"),
        ),
    ],
)
def test_certificate_names(
    external_url: str, address: str, common_name: str, dns: tuple[str, ...], ips: tuple[str, ...]
):
    """Arrange: an external-url and an address. Act: derive the names.

    Assert: IPs and DNS names are split, each once, loopback always there; a common name past
    64 characters falls back to "garm".
    """
    names = garm_tls.certificate_names(external_url, address)

    assert names == garm_tls.CertificateNames(common_name, dns, ips)


# The metrics token -------------------------------------------------------------------------


def metrics_jwt(secret: str, *, expires_in: datetime.timedelta, read_metrics: bool = True) -> str:
    """A token shaped like GARM's metrics token (HS256, `read_metrics`, `exp`)."""

    def encode(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    expires = int((datetime.datetime.now(datetime.UTC) + expires_in).timestamp())
    claims = encode(
        json.dumps(
            {
                "user": "",
                "is_admin": False,
                "read_metrics": read_metrics,
                "iss": "garm",
                "exp": expires,
            }
        ).encode()
    )
    signature = hmac.new(secret.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{encode(signature)}"


def test_a_fresh_token_signed_with_the_secret_is_current():
    """Arrange: tokens: fresh, near expiry, other secret, no read_metrics, garbage.

    Act: check each. Assert: only the fresh one, signed with the secret, is current.
    """
    now = datetime.datetime.now(datetime.UTC)
    year = datetime.timedelta(days=365)

    assert metrics_token.token_is_current(metrics_jwt(JWT, expires_in=year), JWT, now)
    assert not metrics_token.token_is_current(
        metrics_jwt(JWT, expires_in=datetime.timedelta(days=2)), JWT, now
    )
    assert not metrics_token.token_is_current(metrics_jwt("rotated", expires_in=year), JWT, now)
    assert not metrics_token.token_is_current(
        metrics_jwt(JWT, expires_in=year, read_metrics=False), JWT, now
    )
    assert not metrics_token.token_is_current("", JWT, now)
    assert not metrics_token.token_is_current("a.b.c", JWT, now)


def test_with_cos_the_leader_keeps_a_metrics_token_and_renews_it_only_when_stale(
    ctx: Ctx,
    resources: Resources,
    config: dict[str, str | int],
    garm: GarmSim,
    workload: RecordingWorkload,
):
    """Arrange: a bootstrapped leader related to grafana-agent; GARM issues valid tokens.

    Act: a hook, another hook, then a hook after the JWT secret was rotated.
    Assert: the token GARM issued is written once, kept while current, replaced after the
    rotation; it never appears in the relation data.
    """
    bootstrapped(garm)
    # GARM runs with the JWT secret and token lifetime the charm renders into its config.
    garm.restart(jwt_secret=JWT, token_ttl=datetime.timedelta(hours=8760).total_seconds())
    relation = testing.Relation("cos-agent", remote_app_name="grafana-agent")
    state = testing.State(
        leader=True,
        config=config,
        resources=resources,
        secrets=bootstrap_secrets(),
        relations=[relation],
    )

    state = ctx.run(ctx.on.update_status(), state)
    first = workload.metrics_token()
    state = ctx.run(ctx.on.update_status(), state)
    issued_before_rotation = len(metrics_tokens_issued(garm))
    workload.metrics_token_file = metrics_jwt("old-secret", expires_in=datetime.timedelta(days=9))
    state = ctx.run(ctx.on.update_status(), state)

    issued = metrics_tokens_issued(garm)
    assert first == issued[0]
    assert issued_before_rotation == 1
    assert len(issued) == 2
    published = state.get_relation(relation.id).local_unit_data["config"]
    assert not [token for token in issued if token in published]
    assert "/etc/garm/metrics-token" in published


def metrics_tokens_issued(garm: GarmSim) -> list[str]:
    """The metrics tokens GARM handed out so far, oldest first."""
    return [
        json.loads(entry.answer)["token"]
        for entry in garm.requests
        if entry.call == "GET /api/v1/metrics-token" and entry.status == 200
    ]


def test_without_cos_no_metrics_token_is_asked_for(
    ctx: Ctx,
    resources: Resources,
    config: dict[str, str | int],
    garm: GarmSim,
    workload: RecordingWorkload,
):
    """Arrange: a bootstrapped leader, no cos-agent relation. Act: a hook.

    Assert: GARM is never asked for a metrics token; none is written.
    """
    bootstrapped(garm)
    state = testing.State(
        leader=True, config=config, resources=resources, secrets=bootstrap_secrets()
    )

    ctx.run(ctx.on.update_status(), state)

    assert "GET /api/v1/metrics-token" not in garm.calls()
    assert workload.metrics_token() == ""


def test_a_refused_metrics_token_leaves_the_charm_active(
    ctx: Ctx,
    resources: Resources,
    config: dict[str, str | int],
    garm: GarmSim,
    workload: RecordingWorkload,
):
    """Arrange: a leader related to COS; GARM refuses the metrics token (403). Act: a hook.

    Assert: Active (only the scrape is affected, and the next hook asks again); nothing written.
    """
    bootstrapped(garm)
    garm.fault(
        method="GET",
        path="/api/v1/metrics-token",
        status=403,
        body='{"error":"Forbidden","details":""}',
    )
    state = testing.State(
        leader=True,
        config=config,
        resources=resources,
        secrets=bootstrap_secrets(),
        relations=[testing.Relation("cos-agent", remote_app_name="grafana-agent")],
    )

    state = ctx.run(ctx.on.update_status(), state)

    assert state.unit_status == testing.ActiveStatus("")
    assert workload.metrics_token() == ""


def test_importing_the_charm_does_not_load_the_tls_library():
    """Arrange: a fresh interpreter. Act: import the charm module.

    Assert: neither the tls-certificates library nor cryptography is loaded.
    """
    unit = Path(__file__).resolve().parents[1]
    source = unit.parent.parent / "src"
    code = (
        "import sys; import charm; "
        "print(any(name.startswith(('charmlibs.interfaces.tls', 'cryptography')) "
        "for name in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=source,
        env={"PYTHONPATH": f"{source}:{source.parent / 'lib'}"},
    )

    assert result.stdout.strip() == "False"


def test_tls_files_hold_the_key_out_of_their_repr():
    """Arrange: TLS files with a key. Act: repr. Assert: the key is not in it."""
    files = TlsFiles("chain", "very-secret-key", "ca")

    assert "very-secret-key" not in repr(files)


def revoked(state: testing.State) -> testing.State:
    """`state` after the provider marked every certificate it issued as revoked."""
    relation = requested(state)
    issued = json.loads(relation.remote_app_data["certificates"])
    marked = [{**certificate, "revoked": True} for certificate in issued]
    answered = dataclasses.replace(
        relation, remote_app_data={**relation.remote_app_data, "certificates": json.dumps(marked)}
    )
    return dataclasses.replace(state, relations=(state.relations - {relation}) | {answered})


def test_a_revoked_certificate_is_not_served(tls_walk: TlsWalk, workload: RecordingWorkload):
    """Arrange: GARM serving HTTPS with the issued certificate. Act: the CA revokes it.

    Assert: the next hook runs GARM without TLS (the revoked certificate and its key are not
    written for GARM).
    """
    tls_walk.issue()
    tls_walk.changed()
    assert workload.applied[-1].tls is not None
    tls_walk.serve(None)
    tls_walk.state = revoked(tls_walk.state)

    tls_walk.changed()

    assert workload.applied[-1].tls is None
