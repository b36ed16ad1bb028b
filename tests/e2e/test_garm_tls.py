"""End to end on one machine: a real GARM serves HTTPS with the certificate the relation gives.

The charm runs through `ops.testing` with its real `Workload` rooted in a temporary directory,
as in `test_garm_machine.py`. The `certificates` provider is a throwaway CA in the test: it
signs the CSR the charm's library publishes. GARM is the real binary (v0.2.1 and the newer
build, SQLite), started by the systemctl stand-in with the files the charm rendered.

The walk: GARM bootstrapped on plain HTTP with COS related (a metrics token written), the
certificate arrives (GARM restarts once onto HTTPS; the charm and the scrape verify it with
the CA; /metrics refuses a request without the token), a renewal (one restart, the new
certificate served), the relation removed (one restart, plain HTTP again).
"""

from __future__ import annotations

import dataclasses
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ops import testing
from tls_publication import Issuer, certificates_relation, requested

import charm
from contract.conftest import NEWER, V021, garm_binary
from e2e.machine import Machine
from garm_api import GarmClient, GarmUnreachable
from garm_bootstrap import ADMIN_LABEL, pem_blocks

STEP_TIMEOUT = 60.0


@dataclasses.dataclass
class TlsMachine:
    """The leader's state between hooks, the CA, and the machine GARM runs on."""

    ctx: testing.Context[charm.GarmCharm]
    state: testing.State
    machine: Machine
    issuer: Issuer
    port: int
    statuses: list[str] = dataclasses.field(default_factory=list[str])

    def hook(self, event: Any) -> None:
        """Run one hook; remember the unit's status."""
        self.state = self.ctx.run(event, self.state)
        self.statuses.append(f"{self.state.unit_status.name}: {self.state.unit_status.message}")

    def until_active(self, check: Callable[[], bool], what: str) -> None:
        """Run update-status until the unit is Active and `check()` holds."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            self.hook(self.ctx.on.update_status())
            try:
                if self.state.unit_status == testing.ActiveStatus("") and check():
                    return
            except GarmUnreachable:
                pass
            time.sleep(0.5)
        pytest.fail(f"{what}: not reached in {STEP_TIMEOUT:.0f}s; statuses {self.statuses[-3:]}")

    def client(self, scheme: str = "https", ca: str | None = None) -> GarmClient:
        """A client logged in as the admin the charm keeps, verifying with `ca` over https."""
        admin = next(s for s in self.state.secrets if s.label == ADMIN_LABEL).tracked_content
        ca_cert = self.issuer.ca_pem if ca is None else ca
        api = GarmClient(f"{scheme}://127.0.0.1:{self.port}", ca_cert=ca_cert)
        api.login(admin["username"], admin["password"])
        return api

    def metrics(self, token: str | None) -> int:
        """GET /metrics over HTTPS (verifying the CA), with the bearer `token` if given."""
        context = ssl.create_default_context(cadata=self.issuer.ca_pem)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(f"https://localhost:{self.port}/metrics", headers=headers)
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as answer:  # noqa: S310
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    def served_certificate(self) -> str:
        """The certificate GARM presents on its port, PEM."""
        return ssl.get_server_certificate(("127.0.0.1", self.port))


@pytest.fixture(params=[V021, NEWER])
def tls_machine(
    request: pytest.FixtureRequest,
    machine: Machine,
    garm_tarballs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> TlsMachine:
    """A leader with both resources, related to a CA and to COS, about to be installed."""
    binary, reason = garm_binary(request.param)
    if binary is None:
        pytest.skip(reason)
    monkeypatch.setattr(charm, "Workload", machine.workload)
    monkeypatch.setattr(charm, "ReconcileTick", machine.reconcile_tick)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    resources = {
        testing.Resource(name="garm-binary", path=garm_tarballs[request.param]),
        testing.Resource(
            name="garm-provider-openstack",
            path=machine.provider_tarball(tmp_path / "garm-provider-openstack-linux-amd64.tgz"),
        ),
    }
    state = testing.State(
        leader=True,
        config={"port": port, "reconcile-interval": "0"},
        resources=frozenset(resources),
        relations=frozenset(
            {
                certificates_relation(),
                testing.Relation("cos-agent", remote_app_name="grafana-agent"),
            }
        ),
    )
    return TlsMachine(testing.Context(charm.GarmCharm), state, machine, Issuer(), port)


def test_real_garm_serves_https_with_the_relations_certificate(tls_machine: TlsMachine):
    """Arrange: a leader related to a CA and to COS.

    Act: install; GARM bootstraps on HTTP; the certificate arrives; it is renewed; the
    relation is removed.
    Assert: one restart per certificate change; over HTTPS the charm's client verifies the
    CA and a client trusting another CA is refused; runners get https URLs and the CA;
    /metrics refuses no token and the admin's token, answers the charm's metrics token;
    the renewed certificate is served; after removal GARM answers plain HTTP again.
    """
    walk = tls_machine
    walk.hook(walk.ctx.on.install())
    walk.hook(walk.ctx.on.relation_created(requested(walk.state)))
    walk.until_active(lambda: walk.machine.restarts() == 1, "GARM on plain HTTP")
    token_file = walk.machine.root / "etc" / "garm" / "metrics-token"
    assert token_file.is_file(), "COS is related: the scrape's token is kept"

    walk.state, first = walk.issuer.answer(walk.state)
    walk.hook(walk.ctx.on.relation_changed(requested(walk.state)))
    walk.until_active(lambda: walk.client().controller_info().version != "", "GARM on HTTPS")

    assert walk.machine.restarts() == 2
    info = walk.client().controller_info()
    assert info.callback_url == f"https://192.0.2.0:{walk.port}/api/v1/callbacks"
    assert pem_blocks(info.ca_cert_bundle) == pem_blocks(walk.issuer.ca_pem.encode())
    with pytest.raises(GarmUnreachable):
        walk.client(ca=Issuer().ca_pem).controller_info()
    assert walk.metrics(None) == 401
    assert walk.metrics(walk.client().token) == 401
    assert walk.metrics(token_file.read_text().strip()) == 200
    assert pem_blocks(walk.served_certificate().encode()) == pem_blocks(first.encode())

    walk.state, renewed = walk.issuer.answer(walk.state)
    walk.hook(walk.ctx.on.relation_changed(requested(walk.state)))
    walk.until_active(
        lambda: pem_blocks(walk.served_certificate().encode()) == pem_blocks(renewed.encode()),
        "the renewed certificate served",
    )
    assert walk.machine.restarts() == 3

    walk.hook(walk.ctx.on.relation_broken(requested(walk.state)))
    # Juju drops the relation after relation-broken; later hooks never see it.
    walk.state = dataclasses.replace(
        walk.state, relations=walk.state.relations - {requested(walk.state)}
    )
    walk.until_active(lambda: walk.client("http").controller_info().version != "", "HTTP")

    assert walk.machine.restarts() == 4
    info = walk.client("http").controller_info()
    assert info.callback_url == f"http://192.0.2.0:{walk.port}/api/v1/callbacks"
    assert info.ca_cert_bundle == b""
    config = (walk.machine.root / "etc" / "garm" / "config.toml").read_text()
    assert "use_tls = false" in config
    assert not (walk.machine.root / "etc" / "garm" / "server.key").exists()
