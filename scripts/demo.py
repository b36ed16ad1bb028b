"""Run the main job locally: a blue/green label change of one scale set, end to end.

The real garm charm runs hook after hook through `ops.testing` against the GARM simulator
(`tests/garm_sim`, real HTTP on 127.0.0.1). Only the machine is replaced: the workload (install,
systemd) is the recording double of the unit tests, and GARM is the simulator. No Juju, no
network, no systemd.

The simulator's clock is frozen: time moves only when the demo advances it, and the charm reads
the same clock, so the hand-over grace (the charm's default, 60 s) passes without waiting.

With `--garm-bin PATH` the same story runs on that real GARM binary instead, on this machine
and in real time (`demo_real.py`).

Then an image change: the charm's rolling refresh replaces every idle runner made before it,
one at a time (`refresh-surge` 1), never with fewer idle runners than min idle.

Exits 0 when the label change ends with exactly one scale set, enabled, with the new labels,
and the image change replaced every idle runner without going below min idle.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import pathlib
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from demo_story import NEW_LABELS, OLD_LABELS, Row
from ops import testing

import charm
from doubles.configurator_publication import pkcs1_app_key, small_databag
from doubles.workload_double import RecordingWorkload
from fake_github import FakeGitHub
from garm_api import GarmClient
from garm_sim import GarmSim, SimClock

# One second past the charm's default handover-grace (60s).
PAST_GRACE = 61.0
MAX_HOOKS = 12
# The image change of the refresh story, and the min idle it keeps throughout.
NEW_IMAGE = "ubuntu-24.04-patched"
REFRESH_MIN_IDLE = 2
# A runner boots in 30 s of the simulator's clock; the charm's tick is a minute.
BOOT = 30.0
TICK = 60.0


def main(argv: list[str]) -> int:
    """Run the story on the simulator, or with `--garm-bin PATH` on that real GARM."""
    parser = argparse.ArgumentParser(description="A label change, end to end.")
    parser.add_argument(
        "--garm-bin",
        type=pathlib.Path,
        help="a GARM server binary: run the story on it, on this machine, instead of the "
        "simulator (takes a minute or two)",
    )
    garm_bin: pathlib.Path | None = parser.parse_args(argv).garm_bin
    if garm_bin is None:
        return simulated()
    import demo_real  # noqa: PLC0415 - the e2e machinery only for a real GARM

    return demo_real.run(garm_bin)


def simulated() -> int:
    """Run the scenario and print what an operator would see; 0 when it ends as it should."""
    with (
        GarmSim(["openstack-small"], frozen_clock=True, boot_seconds=BOOT) as sim,
        FakeGitHub() as github,
        charm_machine(sim) as state,
    ):
        point_github_at(sim, github)
        demo = Demo(sim, testing.Context(charm.GarmCharm), state)
        print(f"GARM simulator on {sim.url}, clock frozen; the garm charm runs in ops.testing")
        print(f"GitHub is the fake on {github.url}: nothing leaves this machine")
        demo.phase("1. configurator 'small' publishes labels linux,x64")
        demo.hook("install", "creates GARM's secrets; GARM waits for them to read back")
        demo.hook("config-changed", "bootstraps GARM, adds App credentials, org and scale set")
        demo.pass_grace()
        demo.hook("update-status", "converged")
        demo.phase("2. a runner picks up a job")
        (old,) = demo.rows
        runner = sim.start_job(old.name)
        github_lists(github, sim, runner)
        print(f"   runner {runner} of {old.name} runs a job")
        demo.phase("3. operator: juju config small labels=linux,x64,large")
        demo.publish(NEW_LABELS, "replacement created first; the old one keeps serving")
        demo.hook("update-status", "within the hand-over grace: nothing changes")
        demo.pass_grace()
        demo.hook("update-status", "the new one serves: the old one is disabled, min/max 0/0")
        demo.hook("update-status", "the old one drains: its runner still runs the job")
        demo.phase("4. the job finishes")
        sim.finish_job(runner)
        github_drops(github, runner)
        # A disabled set has no listener, so GARM would hear of the job's end only at its
        # 5-minute consolidation; the charm asks GitHub instead (ADR 0015).
        demo.hook("update-status", "the charm asks GitHub: the runner is gone, so is the old set")
        demo.run_until_converged()
        relabelled = demo.summary()
        return relabelled or rolling_refresh(demo)


def rolling_refresh(demo: Demo) -> int:
    """An image change replaces every idle runner, never below min idle; 0 when it did."""
    demo.phase(f"5. operator: juju config small min-idle-runners={REFRESH_MIN_IDLE}")
    demo.republish({"min_idle_runners": REFRESH_MIN_IDLE}, "an in-place update: no replacement")
    demo.sim.advance(TICK)
    demo.run_until_converged()
    demo.phase(f"6. operator: juju config small image={NEW_IMAGE}")
    changed_at = demo.sim.clock.now()
    demo.republish({"image": NEW_IMAGE}, "updated in place; the idle runners are now outdated")
    lowest = demo.idle_runners()
    for _ in range(MAX_HOOKS):
        demo.sim.advance(TICK)
        message = demo.hook("update-status")
        lowest = min(lowest, demo.idle_runners())
        if message == "" and demo.runners_made_before(changed_at) == 0:
            break
    outdated = demo.runners_made_before(changed_at)
    elapsed = demo.sim.clock.now() - changed_at
    if outdated == 0 and lowest >= REFRESH_MIN_IDLE:
        print(
            f"\nOK: image change rolled every idle runner in {elapsed:.0f}s of GARM time; "
            f"idle runners never below {lowest} (min idle {REFRESH_MIN_IDLE})"
        )
        return 0
    print(
        f"\nFAILED: {outdated} runner(s) made before the image change remain; "
        f"idle runners went down to {lowest} (min idle {REFRESH_MIN_IDLE})"
    )
    return 1


def point_github_at(sim: GarmSim, github: FakeGitHub) -> None:
    """GARM's github.com endpoint leads to the fake GitHub, as DNS would point a name at it.

    The charm asks GitHub (at the endpoint's API URL) whether a retired set's busy runner is
    still listed (ADR 0015): on loopback, so the demo resolves no name.
    """
    with sim.state.lock:
        endpoint = sim.state.endpoints["github.com"]
        sim.state.endpoints["github.com"] = dataclasses.replace(
            endpoint, api_base_url=f"{github.url}/api/v3/", base_url=github.url
        )


def github_lists(github: FakeGitHub, sim: GarmSim, runner: str) -> None:
    """GitHub lists the simulator's runner as an agent, as it lists a registered runner."""
    instance = sim.state.instances[runner]
    with github.lock:
        github.runners[instance.agent_id] = {"id": instance.agent_id, "name": runner}


def github_drops(github: FakeGitHub, runner: str) -> None:
    """An ephemeral runner whose job ended leaves GitHub's agents list."""
    with github.lock:
        for agent_id, listed in list(github.runners.items()):
            if listed["name"] == runner:
                del github.runners[agent_id]


@dataclasses.dataclass
class Demo:
    """The charm's state between hooks, and what GARM holds."""

    sim: GarmSim
    ctx: testing.Context[charm.GarmCharm]
    state: testing.State
    hooks: int = 0
    # GARM's scale sets after the last hook.
    rows: list[Row] = dataclasses.field(default_factory=list["Row"])
    start: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        """Times are shown from here."""
        self.start = self.sim.clock.now()

    def phase(self, title: str) -> None:
        """Print a phase heading."""
        print(f"\n{title}")

    def hook(self, name: str, note: str = "") -> str:
        """Run one hook; print the unit's status and GARM's scale sets; return the message."""
        before = {row.name for row in self.rows}
        self.state = self.ctx.run(self._event(name), self.state)
        self.hooks += 1
        status = self.state.unit_status
        elapsed = self.sim.clock.now() - self.start
        print(
            f" t+{elapsed:3.0f}s {name:<16} juju status: {status.name} {status.message}".rstrip()
        )
        self.rows = self.scalesets()
        deleted = sorted(before - {row.name for row in self.rows})
        if deleted:
            note = f"no runner left: {', '.join(deleted)} deleted"
        if note:
            print(f"        -> {note}")
        for row in self.rows:
            print(f"        {row}")
        return status.message

    def _event(self, name: str):
        if name == "install":
            return self.ctx.on.install()
        if name == "config-changed":
            return self.ctx.on.config_changed()
        if name == "relation-changed":
            return self.ctx.on.relation_changed(next(iter(self.state.relations)), remote_unit=0)
        return self.ctx.on.update_status()

    def pass_grace(self) -> None:
        """Move GARM's (and the charm's) clock past the hand-over grace."""
        print(f"   (clock +{PAST_GRACE:.0f}s, past the hand-over grace)")
        self.sim.advance(PAST_GRACE)

    def run_until_converged(self) -> None:
        """Run update-status until the unit is Active with nothing to say."""
        for _ in range(MAX_HOOKS):
            if self.hook("update-status") == "":
                return
        print(f"   no convergence after {MAX_HOOKS} more hooks")

    def publish(self, labels: tuple[str, ...], note: str) -> None:
        """The configurator publishes new labels: relation-changed."""
        relation = next(iter(self.state.relations))
        changed = dataclasses.replace(relation, remote_app_data=databag(labels, self.state))
        self.state = dataclasses.replace(self.state, relations={changed})
        self.hook("relation-changed", note)

    def republish(self, changes: dict[str, object], note: str) -> None:
        """The configurator publishes its scale set with `changes`: relation-changed."""
        relation = next(iter(self.state.relations))
        assert isinstance(relation, testing.Relation)
        data = dict(relation.remote_app_data)
        data["scaleset"] = json.dumps(json.loads(data["scaleset"]) | changes)
        changed = dataclasses.replace(relation, remote_app_data=data)
        self.state = dataclasses.replace(self.state, relations={changed})
        self.hook("relation-changed", note)

    def idle_runners(self) -> int:
        """Runners GitHub could give a job now (idle), over every scale set."""
        return sum(row.runners["idle"] for row in self.scalesets())

    def runners_made_before(self, moment: float) -> int:
        """Runners GARM made before `moment` (the simulator's clock) that are still there."""
        before = datetime.datetime.fromtimestamp(moment, datetime.UTC)
        api = GarmClient(self.sim.url, token=self.sim.token())
        return sum(1 for instance in api.list_instances() if instance.created_at < before)

    def scalesets(self) -> list[Row]:
        """GARM's scale sets, as its API lists them, oldest first; none before first-run."""
        try:
            token = self.sim.token()
        except LookupError:
            return []
        api = GarmClient(self.sim.url, token=token)
        instances = api.list_instances()
        return [
            Row(
                scaleset.name,
                scaleset.enabled,
                sorted(scaleset.normalised_labels),
                (scaleset.min_idle_runners, scaleset.max_runners),
                Counter(i.runner_status for i in instances if i.scale_set_id == scaleset.id),
            )
            for scaleset in sorted(api.list_scalesets(), key=lambda s: s.id)
        ]

    def summary(self) -> int:
        """Print the outcome; 0 when only the new scale set remains, enabled."""
        rows = self.scalesets()
        labels = ",".join(sorted(NEW_LABELS))
        elapsed = self.sim.clock.now() - self.start
        if [(row.enabled, row.labels) for row in rows] == [(True, sorted(NEW_LABELS))]:
            print(
                f"\nOK: label change done in {self.hooks} hooks ({elapsed:.0f}s of GARM time); "
                f"only {rows[0].name} remains, enabled"
            )
            return 0
        print(f"\nFAILED: expected one enabled scale set with labels {labels}; GARM has:")
        for row in rows:
            print(f"        {row}")
        return 1


@contextmanager
def charm_machine(sim: GarmSim) -> Iterator[testing.State]:
    """Replace the machine under the charm; yield the leader's state with `small` related."""
    workload = RecordingWorkload()
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(charm, "Workload", return_value=workload),
        mock.patch.object(charm, "utc_now", side_effect=lambda: sim_now(sim.clock)),
    ):
        password = testing.Secret(
            tracked_content={"password": "demo-openstack-password", "app": "small"}
        )
        key = testing.Secret(tracked_content={"private-key": pkcs1_app_key(), "app": "small"})
        state = testing.State(leader=True, secrets={password, key})
        relation = testing.Relation(
            "garm-configurator",
            remote_app_name="small",
            remote_app_data=databag(OLD_LABELS, state),
        )
        yield dataclasses.replace(
            state,
            resources=resources(pathlib.Path(tmp)),
            # The demo runs every hook itself: no reconcile tick (no systemd timer) here.
            config={
                "port": sim.port,
                "external-url": "https://garm.example.com",
                "reconcile-interval": "0",
            },
            relations={relation},
        )


def databag(labels: tuple[str, ...], state: testing.State) -> dict[str, str]:
    """What configurator `small` publishes: one scale set for org `acme` and its secrets."""
    return small_databag(labels, state)


def resources(directory: pathlib.Path) -> frozenset[testing.Resource]:
    """Both tarballs attached (the workload double never unpacks them)."""
    attached: set[testing.Resource] = set()
    for name, filename in (
        ("garm-binary", "garm-linux-amd64.tgz"),
        ("garm-provider-openstack", "garm-provider-openstack-linux-amd64.tgz"),
    ):
        (directory / filename).write_bytes(b"tarball")
        attached.add(testing.Resource(name=name, path=directory / filename))
    return frozenset(attached)


def sim_now(clock: SimClock) -> datetime.datetime:
    """The charm's clock (`charm.utc_now`) reads the simulator's.

    GARM stamps `created_at` with the simulator's clock and the charm measures the grace with
    its own; reading one clock lets the demo pass the grace by advancing it.
    """
    return datetime.datetime.fromtimestamp(clock.now(), datetime.UTC)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
