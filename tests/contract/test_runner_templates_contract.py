"""Runner templates and `extra_specs` against the GARM simulator over HTTP.

They reach GARM, survive a label change, are updated in place only when their bytes change,
and are deleted after the last scale set that uses them.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from contract.conftest import Garm
from contract.test_scaleset_reconciler_contract import (
    NEW_LABELS,
    OLD_LABELS,
    SETTINGS,
    make_spec,
    sim_now,
)
from garm_api import GarmClient
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import ObjectsOutcome, reconcile_objects
from reconcile.runner_template import (
    TEMPLATE_DESCRIPTION,
    RunnerConfig,
    extra_specs,
    render_template,
    template_name,
)
from reconcile.templates import remove_unused_templates, sync_templates
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec

BASE = (
    Path(__file__).resolve().parents[2]
    / "charms/garm/tests/unit/runner_templates/github_linux-v0.2.1.tmpl"
).read_bytes()
CONFIG = RunnerConfig(
    http_proxy="http://squid.internal:3128",
    dockerhub_mirror="https://mirror.internal",
    pre_job_script="echo ready\n",
)
NAME = template_name("small")


@pytest.fixture
def client(garm: Garm) -> GarmClient:
    """A client of the simulator, which seeds `github_linux` with GARM v0.2.1's text (BASE)."""
    return GarmClient(garm.url, garm.token, connect_timeout=2, read_timeout=5)


def spec_with(config: RunnerConfig, labels: tuple[str, ...] = OLD_LABELS) -> ScalesetSpec:
    """`small` carrying the runner options."""
    return make_spec(
        labels=labels,
        extra_specs=extra_specs(config),
        template_name=template_name("small") if config.needs_template() else None,
    )


def desired(*specs: ScalesetSpec, config: RunnerConfig = CONFIG) -> DesiredState:
    """What the configurators ask for: the specs, and their templates' options."""
    templates = tuple((s.template_name, config) for s in specs if s.template_name is not None)
    return DesiredState(specs=specs, runner_templates=templates)


def pass_(client: GarmClient, garm: Garm, state: DesiredState) -> ObjectsOutcome:
    """One reconcile of every object, at the simulator's time."""
    now = sim_now(garm.sim)
    return reconcile_objects(client, state, now=now, settings=SETTINGS)


def charm_template(garm: Garm):
    """The charm's template in the simulator, or None."""
    return next((t for t in garm.sim.state.templates.values() if t.name == NAME), None)


def test_template_and_extra_specs_reach_garm(garm: Garm, client: GarmClient):
    """Arrange: `small` with a proxy, a mirror and a pre-job script. Act: one pass.

    Assert: the charm's template holds github_linux plus the options, owned by its
    description; the scale set refers to it and carries the base64 pre-install scripts.
    """
    outcome = pass_(client, garm, desired(spec_with(CONFIG)))

    template = charm_template(garm)
    assert outcome.blocked == ""
    assert template is not None
    assert template.data == render_template(BASE.decode(), CONFIG).encode()
    assert template.description == TEMPLATE_DESCRIPTION
    scaleset = client.get_scaleset(garm.sim.scaleset(live_name(spec_with(CONFIG))).id)
    assert scaleset.template_name == NAME
    assert scaleset.extra_specs is not None
    scripts = scaleset.extra_specs["pre_install_scripts"]
    assert isinstance(scripts, dict)
    assert base64.b64decode(str(scripts["01-garm-charm-dockerhub-mirror"])).startswith(b"#!")
    assert scaleset.extra_specs["disable_updates"] is True


def test_unchanged_bytes_are_not_written_again(garm: Garm, client: GarmClient):
    """Arrange: a converged scale set with its template. Act: another pass.

    Assert: no template written (no POST or PUT to /templates).
    """
    pass_(client, garm, desired(spec_with(CONFIG)))
    garm.sim.reset_log()

    pass_(client, garm, desired(spec_with(CONFIG)))

    assert garm.sim.count("POST", "/api/v1/templates") == 0
    assert garm.sim.count("PUT", "/api/v1/templates/{id}") == 0


def test_an_option_change_updates_the_template_in_place(garm: Garm, client: GarmClient):
    """Arrange: a converged scale set. Act: change the pre-job script; a pass.

    Assert: same template id with the new bytes; the same scale set, not a replacement.
    """
    pass_(client, garm, desired(spec_with(CONFIG)))
    before = charm_template(garm)
    assert before is not None
    scaleset_id = garm.sim.scaleset(live_name(spec_with(CONFIG))).id
    changed = RunnerConfig(
        http_proxy=CONFIG.http_proxy,
        dockerhub_mirror=CONFIG.dockerhub_mirror,
        pre_job_script="echo changed\n",
    )

    pass_(client, garm, desired(spec_with(changed), config=changed))

    after = charm_template(garm)
    assert after is not None
    assert after.id == before.id
    assert after.data == render_template(BASE.decode(), changed).encode()
    assert {s.id for s in garm.sim.state.scalesets.values()} == {scaleset_id}


def test_a_label_change_keeps_template_and_extra_specs(garm: Garm, client: GarmClient):
    """Arrange: a converged scale set with runner options. Act: change labels; passes.

    Assert: the new generation refers to the same template and has the same extra_specs; the
    template survives while the old generation drains.
    """
    pass_(client, garm, desired(spec_with(CONFIG)))
    old = live_name(spec_with(CONFIG))
    garm.sim.start_job(old)
    new_spec = spec_with(CONFIG, labels=NEW_LABELS)

    for _ in range(3):
        pass_(client, garm, desired(new_spec))
        garm.sim.advance(61)

    new = client.get_scaleset(garm.sim.scaleset(live_name(new_spec)).id)
    assert new.template_name == NAME
    assert new.extra_specs == extra_specs(CONFIG)
    assert old in {s.name for s in garm.sim.state.scalesets.values()}
    assert charm_template(garm) is not None


def test_template_is_deleted_after_its_last_scale_set(garm: Garm, client: GarmClient):
    """Arrange: a scale set with a job running, then its configurator gone.

    Act: passes while the job runs; finish the job; passes.
    Assert: the template stays while the draining scale set uses it, and is deleted after.
    """
    pass_(client, garm, desired(spec_with(CONFIG)))
    runner = garm.sim.start_job(live_name(spec_with(CONFIG)))

    for _ in range(3):
        pass_(client, garm, DesiredState())
        garm.sim.advance(61)
    kept = charm_template(garm)
    garm.sim.finish_job(runner)
    garm.sim.advance(300)  # a disabled set: GARM hears of it at its 5-minute consolidation
    for _ in range(3):
        garm.sim.advance(61)
        pass_(client, garm, DesiredState())

    assert kept is not None
    assert garm.sim.state.scalesets == {}
    assert charm_template(garm) is None


def test_clearing_the_options_returns_to_github_linux_and_deletes_the_template(
    garm: Garm, client: GarmClient
):
    """Arrange: a scale set with runner options. Act: clear them; passes a minute apart.

    Assert: the same scale set now uses github_linux with no extra_specs; template gone.
    """
    pass_(client, garm, desired(spec_with(CONFIG)))
    scaleset_id = garm.sim.scaleset(live_name(spec_with(CONFIG))).id

    for _ in range(3):
        garm.sim.advance(61)
        pass_(client, garm, desired(make_spec()))

    scaleset = client.get_scaleset(scaleset_id)
    assert scaleset.template_name == "github_linux"
    assert charm_template(garm) is None


def test_hand_made_templates_are_never_touched(garm: Garm, client: GarmClient):
    """Arrange: an operator's template under the charm's name, and another of their own.

    Act: sync the charm's options, then remove unused templates.
    Assert: the name clash is reported, never overwritten; nothing of theirs is deleted.
    """
    garm.sim.state.add_template(NAME, "mine", "linux", "github", "admin", b"#!/bin/bash\n")
    garm.sim.state.add_template("garm-charm-other", "mine", "linux", "github", "admin")

    synced = sync_templates(client, {NAME: CONFIG})
    removed = remove_unused_templates(client, frozenset())

    assert "not made by the charm" in synced.problems[NAME]
    assert charm_template(garm).data == b"#!/bin/bash\n"  # type: ignore[union-attr]
    assert removed.deleted == ()
    assert len([t for t in garm.sim.state.templates.values() if t.owner_id == "admin"]) == 2


def test_a_missing_system_template_is_reported(garm: Garm, client: GarmClient):
    """Arrange: an admin deleted github_linux. Act: sync. Assert: a problem naming the fix."""
    system = next(t for t in garm.sim.state.templates.values() if t.name == "github_linux")
    client.delete_template(system.id)

    synced = sync_templates(client, {NAME: CONFIG})

    assert "garm-cli template restore" in synced.problems[NAME]
