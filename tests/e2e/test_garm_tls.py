"""End to end on one machine: a real GARM serves HTTPS with the certificate the relation gives.

The charm runs through `ops.testing` in the e2e container, as in `test_garm_machine.py`. The
`certificates` provider is a throwaway CA in the test: it signs the CSR the charm's library
publishes. GARM is the real binary (v0.2.1 and the newer build, SQLite), started by the
container's systemd from the files the charm rendered; so is the charm's exporter.

The walk: GARM bootstrapped on plain HTTP with COS related (a metrics token written), the
certificate arrives (GARM restarts once onto HTTPS; the charm and the scrape verify it with
the CA; /metrics refuses a request without the token), a configurator's scale set boots a
runner that reaches GARM's callbacks over HTTPS trusting only the CA GARM sent it, a renewal
(one restart, the new certificate served), the relation removed (one restart, plain HTTP).
"""

from __future__ import annotations

import dataclasses
import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ops import testing

from contract.conftest import NEWER, V021, garm_binary
from doubles.configurator_publication import pkcs1_app_key, republished
from doubles.tls_publication import Issuer, certificates_relation, requested
from e2e.conftest import GarmTarballs
from e2e.container_machine import ContainerHooks, ContainerMachine
from fake_github import FakeGitHub
from garm_api import GarmClient, GarmUnreachable
from must_run import cannot_run
from reconcile.bootstrap import ADMIN_LABEL, pem_blocks

STEP_TIMEOUT = 60.0
LABELS = ("linux", "x64")


@dataclasses.dataclass
class TlsMachine:
    """The leader's state between hooks, the CA, and the machine GARM runs on."""

    ctx: ContainerHooks
    state: testing.State
    machine: ContainerMachine
    issuer: Issuer
    port: int
    github: FakeGitHub
    statuses: list[str] = dataclasses.field(default_factory=list[str])

    def hook(self, event: Any) -> None:
        """Run one hook; remember the unit's status."""
        self.state = self.ctx.run(event, self.state)
        self.statuses.append(f"{self.state.unit_status.name}: {self.state.unit_status.message}")

    def until_active(self, check: Callable[[], bool], what: str) -> None:
        """Run update-status until the unit is Active (with any message) and `check()` holds."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            self.hook(self.ctx.on.update_status())
            try:
                if self.state.unit_status.name == "active" and check():
                    return
            except (GarmUnreachable, OSError):
                pass  # the hook restarted GARM; the next hook waits for it
            time.sleep(0.5)
        pytest.fail(
            f"{what}: not reached in {STEP_TIMEOUT:.0f}s; statuses {self.statuses[-3:]}; "
            f"restarts {self.machine.restarts()}; journal {self.machine.journal()[-1500:]}"
        )

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

    def charm_metrics(self) -> str:
        """What the charm's exporter serves, once systemd has it listening (ADR 0030)."""
        url = f"http://127.0.0.1:{self.machine.exporter_port}/metrics"
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                    return answer.read().decode()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def point_github_at_the_fake(self) -> None:
        """GARM's github.com endpoint leads to the fake GitHub, over HTTPS verifying the CA."""
        fake = self.github.url
        urls = {
            "base_url": fake,
            "api_base_url": f"{fake}/api/v3/",
            "upload_base_url": f"{fake}/api/uploads/",
        }
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.port}/api/v1/github/endpoints/github.com",
            data=json.dumps(urls).encode(),
            headers={
                "Authorization": f"Bearer {self.client().token}",
                "Content-Type": "application/json",
            },
            method="PUT",
        )
        context = ssl.create_default_context(cadata=self.issuer.ca_pem)
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:  # noqa: S310
            assert answer.status == 200

    def served_certificate(self) -> str:
        """The certificate GARM presents on its port, PEM."""
        return ssl.get_server_certificate(("127.0.0.1", self.port))


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub on loopback."""
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture(params=[V021, NEWER])
def tls_machine(
    request: pytest.FixtureRequest,
    machine: ContainerMachine,
    github: FakeGitHub,
    garm_tarballs: GarmTarballs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> TlsMachine:
    """A leader with both resources, related to a CA and to COS, about to be installed.

    external-url is GARM itself on loopback over HTTPS, so the stand-in runners call it there.
    """
    binary, reason = garm_binary(request.param)
    if binary is None:
        cannot_run(reason)
    # As in test_garm_machine.py: a proxy sink on loopback, so GARM resolves no name.
    monkeypatch.setenv("JUJU_CHARM_HTTP_PROXY", github.url)
    monkeypatch.setenv("JUJU_CHARM_HTTPS_PROXY", github.url)
    monkeypatch.setenv("JUJU_CHARM_NO_PROXY", "10.0.0.0/8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    resources = {
        testing.Resource(name="garm-binary", path=garm_tarballs.of(request.param)),
        testing.Resource(
            name="garm-provider-openstack",
            path=machine.provider_tarball(tmp_path / "garm-provider-openstack-linux-amd64.tgz"),
        ),
    }
    secrets = {
        testing.Secret(tracked_content={"password": "e2e-openstack-Pa55word", "app": "small"}),
        testing.Secret(tracked_content={"private-key": pkcs1_app_key(), "app": "small"}),
    }
    state = testing.State(
        leader=True,
        config={
            "port": port,
            "external-url": f"https://127.0.0.1:{port}",
            "reconcile-interval": "0",
            "handover-grace": "2s",
        },
        resources=frozenset(resources),
        secrets=frozenset(secrets),
        relations=frozenset(
            {
                certificates_relation(),
                testing.Relation("cos-agent", remote_app_name="grafana-agent"),
            }
        ),
    )
    return TlsMachine(machine.hooks(), state, machine, Issuer(), port, github)


def test_real_garm_serves_https_with_the_relations_certificate(tls_machine: TlsMachine):
    """Arrange: a leader related to a CA and to COS.

    Act: install; GARM bootstraps on HTTP; the certificate arrives; a configurator is related;
    the certificate is renewed; the relation is removed.
    Assert: one restart per certificate change; over HTTPS the charm's client verifies the
    CA and a client trusting another CA is refused; GARM holds the CA for runners, and a
    runner trusting only what GARM sent it reports idle over HTTPS; /metrics refuses no token
    and the admin's token, answers the charm's metrics token; the charm's exporter, run from
    its unit, serves the scale set's metrics; the renewed certificate is served; after removal
    GARM answers plain HTTP and holds no CA.
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
    assert info.callback_url == f"https://127.0.0.1:{walk.port}/api/v1/callbacks"
    assert pem_blocks(info.ca_cert_bundle) == pem_blocks(walk.issuer.ca_pem.encode())
    with pytest.raises(GarmUnreachable):
        walk.client(ca=Issuer().ca_pem).controller_info()
    assert walk.metrics(None) == 401
    assert walk.metrics(walk.client().token) == 401
    assert walk.metrics(token_file.read_text().strip()) == 200
    assert pem_blocks(walk.served_certificate().encode()) == pem_blocks(first.encode())

    walk.point_github_at_the_fake()
    walk.state, changed = republished(walk.state, LABELS)
    walk.hook(walk.ctx.on.relation_changed(changed, remote_unit=0))
    assert walk.machine.restarts() == 3, "the configurator's provider: one restart"
    walk.until_active(lambda: runners(walk) == [("running", "idle")], "a runner idle over HTTPS")
    scraped = walk.charm_metrics()
    assert "garm_charm_paused 0\n" in scraped
    assert "garm_charm_last_reconcile_timestamp_seconds " in scraped
    assert "garm_charm_scaleset_outdated_runners{scaleset=" in scraped

    walk.state, renewed = walk.issuer.answer(walk.state)
    walk.hook(walk.ctx.on.relation_changed(requested(walk.state)))
    walk.until_active(
        lambda: pem_blocks(walk.served_certificate().encode()) == pem_blocks(renewed.encode()),
        "the renewed certificate served",
    )
    assert walk.machine.restarts() == 4

    walk.hook(walk.ctx.on.relation_broken(requested(walk.state)))
    # Juju drops the relation after relation-broken; later hooks never see it.
    walk.state = dataclasses.replace(
        walk.state, relations=walk.state.relations - {requested(walk.state)}
    )
    walk.until_active(lambda: walk.client("http").controller_info().version != "", "HTTP")

    assert walk.machine.restarts() == 5
    info = walk.client("http").controller_info()
    assert info.ca_cert_bundle == b""
    config = (walk.machine.root / "etc" / "garm" / "config.toml").read_text()
    assert "use_tls = false" in config
    assert not (walk.machine.root / "etc" / "garm" / "server.key").exists()


def runners(walk: TlsMachine) -> list[tuple[str, str]]:
    """Each instance's (status, runner status), over HTTPS."""
    api = walk.client()
    return [
        (instance.status, instance.runner_status)
        for scaleset in api.list_scalesets()
        for instance in api.list_scaleset_instances(scaleset.id)
    ]
