"""The scenario's `GarmModel` on a real Juju model, through jubilant.

Every wait fails at once on a hook error (`jubilant.any_error`: concierge's models do not retry
failed hooks, so an error would otherwise hang until the timeout) and on the scenario's own
failure check; the status history is `juju show-status-log`.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Mapping
from contextlib import AbstractContextManager

import jubilant

from fake_github import FakeGitHub
from integration.fake_services import RemoteForward
from integration.scenario import (
    CONFIGURATOR,
    GARM,
    ActionFailed,
    Check,
    Secrets,
    Snapshot,
    Status,
)

# Polling `juju status` more often only loads the controller: hooks take seconds.
STATUS_POLL_SECONDS = 2.0
# Enough for every status of a scenario run (a few dozen) with room to spare.
HISTORY_ENTRIES = 1000


class JujuModel:
    """garm and one configurator on a jubilant-driven model.

    Args:
        juju: the model.
        garm_charm: the packed garm charm.
        configurator_charm: the packed garm-configurator charm.
        resources: garm's resource files by name.
    """

    def __init__(
        self,
        juju: jubilant.Juju,
        garm_charm: pathlib.Path,
        configurator_charm: pathlib.Path,
        resources: Mapping[str, str],
    ) -> None:
        self.juju = juju
        self.garm_charm = garm_charm
        self.configurator_charm = configurator_charm
        self.resources = dict(resources)

    def deploy_garm(self, config: Mapping[str, str]) -> None:
        """Deploy garm with its resources and `config`."""
        self.juju.deploy(self.garm_charm, GARM, resources=self.resources, config=dict(config))

    def deploy_configurator(self, config: Mapping[str, str | int], secrets: Secrets) -> None:
        """Add the user secrets, deploy, grant them, configure, relate to garm."""
        password = self.juju.add_secret(
            "openstack-password", {"password": secrets.openstack_password}
        )
        app_key = self.juju.add_secret("github-app-key", {"private-key": secrets.github_app_key})
        self.juju.deploy(self.configurator_charm, CONFIGURATOR)
        # A secret can be granted only to an application that exists.
        self.juju.grant_secret("openstack-password", CONFIGURATOR)
        self.juju.grant_secret("github-app-key", CONFIGURATOR)
        full = {
            **config,
            "openstack-password": str(password),
            "github-app-private-key": str(app_key),
        }
        self.juju.config(CONFIGURATOR, full)
        self.juju.integrate(GARM, CONFIGURATOR)

    def configure_configurator(self, config: Mapping[str, str]) -> None:
        """`juju config` the configurator."""
        self.juju.config(CONFIGURATOR, dict(config))

    def reach(self, github: FakeGitHub) -> AbstractContextManager[object]:
        """A remote forward of the fake GitHub's port to the garm unit's loopback."""
        assert self.juju.model is not None
        return RemoteForward(self.juju.model, f"{GARM}/0", github.port)

    def run_action(self, name: str) -> dict[str, str]:
        """Run an action on garm/0; its results.

        Raises:
            ActionFailed: the action failed.
        """
        try:
            return dict(self.juju.run(f"{GARM}/0", name).results)
        except jubilant.TaskError as error:
            raise ActionFailed(f"{name}: {error.task.message}") from error

    def wait(self, ready: Check, *, failed: Check, timeout: float, what: str) -> Snapshot:
        """`juju.wait` on the units' workload statuses; errors and `failed` end it at once."""
        try:
            status = self.juju.wait(
                lambda status: ready(snapshot(status)),
                error=lambda status: jubilant.any_error(status) or failed(snapshot(status)),
                delay=STATUS_POLL_SECONDS,
                timeout=timeout,
            )
        except (TimeoutError, jubilant.WaitError) as error:
            error.add_note(f"waiting for: {what}")
            raise
        return snapshot(status)

    def status_history(self) -> list[Status]:
        """garm/0's workload statuses, oldest first."""
        output = self.juju.cli(
            "show-status-log", f"{GARM}/0", "--type", "workload",
            "-n", str(HISTORY_ENTRIES), "--format", "json",
        )  # fmt: skip
        return history_from_json(output)


def snapshot(status: jubilant.Status) -> Snapshot:
    """Each application's first unit's workload status."""
    found: dict[str, Status] = {}
    for name, app in status.apps.items():
        for unit in app.units.values():
            found[name] = Status(unit.workload_status.current, unit.workload_status.message)
            break
    return found


def history_from_json(output: str) -> list[Status]:
    """`juju show-status-log --format json`: a list of entries, oldest first.

    Each entry has `status`, `message` (omitted when empty), `since` and `type`
    (`workload` for the charm's own statuses).
    """
    return [
        Status(entry.get("status", ""), entry.get("message", ""))
        for entry in json.loads(output)
        if entry.get("type", "workload") == "workload"
    ]


def capture_logs(juju: jubilant.Juju, directory: pathlib.Path) -> None:
    """The model's debug-log, status and each scenario unit's status history, one file each.

    A command that fails leaves its error in its file instead: the others are still written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    commands = {
        "debug-log.txt": ("debug-log", "--replay", "--no-tail", "--level", "DEBUG"),
        "status.txt": ("status", "--relations", "--storage"),
        "status.json": ("status", "--format", "json"),
    }
    for unit in (f"{GARM}/0", f"{CONFIGURATOR}/0"):
        commands[f"status-log-{unit.replace('/', '-')}.txt"] = (
            "show-status-log", unit, "-n", str(HISTORY_ENTRIES),
        )  # fmt: skip
    for file, args in commands.items():
        try:
            (directory / file).write_text(juju.cli(*args))
        except jubilant.CLIError as error:
            (directory / file).write_text(f"juju {' '.join(args)} failed: {error}\n")
