"""The integration scenario's `GarmModel` on the e2e machine: the dry run of the Juju suite.

garm's hooks run through `ops.testing` with its real `Workload` in the e2e container (a real
GARM binary, started by the container's systemd from the unit the charm rendered). The provider
resource is the integration suite's own fake provider (`integration.fake_services`), as on a
Juju unit: its state in `/var/lib/garm`, run by the machine's `/usr/bin/python3`, its stand-in
runners reporting to GARM. What Juju would do is done here:

- waiting is running update-status hooks, one a second, until the check holds (Juju runs them
  every 10 s in the integration model, and the leader's reconcile tick every minute);
- the status history is the unit's status after each hook, a repeat not recorded again, as
  Juju records it;
- the configurator is its publication: its config turned into the relation data it publishes,
  its secrets app-owned copies naming it, as the configurator charm makes them;
- actions run as `juju run` would, on the leader.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from ops import testing

from charms.garm_configurator.v0 import garm_configurator as interface
from e2e.container_machine import ContainerMachine
from fake_github import FakeGitHub
from integration.fake_services import fake_provider_executable, tarball
from integration.scenario import (
    CONFIGURATOR,
    GARM,
    ActionFailed,
    Check,
    Secrets,
    Snapshot,
    Status,
)

CONFIGURATOR_ENDPOINT = "garm-configurator"
HOOK_INTERVAL_SECONDS = 1.0


class MachineModel:
    """garm's leader on the e2e machine, a configurator's publication as its relation.

    Args:
        machine: the machine GARM runs on.
        garm_tarball: the `garm-binary` resource.
        directory: an empty directory for the provider resource and its state.
        port: a free loopback port for GARM's API.
    """

    def __init__(
        self, machine: ContainerMachine, garm_tarball: Path, directory: Path, port: int
    ) -> None:
        self.machine = machine
        self.garm_tarball = garm_tarball
        self.directory = directory
        self.port = port
        self.ctx = machine.hooks()
        self.state = testing.State(leader=True)
        self.history: list[Status] = []
        self.configurator: dict[str, str | int] = {}

    @property
    def url(self) -> str:
        """GARM's API, as runners and the test reach it."""
        return f"http://127.0.0.1:{self.port}"

    def deploy_garm(self, config: Mapping[str, str]) -> None:
        """Install the leader with both resources and `config`: the install hook."""
        # As on a unit: its state in /var/lib/garm, run by the machine's Python.
        provider = tarball(self.directory, "garm-provider-openstack", fake_provider_executable())
        resources = {
            testing.Resource(name="garm-binary", path=self.garm_tarball),
            testing.Resource(name="garm-provider-openstack", path=provider),
        }
        full = {"port": self.port, "external-url": self.url, **config}
        self.state = dataclasses.replace(self.state, config=full, resources=frozenset(resources))
        self._hook(self.ctx.on.install())

    def deploy_configurator(self, config: Mapping[str, str | int], secrets: Secrets) -> None:
        """The configurator's secrets granted and its publication: relation-changed."""
        owned = {
            testing.Secret(
                tracked_content={
                    interface.OPENSTACK_PASSWORD_KEY: secrets.openstack_password,
                    interface.PUBLISHER_KEY: CONFIGURATOR,
                }
            ),
            testing.Secret(
                tracked_content={
                    interface.GITHUB_APP_PRIVATE_KEY_KEY: secrets.github_app_key,
                    interface.PUBLISHER_KEY: CONFIGURATOR,
                }
            ),
        }
        relation = testing.Relation(CONFIGURATOR_ENDPOINT, remote_app_name=CONFIGURATOR)
        self.state = dataclasses.replace(
            self.state,
            secrets=self.state.secrets | owned,
            relations=self.state.relations | {relation},
        )
        self.configurator = dict(config)
        self._publish()

    def configure_configurator(self, config: Mapping[str, str]) -> None:
        """The configurator publishes its new config: relation-changed."""
        self.configurator.update(config)
        self._publish()

    def reach(self, github: FakeGitHub) -> AbstractContextManager[object]:
        """Nothing to do: GARM and the fake GitHub share this machine's loopback."""
        return contextlib.nullcontext()

    def run_action(self, name: str) -> dict[str, str]:
        """Run an action on the leader; its results, as strings as `juju run` gives them.

        Raises:
            ActionFailed: the action failed.
        """
        try:
            self.state = self.ctx.run(self.ctx.on.action(name), self.state)
        except testing.ActionFailed as error:
            raise ActionFailed(f"{name}: {error.message}") from error
        return {key: str(value) for key, value in (self.ctx.action_results or {}).items()}

    def wait(self, ready: Check, *, failed: Check, timeout: float, what: str) -> Snapshot:
        """Run update-status until `ready` holds; fail when `failed` does or at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            apps = self.snapshot()
            if failed(apps):
                pytest.fail(f"{what}: failed with {apps}; last statuses {self.history[-3:]}")
            if ready(apps):
                return apps
            if time.monotonic() > deadline:
                pytest.fail(f"{what}: not reached in {timeout:.0f}s; {self.history[-3:]}")
            time.sleep(HOOK_INTERVAL_SECONDS)
            self._hook(self.ctx.on.update_status())

    def status_history(self) -> list[Status]:
        """The leader's statuses, oldest first, a repeat recorded once."""
        return list(self.history)

    def snapshot(self) -> Snapshot:
        """The leader's status by application; the configurator's (active) once it publishes."""
        status = self.state.unit_status
        apps = {GARM: Status(status.name, status.message)}
        if self.configurator:
            apps[CONFIGURATOR] = Status("active", "")
        return apps

    def _publish(self) -> None:
        relation = next(r for r in self.state.relations if r.endpoint == CONFIGURATOR_ENDPOINT)
        assert isinstance(relation, testing.Relation)
        changed = dataclasses.replace(relation, remote_app_data=self._databag())
        others = {r for r in self.state.relations if r.endpoint != CONFIGURATOR_ENDPOINT}
        self.state = dataclasses.replace(self.state, relations=others | {changed})
        self._hook(self.ctx.on.relation_changed(changed, remote_unit=0))

    def _databag(self) -> dict[str, str]:
        """What the configurator publishes for its config, its secrets named by id."""
        config = self.configurator
        # Only the configurator's own: garm's admin secret also holds a `password`.
        owned = [
            secret
            for secret in self.state.secrets
            if secret.tracked_content.get(interface.PUBLISHER_KEY) == CONFIGURATOR
        ]
        password, key = (
            next(secret for secret in owned if field in secret.tracked_content)
            for field in (interface.OPENSTACK_PASSWORD_KEY, interface.GITHUB_APP_PRIVATE_KEY_KEY)
        )
        data = interface.GarmConfiguratorData.model_validate(
            {
                "scaleset": {
                    "name": config["name"],
                    "labels": tuple(str(config["labels"]).split(",")),
                    "flavor": config["flavor"],
                    "image": config["image"],
                    "os_arch": "amd64",
                    "min_idle_runners": config["min-idle-runners"],
                    "max_runners": config["max-runners"],
                    "runner_group": "Default",
                    "entity": {"kind": "org", "owner": config["org"]},
                },
                "openstack": {
                    "auth_url": config["openstack-auth-url"],
                    "username": config["openstack-username"],
                    "password_secret_id": password.id,
                    "project_name": config["openstack-project-name"],
                    "user_domain_name": "Default",
                    "project_domain_name": "Default",
                    "network": config["openstack-network"],
                },
                "github_app": {
                    "app_id": config["github-app-id"],
                    "installation_id": config["github-app-installation-id"],
                    "private_key_secret_id": key.id,
                },
            }
        )
        return data.to_databag()

    def _hook(self, event: Any) -> None:
        """Run one hook; record the leader's status when it changed."""
        self.state = self.ctx.run(event, self.state)
        status = Status(self.state.unit_status.name, self.state.unit_status.message)
        if not self.history or self.history[-1] != status:
            self.history.append(status)
