"""The `certificates` relation walked through the charm (ops.testing)."""

from __future__ import annotations

import dataclasses
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from ops import testing

from doubles.tls_publication import (
    Issuer,
    certificates_relation,
    private_key_pem,
    requested,
    server_context,
)
from garm_sim import GarmSim
from unit.walks.charm import Ctx, Resources, bootstrap_secrets, bootstrapped

# ops.testing's default address for every binding.
UNIT_ADDRESS = "192.0.2.0"


@dataclasses.dataclass
class TlsWalk:
    """A leader that asked for a certificate, the CA answering it, and GARM on one port."""

    ctx: Ctx
    state: testing.State
    issuer: Issuer
    garm: GarmSim
    port: int
    directory: Path

    def issue(self) -> str:
        """The provider answers (again: a renewal); GARM serves the new certificate."""
        self.state, certificate = self.issuer.answer(self.state)
        self.serve(server_context(certificate, private_key_pem(self.state), self.directory))
        return certificate

    def serve(self, context: ssl.SSLContext | None) -> None:
        """GARM (re)started on the port: HTTPS with `context`, plain HTTP with None."""
        self.garm.restart(tls=context)

    def changed(self) -> None:
        """relation-changed on `certificates`."""
        self.state = self.ctx.run(self.ctx.on.relation_changed(requested(self.state)), self.state)

    def stop(self) -> None:
        """Stop GARM."""
        self.garm.stop()


@pytest.fixture
def tls_walk(ctx: Ctx, resources: Resources, garm_port: int, tmp_path: Path) -> Iterator[TlsWalk]:
    """A bootstrapped leader's first hook on the relation: its library has sent a CSR."""
    garm = GarmSim(port=garm_port)
    bootstrapped(garm)
    state = testing.State(
        leader=True,
        config={"port": garm_port},
        resources=resources,
        secrets=bootstrap_secrets(),
        relations=[certificates_relation()],
    )
    walk = TlsWalk(ctx, state, Issuer(), garm, garm_port, tmp_path / "tls")
    # GARM is down until the certificate exists: the first hook only asks for one.
    walk.state = ctx.run(ctx.on.relation_created(requested(state)), walk.state)
    yield walk
    walk.stop()


@pytest.fixture
def garm_port() -> int:
    """A free loopback port for GARM."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
