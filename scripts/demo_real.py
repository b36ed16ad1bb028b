"""The demo's story against a real GARM: `tox -e demo -- --garm-bin PATH`.

The garm charm runs hook after hook through `ops.testing`, as in the simulator demo, but on the
end-to-end test machinery (`tests/e2e`): its real `Workload` is rooted in a temporary
directory, the `garm-binary` resource is a tarball of the given GARM server, a systemctl
stand-in really runs the unit the charm renders, the provider resource is a stand-in that keeps
instances in a file, and GitHub is the fake on loopback (GARM's `github.com` endpoint is
pointed at it; the model's proxy is a loopback sink). Time is real: runners appear about 12 s
after a scale set, so the story takes a minute or two.

Exits 0 when the change ends with exactly one scale set, enabled, with the new labels.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from unittest import mock

from demo_story import NEW_LABELS, OLD_LABELS, Row
from ops import testing

import charm
from contract.garm_http import call
from doubles.configurator_publication import pkcs1_app_key, republished
from e2e.machine import Machine, build_tarball
from fake_github import FakeGitHub
from garm_api import GarmClient, GarmUnreachable, ScaleSet
from reconcile.bootstrap import ADMIN_LABEL

# Short enough to watch, long enough to see the replacement serve alone first.
HANDOVER_GRACE_SECONDS = 5
# Longer than the story: the old generation must go because its job ended, not by force.
DRAIN_TIMEOUT_SECONDS = 3600
# The reconcile tick's period: the old generation must be gone within one of its last job.
TICK_SECONDS = 60
HOOK_INTERVAL_SECONDS = 2.0
WAIT_SECONDS = 90.0


def run(garm_bin: pathlib.Path) -> int:
    """Run the story on a real GARM; 0 when it ends as it should."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeGitHub() as github,
        real_machine(pathlib.Path(tmp), garm_bin, github) as demo,
    ):
        print(f"GARM {garm_bin} on {demo.url}; the garm charm runs in ops.testing")
        try:
            return story(demo)
        except TimeoutError as error:
            print(f"\nFAILED: {error}; the end of GARM's journal:")
            lines = demo.machine.journal().splitlines()
            print("\n".join(line for line in lines if "access_log" not in line)[-6000:])
            return 1


def story(demo: RealDemo) -> int:
    """The four phases of the simulator demo, on real time."""
    demo.phase("0. install: the charm starts GARM from its rendered files and bootstraps it")
    demo.hook(demo.ctx.on.install())
    demo.settle(lambda: demo.state.unit_status == testing.ActiveStatus(""), "bootstrapped")
    demo.point_github_at_the_fake()
    demo.phase("1. configurator 'small' publishes labels linux,x64")
    demo.publish(OLD_LABELS)
    demo.settle(lambda: demo.runners() == ["idle"], "its min-idle runner is up")
    demo.phase("2. a runner picks up a job")
    (old,) = demo.scalesets()
    runner = demo.start_job(old)
    print(f"   runner {runner} of {old.name} runs a job")
    demo.phase("3. operator: juju config small labels=linux,x64,large")
    demo.publish(NEW_LABELS)
    demo.settle(lambda: "draining" in demo.state.unit_status.message, "the old one drains")
    demo.phase("4. the job finishes")
    demo.github.finish_job(runner)
    ended = time.monotonic()
    print(
        "   GitHub drops the ephemeral runner. A disabled scale set has no listener, so GARM\n"
        "   would learn of it only at its 5-minute consolidation; the charm asks GitHub about\n"
        "   the retired set's busy runner, removes it and deletes the emptied set"
    )
    demo.settle(lambda: len(demo.scalesets()) == 1, "the old one is deleted")
    took = time.monotonic() - ended
    print(f"   the old generation was deleted {took:.0f}s after its last job ended")
    if took >= TICK_SECONDS:
        print(f"\nFAILED: not within a tick ({TICK_SECONDS}s) of the job's end")
        return 1
    return demo.summary()


@dataclasses.dataclass
class RealDemo:
    """The charm's state between hooks, the machine it runs on, and the fake GitHub."""

    ctx: testing.Context[charm.GarmCharm]
    state: testing.State
    machine: Machine
    github: FakeGitHub
    port: int
    start: float = dataclasses.field(default_factory=time.monotonic)
    shown: str = ""

    @property
    def url(self) -> str:
        """GARM's API on loopback."""
        return f"http://127.0.0.1:{self.port}"

    def phase(self, title: str) -> None:
        """Print a phase heading."""
        print(f"\n{title}")

    def hook(self, event: object) -> None:
        """Run one hook; print the status and GARM's scale sets when they changed."""
        self.state = self.ctx.run(event, self.state)  # pyright: ignore[reportArgumentType]
        name = str(getattr(event, "name", "hook")).replace("_", "-")
        self.show(name.removeprefix("garm-configurator-"))

    def show(self, source: str) -> None:
        """Print the unit's status and GARM's scale sets now, when they changed."""
        status = self.state.unit_status
        try:
            rows = [str(row) for row in self.rows()]
        except GarmUnreachable:
            rows = ["(GARM is restarting)"]
        view = "\n".join([f"juju status: {status.name} {status.message}".rstrip(), *rows])
        if view != self.shown:
            elapsed = time.monotonic() - self.start
            print(f" t+{elapsed:3.0f}s {source:<16} {view.splitlines()[0]}")
            for row in view.splitlines()[1:]:
                print(f"        {row}")
            self.shown = view

    def settle(self, check: Callable[[], bool], what: str) -> None:
        """Run update-status every few seconds until `check()` holds.

        Raises:
            TimeoutError: it did not hold within the wait.
        """
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            self.hook(self.ctx.on.update_status())
            try:
                if check():
                    self.show("(GARM)")  # what GARM shows now, which the check just saw
                    return
            except GarmUnreachable:
                pass
            time.sleep(HOOK_INTERVAL_SECONDS)
        raise TimeoutError(f"{what}: not within {WAIT_SECONDS:.0f}s")

    def client(self) -> GarmClient:
        """GARM's API as the admin whose credentials the charm keeps."""
        admin = next(s for s in self.state.secrets if s.label == ADMIN_LABEL).tracked_content
        api = GarmClient(self.url)
        api.login(admin["username"], admin["password"])
        return api

    def scalesets(self) -> list[ScaleSet]:
        """GARM's scale sets, oldest first."""
        return sorted(self.client().list_scalesets(), key=lambda scaleset: scaleset.id)

    def rows(self) -> list[Row]:
        """GARM's scale sets as the simulator demo prints them."""
        api = self.client()
        instances = api.list_instances()
        return [
            Row(
                scaleset.name,
                scaleset.enabled,
                sorted(scaleset.normalised_labels),
                (scaleset.min_idle_runners, scaleset.max_runners),
                Counter(i.runner_status for i in instances if i.scale_set_id == scaleset.id),
            )
            for scaleset in self.scalesets()
        ]

    def runners(self) -> list[str]:
        """The runner status of every runner GARM holds."""
        return [instance.runner_status for instance in self.client().list_instances()]

    def start_job(self, scaleset: ScaleSet) -> str:
        """GitHub hands a job to the scale set's idle runner; GARM shows it active."""
        api = self.client()
        (runner,) = [i.name for i in api.list_scaleset_instances(scaleset.id)]
        self.github.start_job(scaleset.github_scale_set_id, runner)
        self.settle(
            lambda: any(
                (i.name, i.runner_status) == (runner, "active")
                for i in api.list_scaleset_instances(scaleset.id)
            ),
            "GARM sees the job",
        )
        return runner

    def publish(self, labels: tuple[str, ...]) -> None:
        """The configurator publishes `labels`: relation-changed."""
        self.state, changed = republished(self.state, labels)
        self.hook(self.ctx.on.relation_changed(changed, remote_unit=0))

    def point_github_at_the_fake(self) -> None:
        """GARM's github.com endpoint leads to the fake GitHub (before any credentials)."""
        fake = self.github.url
        urls = {
            "base_url": fake,
            "api_base_url": f"{fake}/api/v3/",
            "upload_base_url": f"{fake}/api/uploads/",
        }
        reply = call(
            self.url, "PUT", "/github/endpoints/github.com", urls, token=self.client().token
        )
        if reply.status != 200:
            raise RuntimeError(f"GARM refused the endpoint update: {reply.raw}")
        print(f"   GARM's github.com endpoint now leads to the fake GitHub on {fake}")

    def summary(self) -> int:
        """Print the outcome; 0 when only the new scale set remains, enabled."""
        rows = self.rows()
        elapsed = time.monotonic() - self.start
        if [(row.enabled, row.labels) for row in rows] == [(True, sorted(NEW_LABELS))]:
            print(f"\nOK: label change done in {elapsed:.0f}s; only {rows[0].name} remains")
            return 0
        print(f"\nFAILED: expected one enabled scale set with labels {sorted(NEW_LABELS)}:")
        for row in rows:
            print(f"        {row}")
        return 1


@contextmanager
def real_machine(
    directory: pathlib.Path, garm_bin: pathlib.Path, github: FakeGitHub
) -> Iterator[RealDemo]:
    """The leader on a machine under `directory`, with both resources and a proxied model."""
    machine = Machine(directory / "machine")
    port = _free_port()
    garm_tarball = build_tarball("garm", garm_bin.read_bytes(), directory / "garm.tgz")
    provider_tarball = machine.provider_tarball(directory / "provider.tgz")
    environment = {
        "PATH": machine.path_with_systemctl(),
        # The model's proxy: a sink on loopback, so GARM resolves and reaches nothing else.
        "JUJU_CHARM_HTTP_PROXY": github.url,
        "JUJU_CHARM_HTTPS_PROXY": github.url,
    }
    # The configurator's secrets name it as their publisher; garm refuses any other.
    password = testing.Secret(
        tracked_content={"password": "demo-openstack-password", "app": "small"}
    )
    key = testing.Secret(tracked_content={"private-key": pkcs1_app_key(), "app": "small"})
    state = testing.State(
        leader=True,
        config={
            "port": port,
            "external-url": f"http://127.0.0.1:{port}",
            "handover-grace": f"{HANDOVER_GRACE_SECONDS}s",
            "drain-timeout": f"{DRAIN_TIMEOUT_SECONDS}s",
        },
        resources={
            testing.Resource(name="garm-binary", path=garm_tarball),
            testing.Resource(name="garm-provider-openstack", path=provider_tarball),
        },
        secrets={password, key},
    )
    with (
        mock.patch.dict(os.environ, environment),
        mock.patch.object(charm, "Workload", machine.workload),
        mock.patch.object(charm, "ReconcileTick", machine.reconcile_tick),
    ):
        try:
            yield RealDemo(testing.Context(charm.GarmCharm), state, machine, github, port)
        finally:
            machine.stop_everything()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    sys.exit(run(pathlib.Path(sys.argv[1])))
