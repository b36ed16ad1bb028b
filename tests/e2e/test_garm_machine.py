"""End to end on one machine: the garm charm's hooks run a real GARM with the files it renders.

The charm runs through `ops.testing`, hook after hook, inside a container booted with a real
systemd (see `container_machine.py`), with its real `Workload` at its production paths: GARM is
started by that systemd from the unit the charm rendered, in its sandbox. GARM is the real server
binary, packed as the `garm-binary` resource; the provider resource is a stand-in that checks the
files the charm rendered for it. GitHub is the fake on loopback: GARM's `github.com` endpoint is
pointed at it before the configurator is related (as DNS would point a name at a host), and the
model's proxy is a loopback sink, so GARM reaches nothing beyond this machine and resolves no
name.

The walk: install, GARM starts from the rendered config.toml, bootstrap, configurator related,
provider, credentials, organization and scale set in GARM, label change, old generation
retired, drained and deleted, configurator removed, its scale set and provider gone, unit
removed. Every step is checked on GARM's API and on the files on disk; at the end everything
GARM printed is searched for every secret the test knows.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import stat
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ops import testing

from contract.garm_http import call
from contract.real_garm import V021
from doubles.configurator_publication import pkcs1_app_key, republished
from doubles.database_publication import database_relation, database_secret
from doubles.workload_double import MACHINE_PATHS
from e2e.conftest import Case, GarmTarballs
from e2e.container_machine import ContainerHooks, ContainerMachine
from e2e.postgres import PostgresServer, local_postgresql
from fake_github import FakeGitHub
from garm_api import GarmClient, GarmUnreachable, ScaleSet
from garm_api.models import normalise_labels
from reconcile.bootstrap import ADMIN_LABEL, DB_PASSPHRASE_LABEL, JWT_SECRET_LABEL

OLD_LABELS = ("linux", "x64")
NEW_LABELS = ("linux", "x64", "large")
OPENSTACK_PASSWORD = "e2e-openstack-Pa55word"
PROVIDER = "openstack-small"
# A real GARM answers within a second or two; runners appear about 12 s after a scale set.
STEP_TIMEOUT = 90.0
# The reconcile tick's period: the old generation goes within one of its last job.
TICK_SECONDS = 60.0


@dataclasses.dataclass
class Walk:
    """The charm's state between hooks, and the GARM it drives."""

    ctx: ContainerHooks
    state: testing.State
    machine: ContainerMachine
    github: FakeGitHub
    port: int
    database_password: str = ""
    statuses: list[str] = dataclasses.field(default_factory=list[str])

    @property
    def url(self) -> str:
        """GARM's API on loopback."""
        return f"http://127.0.0.1:{self.port}"

    def hook(self, event: Any) -> None:
        """Run one hook; remember the unit's status."""
        self.state = self.ctx.run(event, self.state)
        status = self.state.unit_status
        self.statuses.append(f"{status.name}: {status.message}")

    def update_status_until(self, check: Callable[[], bool], what: str) -> None:
        """Run update-status until `check()` holds; fail naming `what` after the timeout."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            self.hook(self.ctx.on.update_status())
            try:
                if check():
                    return
            except GarmUnreachable:
                pass  # the hook restarted GARM; the next hook waits for it
            time.sleep(1.0)
        pytest.fail(f"{what}: not reached in {STEP_TIMEOUT:.0f}s; statuses {self.statuses[-3:]}")

    def secret(self, label: str) -> dict[str, str]:
        """The content of an app secret the charm created."""
        found = next(s for s in self.state.secrets if s.label == label)
        return dict(found.tracked_content)

    def client(self) -> GarmClient:
        """A GARM client logged in with the admin credentials the charm keeps."""
        admin = self.secret(ADMIN_LABEL)
        api = GarmClient(self.url)
        api.login(admin["username"], admin["password"])
        return api

    def scalesets(self) -> list[ScaleSet]:
        """GARM's scale sets, oldest first."""
        return sorted(self.client().list_scalesets(), key=lambda scaleset: scaleset.id)

    def publish(self, labels: tuple[str, ...]) -> None:
        """Configurator `small` publishes `labels`: relation-changed."""
        self.state, changed = republished(self.state, labels)
        self.hook(self.ctx.on.relation_changed(changed, remote_unit=0))


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """The fake GitHub on loopback."""
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture
def database(case: Case) -> Iterator[PostgresServer | None]:
    """A PostgreSQL server for the PostgreSQL case, else None (SQLite)."""
    if case.backend != "postgresql":
        yield None
        return
    with local_postgresql() as server:
        yield server


@pytest.fixture
def walk(
    machine: ContainerMachine,
    github: FakeGitHub,
    case: Case,
    database: PostgresServer | None,
    garm_tarballs: GarmTarballs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unused_port: int,
) -> Walk:
    """The leader, about to be installed, with both resources attached and a proxied model.

    In the PostgreSQL case the `database` relation has already answered with the server's
    endpoint and a role, as a PostgreSQL charm would.
    """
    # The model's proxy: a sink on loopback. GARM never proxies loopback, so the fake GitHub
    # is reached directly and anything else ends at the sink without a DNS lookup.
    for name, value in proxied_model(github).items():
        monkeypatch.setenv(name, value)
    secrets: set[testing.Secret] = set()
    relations: set[testing.RelationBase] = set()
    if database is not None:
        user = database_secret(database.username, database.password)
        secrets.add(user)
        relations.add(database_relation(user, endpoints=database.endpoint))
    state = leader_state(
        machine,
        garm_tarballs.of(case.version),
        tmp_path,
        unused_port,
        secrets=secrets,
        relations=relations,
    )
    password = database.password if database is not None else ""
    return Walk(machine.hooks(), state, machine, github, unused_port, password)


def proxied_model(github: FakeGitHub) -> dict[str, str]:
    """The model's proxy settings as Juju hands them to a hook: a sink at the fake GitHub."""
    return {
        "JUJU_CHARM_HTTP_PROXY": github.url,
        "JUJU_CHARM_HTTPS_PROXY": github.url,
        "JUJU_CHARM_NO_PROXY": "10.0.0.0/8",
    }


def leader_state(
    machine: ContainerMachine,
    garm_tarball: Path,
    directory: Path,
    port: int,
    *,
    config: dict[str, str | int] | None = None,
    secrets: set[testing.Secret] | None = None,
    relations: set[testing.RelationBase] | None = None,
) -> testing.State:
    """The leader before install: both resources attached, configurator `small`'s secrets."""
    resources = {
        testing.Resource(name="garm-binary", path=garm_tarball),
        testing.Resource(
            name="garm-provider-openstack",
            path=machine.provider_tarball(directory / "garm-provider-openstack-linux-amd64.tgz"),
        ),
    }
    granted = {
        # Both name configurator `small` as their publisher, as its app-owned copies do.
        testing.Secret(tracked_content={"password": OPENSTACK_PASSWORD, "app": "small"}),
        testing.Secret(tracked_content={"private-key": pkcs1_app_key(), "app": "small"}),
    }
    defaults: dict[str, str | int] = {
        "port": port,
        "external-url": f"http://127.0.0.1:{port}",
        "handover-grace": "2s",
        "drain-timeout": "10m",
    }
    return testing.State(
        leader=True,
        config={**defaults, **(config or {})},
        resources=frozenset(resources),
        secrets=frozenset(granted | (secrets or set())),
        relations=frozenset(relations or set()),
    )


@pytest.fixture
def unused_port() -> int:
    """A free TCP port on loopback for GARM's API."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_charm_runs_garm_through_a_label_change(walk: Walk, case: Case):
    """Arrange: a leader with both resources, a proxied model and a fake GitHub.

    Act: install, relate a configurator, turn GARM's log level to debug, change the labels,
    remove the configurator, remove the unit.
    Assert: at each step GARM's API and the files on disk show what the charm promised; GARM
    logs to the journal at the configured level; nothing it printed, debug output included,
    holds a secret or a DNS lookup.
    """
    install_and_bootstrap(walk)
    files_are_private(walk, case)
    proxy_reaches_garm(walk, case)
    point_github_at_the_fake(walk)
    first = relate_configurator(walk)
    at_info = walk.machine.journal()
    log_at_debug(walk)

    change_labels(walk, first)
    remove_configurator(walk)
    remove_unit(walk, case)

    journal = walk.machine.journal()
    assert "level=INFO" in at_info
    assert "level=DEBUG" not in at_info
    assert "level=DEBUG" in journal.removeprefix(at_info)
    assert_no_dns_lookup(journal)
    assert_no_secret_in(journal + "\n".join(walk.statuses), known_secrets(walk))


# The steps -----------------------------------------------------------------------------------


def install_and_bootstrap(walk: Walk) -> None:
    """Install creates the secrets; the next hook starts GARM with them and bootstraps it."""
    walk.hook(walk.ctx.on.install())

    # Juju discards a failed hook's secrets: GARM never runs with ones created in the same hook.
    assert walk.machine.restarts() == 0
    assert walk.state.unit_status == testing.WaitingStatus(
        "created GARM's secrets; GARM is configured at the next hook"
    )
    assert walk.state.workload_version
    walk.update_status_until(
        lambda: walk.state.unit_status == testing.ActiveStatus(""), "bootstrapped and Active"
    )
    info = walk.client().controller_info()
    assert info.callback_url == f"{walk.url}/api/v1/callbacks"
    assert info.metadata_url == f"{walk.url}/api/v1/metadata"
    assert walk.machine.restarts() == 1, "a bootstrap must not restart GARM"
    assert walk.machine.tick_paths.timer_file.is_file(), "the leader's tick"


def files_are_private(walk: Walk, case: Case) -> None:
    """What GARM reads is 0640, root-only files 0600, directories 0750; GARM ran with it.

    GARM cannot change its own configuration; binaries are executable.
    """
    paths = walk.machine.paths
    modes = {
        paths.config: 0o640,
        paths.environment: 0o600,
        paths.fingerprint: 0o600,
        paths.unit_file: 0o644,
        paths.etc: 0o750,
        paths.data: 0o750,
        paths.charm_state: 0o700,
        paths.garm_binary: 0o755,
        paths.provider_binary: 0o755,
    }
    actual = {path: stat.S_IMODE(path.stat().st_mode) for path in modes}

    assert actual == modes
    document = tomllib.loads(paths.config.read_text())
    assert "log_file" not in document["logging"], "GARM logs once, to the journal"
    if case.backend == "sqlite":
        assert document["database"]["sqlite3"]["db_file"] == str(MACHINE_PATHS.sqlite_db)
        assert paths.sqlite_db.is_file()
    else:
        assert document["database"]["backend"] == "postgresql"
        assert not paths.sqlite_db.exists()
    uid, gid = walk.machine.garm_ids()
    for path in (paths.config, paths.etc, paths.data):
        assert path.stat().st_gid == gid, path
    assert paths.data.stat().st_uid == uid, "GARM's own state directory"
    assert paths.config.stat().st_uid == 0, "GARM cannot change its configuration"


def proxy_reaches_garm(walk: Walk, case: Case) -> None:
    """GARM runs with the proxy in its environment; [proxy] only where GARM reads it."""
    paths = walk.machine.paths
    environment = paths.environment.read_text()
    document = tomllib.loads(paths.config.read_text())

    assert f'HTTPS_PROXY="{walk.github.url}"' in environment
    assert "127.0.0.1,localhost,::1" in environment
    assert ("proxy" in document) == (case.version != V021)


def point_github_at_the_fake(walk: Walk) -> None:
    """GARM's github.com endpoint leads to the fake GitHub (no credentials use it yet)."""
    api = walk.client()
    fake = walk.github.url
    urls = {
        "base_url": fake,
        "api_base_url": f"{fake}/api/v3/",
        "upload_base_url": f"{fake}/api/uploads/",
    }
    reply = call(walk.url, "PUT", "/github/endpoints/github.com", urls, token=api.token)
    assert reply.status == 200, reply.raw


def relate_configurator(walk: Walk) -> ScaleSet:
    """A configurator relation makes GARM hold a provider, App credentials, org and scale set."""
    relation = testing.Relation("garm-configurator", remote_app_name="small")
    walk.state = dataclasses.replace(walk.state, relations={*walk.state.relations, relation})
    walk.publish(OLD_LABELS)

    assert walk.machine.restarts() == 2, "a new provider needs exactly one restart"
    # The hook that restarted GARM waited for it and went on: no second hook is needed.
    assert len(walk.scalesets()) == 1
    api = walk.client()
    assert [provider.name for provider in api.list_providers()] == [PROVIDER]
    (scaleset,) = walk.scalesets()
    assert scaleset.enabled
    assert scaleset.normalised_labels == normalise_labels(OLD_LABELS)
    assert scaleset.provider_name == PROVIDER
    walk.update_status_until(
        lambda: (
            [(i.status, i.runner_status) for i in api.list_scaleset_instances(scaleset.id)]
            == [("running", "idle")]
        ),
        "the min-idle runner created by the provider and reported idle",
    )
    assert walk.machine.provider_instances() == 1
    assert all(
        seen.get("HTTPS_PROXY") == walk.github.url for seen in walk.machine.provider_environments()
    )
    return scaleset


def log_at_debug(walk: Walk) -> None:
    """`juju config garm log-level=debug` restarts GARM once with the new level."""
    walk.state = dataclasses.replace(
        walk.state, config={**walk.state.config, "log-level": "debug"}
    )

    walk.hook(walk.ctx.on.config_changed())

    assert walk.machine.restarts() == 3
    assert walk.state.unit_status == testing.ActiveStatus("")


def change_labels(walk: Walk, first: ScaleSet) -> None:
    """A label change while a job runs on the old generation.

    The replacement comes first, then the old one is retired and drains. Once the job ends
    the charm learns it from GitHub (GARM would notice only at its 5-minute consolidation),
    removes the runner and deletes the old generation within a tick.
    """
    runner = start_job(walk, first)
    walk.publish(NEW_LABELS)

    both = walk.scalesets()
    assert both[0].name == first.name
    assert [scaleset.enabled for scaleset in both] == [True, True], "replacement first"
    walk.update_status_until(
        lambda: "draining 1 runner" in walk.statuses[-1], "the old generation draining"
    )
    walk.github.finish_job(runner)
    ended = time.monotonic()
    walk.update_status_until(
        lambda: first.name not in [scaleset.name for scaleset in walk.scalesets()],
        "the old generation deleted",
    )
    assert time.monotonic() - ended < TICK_SECONDS, "deleted within a tick of its last job"
    calls = list(walk.github.calls)
    asked = [s for m, p, s in calls if m == "GET" and re.search(r"/actions/runners/\d+$", p)]
    assert 404 in asked, "the charm asked GitHub, which no longer lists the runner"
    removed = [s for m, p, s in calls if m == "DELETE" and "/agents/" in p]
    assert 404 in removed, "GARM removed the runner although GitHub no longer had its agent"
    (current,) = walk.scalesets()
    assert current.enabled
    assert current.normalised_labels == normalise_labels(NEW_LABELS)
    assert any("labels changing" in status for status in walk.statuses)
    assert walk.machine.restarts() == 3, "a label change never restarts GARM"


def start_job(walk: Walk, scaleset: ScaleSet) -> str:
    """GitHub hands a job to the scale set's idle runner; wait until GARM shows it active."""
    api = walk.client()
    (runner,) = [i.name for i in api.list_scaleset_instances(scaleset.id)]
    walk.github.start_job(scaleset.github_scale_set_id, runner)
    walk.update_status_until(
        lambda: any(
            (i.name, i.runner_status) == (runner, "active")
            for i in api.list_scaleset_instances(scaleset.id)
        ),
        "GARM sees the job",
    )
    return runner


def remove_configurator(walk: Walk) -> None:
    """Removing the configurator deletes its scale set, then its provider (one restart)."""
    relation = next(r for r in walk.state.relations if r.endpoint == "garm-configurator")
    walk.hook(walk.ctx.on.relation_broken(relation))
    others = {r for r in walk.state.relations if r.endpoint != "garm-configurator"}
    walk.state = dataclasses.replace(walk.state, relations=others)

    walk.update_status_until(lambda: walk.scalesets() == [], "the orphan scale set deleted")
    walk.update_status_until(lambda: walk.client().list_providers() == [], "the provider released")
    assert walk.machine.restarts() == 4
    assert not walk.machine.paths.provider_dir(PROVIDER).exists()


def remove_unit(walk: Walk, case: Case) -> None:
    """The remove hook stops and disables GARM and removes its unit; the data stays."""
    paths = walk.machine.paths

    walk.hook(walk.ctx.on.remove())

    assert not walk.machine.is_running()
    assert not (paths.root / "etc/systemd/system/multi-user.target.wants/garm.service").exists()
    assert not paths.unit_file.exists()
    assert not walk.machine.tick_paths.timer_file.exists()
    assert paths.sqlite_db.is_file() == (case.backend == "sqlite")


# Checks on what GARM printed ------------------------------------------------------------------


def known_secrets(walk: Walk) -> dict[str, str]:
    """Every secret value the test knows, by what it is."""
    key = next(s for s in walk.state.secrets if "private-key" in s.tracked_content)
    pem = key.tracked_content["private-key"]
    body = "".join(line for line in pem.splitlines() if "PRIVATE KEY" not in line)
    found = {
        "admin password": walk.secret(ADMIN_LABEL)["password"],
        "JWT secret": walk.secret(JWT_SECRET_LABEL)["secret"],
        "database passphrase": walk.secret(DB_PASSPHRASE_LABEL)["passphrase"],
        "OpenStack password": OPENSTACK_PASSWORD,
        "PostgreSQL password": walk.database_password,
        "App key (middle of its body)": body[len(body) // 2 : len(body) // 2 + 40],
    }
    for index, token in enumerate(walk.github.issued_tokens()):
        found[f"GitHub token #{index}"] = token
    return found


def assert_no_secret_in(text: str, secrets: dict[str, str]) -> None:
    """No known secret appears in `text`."""
    leaked = [what for what, value in secrets.items() if value and value in text]
    assert leaked == [], f"secrets in GARM's output or the statuses: {leaked}"


def assert_no_dns_lookup(journal: str) -> None:
    """GARM resolved no name: everything went to loopback or to the proxy sink."""
    lookups = [
        line for line in journal.splitlines() if "lookup " in line or "no such host" in line
    ]
    assert lookups == [], f"GARM tried to resolve names: {lookups[:3]}"
