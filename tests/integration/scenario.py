"""The integration scenario, written once against `GarmModel`; two models run it.

`tests/integration/test_deploy.py` runs it on a real Juju model (`juju_model.JujuModel`, through
jubilant); `tests/e2e/test_integration_dry_run.py` runs it on the e2e machine (the charm's hooks
through `ops.testing`, a real GARM binary, the same fake provider and fake GitHub), so its waits,
phases and assertions run in CI without a controller.

Waits are judged on the garm unit's workload status; the order of a changeover's phases is
judged afterwards from the unit's status history (Juju's `show-status-log`), never by polling,
which misses a phase shown between two polls.
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.request
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

from doubles.configurator_publication import pkcs1_app_key
from fake_github import FakeGitHub

GARM = "garm"
CONFIGURATOR = "small"
LABELS = "noble,x64,small"
NEW_LABELS = "noble,x64,small,gpu"
PHASES = (
    "starting new scale set",
    "handing over",
    "draining",
    "drain deadline passed",
    "deleting old scale set",
)


class ActionFailed(Exception):
    """An action ran and failed (`event.fail`), e.g. GARM not answering yet."""


class Status(NamedTuple):
    """One unit's workload status: `active`, `blocked`, ... and its message."""

    current: str
    message: str


# What each application's unit shows, by application name.
Snapshot = Mapping[str, Status]
Check = Callable[[Snapshot], bool]


class GarmModel(Protocol):
    """What the scenario drives: a Juju model, or the e2e machine standing in for one."""

    def deploy_garm(self, config: Mapping[str, str]) -> None:
        """Deploy garm (resources: GARM and the fake provider) with `config`."""
        ...

    def deploy_configurator(self, config: Mapping[str, str | int], secrets: Secrets) -> None:
        """Deploy the configurator with `config` and its secrets granted; relate it to garm."""
        ...

    def configure_configurator(self, config: Mapping[str, str]) -> None:
        """`juju config` the configurator."""
        ...

    def reach(self, github: FakeGitHub) -> AbstractContextManager[object]:
        """While entered, the garm unit reaches the fake GitHub at `github.url`."""
        ...

    def run_action(self, name: str) -> dict[str, str]:
        """Run an action on the garm unit; its results.

        Raises:
            ActionFailed: the action failed.
        """
        ...

    def wait(self, ready: Check, *, failed: Check, timeout: float, what: str) -> Snapshot:
        """Wait until `ready` holds; fail at once on a hook error or when `failed` holds."""
        ...

    def status_history(self) -> list[Status]:
        """The garm unit's workload statuses, oldest first (`juju show-status-log`)."""
        ...


@dataclasses.dataclass(frozen=True)
class Secrets:
    """The configurator's user secrets: the OpenStack password and the GitHub App key."""

    openstack_password: str
    github_app_key: str

    @classmethod
    def fake(cls) -> Secrets:
        """Values nothing real accepts; the key has the shape GitHub issues (PKCS#1)."""
        return cls("fake-openstack-password", pkcs1_app_key())


@dataclasses.dataclass(frozen=True)
class Pace:
    """How long each step may take on one model, and the durations garm is deployed with.

    `handover_timeout` and `drain_timeout` are short so that a regression (no runner of the new
    set online, a drain that never ends) fails the changeover step in minutes: the step's
    timeout is longer than both together, and garm turning Blocked fails it at once.
    """

    deploy: float
    relate: float
    changeover: float
    handover_grace: str
    handover_timeout: str = "5m"
    drain_timeout: str = "5m"

    def garm_config(self) -> dict[str, str]:
        """The config garm is deployed with in the scenario."""
        return {
            "handover-grace": self.handover_grace,
            "handover-timeout": self.handover_timeout,
            "drain-timeout": self.drain_timeout,
        }


def configurator_config(labels: str) -> dict[str, str | int]:
    """Every option the configurator requires, for one org scale set with a min-idle runner.

    The min-idle runner makes the hand-over wait for a runner of the new set online, which the
    fake provider's stand-in runners report, as real runners do.
    """
    return {
        "name": CONFIGURATOR,
        "labels": labels,
        "org": "fake-org",
        "flavor": "m1.small",
        "image": "noble",
        "min-idle-runners": 1,
        "max-runners": 2,
        "openstack-auth-url": "http://keystone.invalid:5000/v3",
        "openstack-username": "runners",
        "openstack-project-name": "runners",
        "openstack-network": "runners-net",
        "github-app-id": 1,
        "github-app-installation-id": 2,
    }


# The steps -----------------------------------------------------------------------------------


def deploy_garm(model: GarmModel, pace: Pace) -> None:
    """Deploy garm with the scenario's durations; wait until it is active."""
    model.deploy_garm(pace.garm_config())
    model.wait(
        lambda apps: _garm(apps) == Status("active", ""),
        failed=_never,
        timeout=pace.deploy,
        what="garm active",
    )


def credentials_are_handed_out(model: GarmModel) -> None:
    """The get-credentials action gives the admin's name and GARM's URL."""
    results = model.run_action("get-credentials")

    assert results["username"]
    assert results["url"].startswith("http")


def relate_configurator(model: GarmModel, pace: Pace) -> dict[str, Any]:
    """The configurator related: garm and it active, one scale set in GARM, with its labels.

    Returns:
        the scale set, as the list-scalesets action shows it.
    """
    model.deploy_configurator(configurator_config(LABELS), Secrets.fake())
    model.wait(
        lambda apps: (
            all(status.current == "active" for status in apps.values())
            and _garm(apps).message == ""
            and _scaleset_count(model) == 1
        ),
        failed=_never,
        timeout=pace.relate,
        what="garm and the configurator active, one scale set in GARM",
    )
    (scaleset,) = scalesets(model)
    assert sorted(scaleset["labels"]) == sorted(LABELS.split(","))
    return scaleset


def change_labels(model: GarmModel, github: FakeGitHub, before: dict[str, Any], pace: Pace):
    """A label change: the phases in order, then one generation, a new one, with the new labels.

    The step fails at once if garm turns Blocked (the hand-over timed out: no runner of the
    new set came online) and within `pace.changeover`, all waits together, if the changeover
    never ends.
    """
    deadline = time.monotonic() + pace.changeover
    model.configure_configurator({"labels": NEW_LABELS})
    model.wait(
        lambda apps: "labels changing" in _garm(apps).message,
        failed=_garm_blocked,
        timeout=pace.changeover,
        what="garm showing the label change",
    )
    model.wait(
        lambda apps: _garm(apps) == Status("active", ""),
        failed=_garm_blocked,
        timeout=max(1.0, deadline - time.monotonic()),
        what="the label change finished, garm active",
    )

    changeover = changeover_statuses(model.status_history())
    assert_phases_in_order(changeover)
    after = scalesets(model)
    assert len(after) == 1, after
    assert sorted(after[0]["labels"]) == sorted(NEW_LABELS.split(","))
    assert after[0]["name"] != before["name"]
    assert after[0]["scaleset"] == CONFIGURATOR
    assert len(after[0]["name"]) <= 10
    assert [s["name"] for s in github.scale_sets.values()] == [after[0]["name"]]


def changeover_statuses(history: list[Status]) -> list[Status]:
    """The statuses from the label change's first until garm is active without a message."""
    start = next(
        (i for i, status in enumerate(history) if "labels changing" in status.message), None
    )
    assert start is not None, f"no label change in garm's status history: {history}"
    end = next((i for i in range(start, len(history)) if history[i] == Status("active", "")), None)
    assert end is not None, f"the label change never finished: {history[start:]}"
    return history[start:end]


def assert_phases_in_order(changeover: list[Status]) -> None:
    """Each status a phase of the label change, never going back, the hand-over among them."""
    assert all(status.current == "active" for status in changeover), changeover
    messages = [status.message for status in changeover]
    assert all("labels changing" in message for message in messages), messages
    indexes = [phase_index(message) for message in messages]
    assert len(PHASES) not in indexes, f"a status names no phase: {messages}"
    assert indexes == sorted(indexes), f"phases out of order: {messages}"
    assert PHASES.index("handing over") in indexes, f"no handing over among: {messages}"


def phase_index(message: str) -> int:
    """The position in `PHASES` of the phase `message` names (len(PHASES) for none)."""
    return next((i for i, phase in enumerate(PHASES) if phase in message), len(PHASES))


def scalesets(model: GarmModel) -> list[dict[str, Any]]:
    """GARM's scale sets, as the list-scalesets action shows them."""
    return json.loads(model.run_action("list-scalesets")["scalesets"])


def _scaleset_count(model: GarmModel) -> int:
    """How many scale sets GARM lists; -1 while the action fails (asked again at the next poll)."""
    try:
        return len(scalesets(model))
    except ActionFailed:
        return -1


def point_garm_at(model: GarmModel, github_url: str) -> None:
    """Point GARM's `github.com` endpoint at the fake (allowed while no credentials use it)."""
    credentials = model.run_action("get-credentials")
    api = credentials["url"].rstrip("/") + "/api/v1"
    login = {"username": credentials["username"], "password": credentials["password"]}
    token = _call(f"{api}/auth/login", "POST", login)["token"]
    endpoint = {
        "base_url": github_url,
        "api_base_url": f"{github_url}/api/v3/",
        "upload_base_url": f"{github_url}/api/uploads/",
    }
    _call(f"{api}/github/endpoints/github.com", "PUT", endpoint, token)


def _call(url: str, method: str, body: dict[str, str], token: str = "") -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 (an http URL of the test's own GARM)
        url, data=json.dumps(body).encode(), method=method
    )
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    # GARM is the test's own, never behind a proxy from the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as answer:
        return json.loads(answer.read() or b"{}")


def _garm(apps: Snapshot) -> Status:
    return apps.get(GARM, Status("unknown", ""))


def _garm_blocked(apps: Snapshot) -> bool:
    return _garm(apps).current == "blocked"


def _never(apps: Snapshot) -> bool:
    return False
