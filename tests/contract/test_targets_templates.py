"""Runner templates and `extra_specs` over the four targets, driven by the charm's own code.

`template_reconciler` and `scaleset_reconciler` (through `garm_objects.reconcile_objects` and
`garm_api.GarmClient`) run against the simulator and the real binaries, as v0.2.1 and newer:
the template is made from the target's own `github_linux`, the scale set refers to it,
`extra_specs` read back exactly, a change of bytes updates the template in place, a label
change keeps it for both generations, and it goes after the last scale set that uses it.

Scale sets here have `min_idle_runners: 0`: nothing needs a runner, so a real target takes a
few seconds. The reconciler's clock is the simulator's, or for a real GARM a virtual one a
minute further on at each pass (the hand-over grace is measured on it, not on GARM's).
"""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

import pytest

from contract.conftest import Target, scaleset_body
from contract.test_scaleset_reconciler_contract import (
    NEW_LABELS,
    OLD_LABELS,
    SETTINGS,
    make_spec,
    sim_now,
)
from garm_api import GarmBadRequest, GarmClient, Template
from reconcile.desired_state import DesiredState
from reconcile.garm_objects import ObjectsOutcome, reconcile_objects
from reconcile.runner_template import (
    SYSTEM_TEMPLATE,
    TEMPLATE_DESCRIPTION,
    RunnerConfig,
    extra_specs,
    pre_install_scripts,
    render_template,
    template_name,
)
from reconcile.templates import remove_unused_templates
from relations.configurators import RUNNER_EXTRA_SPECS
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.spec import ScalesetSpec

GOLDEN = Path(__file__).resolve().parents[2] / "charms/garm/tests/unit/runner_templates"
# The golden `github_linux` of each GARM version (the newer build is commit afda4e76).
GOLDEN_FILES = {"v0.2.1": "github_linux-v0.2.1.tmpl", "newer": "github_linux-afda4e76.tmpl"}
CONFIG = RunnerConfig(
    http_proxy="http://squid.internal:3128",
    dockerhub_mirror="https://mirror.internal",
    pre_job_script="echo ready\n",
)
NAME = template_name("small")
PASS_INTERVAL = datetime.timedelta(seconds=61)
# What both binaries answer to deleting a template a scale set refers to.
IN_USE = (
    "failed to delete template: failed to delete template: "
    "cannot delete template while in use by pools or scale sets"
)
# ... and to a scale-set create or update naming a template id that does not exist.
UNKNOWN_TEMPLATE = (
    "failed to find suitable template: failed to get template: failed to get template: not found"
)


def github_linux(version: str) -> bytes:
    """The `github_linux` GARM seeds at that version, as the golden file holds it."""
    return (GOLDEN / GOLDEN_FILES[version]).read_bytes()


def spec_with(config: RunnerConfig = CONFIG, labels: tuple[str, ...] = OLD_LABELS) -> ScalesetSpec:
    """`small` as the configurator relation gives it: no idle runner, the options' specs."""
    return make_spec(
        labels=labels,
        min_idle_runners=0,
        extra_specs={**RUNNER_EXTRA_SPECS, **extra_specs(config)},
        template_name=NAME,
    )


def desired(spec: ScalesetSpec, config: RunnerConfig = CONFIG) -> DesiredState:
    """What the configurators ask for: the spec and its template's options."""
    return DesiredState(specs=(spec,), runner_templates=((NAME, config),))


class Charm:
    """The charm's object passes against one target, a minute apart on the reconciler's clock."""

    def __init__(self, target: Target) -> None:
        """Log in a `GarmClient`; start the clock at the simulator's time, or now for real."""
        assert target.token is not None
        self.target = target
        self.client = GarmClient(target.url, target.token, connect_timeout=2, read_timeout=10)
        self.now = (
            sim_now(target.sim) if target.sim is not None else datetime.datetime.now(datetime.UTC)
        )

    def pass_(self, state: DesiredState) -> ObjectsOutcome:
        """One reconcile of every object; then the clock moves on a minute."""
        outcome = reconcile_objects(self.client, state, now=self.now, settings=SETTINGS)
        self.now += PASS_INTERVAL
        if self.target.sim is not None:
            self.target.sim.advance(PASS_INTERVAL.total_seconds())
        return outcome

    def converge(self, state: DesiredState) -> ObjectsOutcome:
        """Passes until the scale-set pass has converged (at most 6)."""
        outcome = self.pass_(state)
        for _ in range(6):
            if outcome.report.converged:
                break
            outcome = self.pass_(state)
        assert outcome.report.converged, outcome
        assert outcome.blocked == "", outcome.blocked
        return outcome

    def template(self) -> Template | None:
        """The charm's template with its body, or None."""
        listed = [t for t in self.client.list_templates() if t.name == NAME]
        return self.client.get_template(listed[0].id) if listed else None

    def template_updated_at(self, template_id: int) -> str:
        """GARM's `updated_at` of a template (moved by every write)."""
        return self.target.call("GET", f"/templates/{template_id}").json["updated_at"]

    def scaleset_ids(self) -> dict[str, int]:
        """Every scale set's id by name."""
        return {s.name: s.id for s in self.client.list_scalesets()}


@pytest.fixture
def charm(target: Target) -> Charm:
    """The charm's passes against a bootstrapped target."""
    return Charm(target)


def test_template_and_extra_specs_reach_garm(target: Target, charm: Charm):
    """Arrange: `small` with a proxy, a mirror and a pre-job script. Act: converge.

    Assert: the template is the target's own github_linux plus the options, owned by its
    description; `GET /scalesets/{id}` names it (`template_id`, `template_name`) and reads
    back `extra_specs` exactly: config drive, base64 pre-install scripts, no updates. Lists
    carry the same `extra_specs` and `template_id` (not `template_name`).
    """
    base = charm.client.get_template(
        next(t.id for t in charm.client.list_templates() if t.name == SYSTEM_TEMPLATE)
    )

    charm.converge(desired(spec_with()))

    template = charm.template()
    scaleset_id = charm.scaleset_ids()[live_name(spec_with())]
    scaleset = charm.client.get_scaleset(scaleset_id)
    listed = next(s for s in target.call("GET", "/scalesets").json if s["id"] == scaleset_id)
    assert base.owner_id == "system"
    assert base.data == github_linux(target.version)
    assert template is not None
    assert template.data == render_template(github_linux(target.version).decode(), CONFIG).encode()
    assert (template.description, template.owner_id) == (TEMPLATE_DESCRIPTION, "admin")
    assert (scaleset.template_id, scaleset.template_name) == (template.id, NAME)
    assert scaleset.extra_specs == {
        "use_config_drive": True,
        "pre_install_scripts": {
            name: base64.b64encode(body.encode()).decode()
            for name, body in pre_install_scripts(CONFIG).items()
        },
        "disable_updates": True,
    }
    assert (listed["extra_specs"], listed["template_id"]) == (scaleset.extra_specs, template.id)
    assert "template_name" not in listed


def test_changed_bytes_update_the_template_in_place(charm: Charm):
    """Arrange: a converged scale set with its template.

    Act: a pass with the same options; then one with another pre-job script.
    Assert: the same options write nothing (`updated_at` unmoved); new ones rewrite the same
    template with the new bytes, and the scale set is the same one, still referring to it.
    """
    charm.converge(desired(spec_with()))
    before = charm.template()
    assert before is not None
    stamp = charm.template_updated_at(before.id)
    ids = charm.scaleset_ids()
    changed = RunnerConfig(
        http_proxy=CONFIG.http_proxy,
        dockerhub_mirror=CONFIG.dockerhub_mirror,
        pre_job_script="echo changed\n",
    )

    charm.pass_(desired(spec_with()))
    unmoved = charm.template_updated_at(before.id)
    charm.converge(desired(spec_with(changed), changed))

    after = charm.template()
    assert unmoved == stamp
    assert after is not None
    assert after.id == before.id
    assert (
        after.data
        == render_template(github_linux(charm.target.version).decode(), changed).encode()
    )
    assert charm.template_updated_at(after.id) != stamp
    assert charm.scaleset_ids() == ids
    assert charm.client.get_scaleset(ids[live_name(spec_with())]).template_id == after.id


def test_a_label_change_keeps_template_and_extra_specs(charm: Charm):
    """Arrange: a converged scale set with runner options. Act: change its labels; converge.

    Assert: while the old generation hands over, both generations refer to the same template
    and an unwanted-template sweep keeps it; after, the new generation alone has it, with the
    same `extra_specs`, and the template is the same one.
    """
    charm.converge(desired(spec_with()))
    template = charm.template()
    assert template is not None
    old, new = live_name(spec_with()), live_name(spec_with(labels=NEW_LABELS))

    charm.pass_(desired(spec_with(labels=NEW_LABELS)))
    both = {name: charm.client.get_scaleset(i) for name, i in charm.scaleset_ids().items()}
    swept = remove_unused_templates(charm.client, frozenset())
    charm.converge(desired(spec_with(labels=NEW_LABELS)))

    assert {name: s.template_id for name, s in both.items()} == {
        old: template.id,
        new: template.id,
    }
    assert (both[old].extra_specs, both[new].extra_specs) == (
        both[new].extra_specs,
        {**RUNNER_EXTRA_SPECS, **extra_specs(CONFIG)},
    )
    assert (swept.deleted, swept.in_use) == ((), (NAME,))
    assert set(charm.scaleset_ids()) == {new}
    scaleset = charm.client.get_scaleset(charm.scaleset_ids()[new])
    assert (scaleset.template_id, scaleset.template_name) == (template.id, NAME)
    assert scaleset.extra_specs == {**RUNNER_EXTRA_SPECS, **extra_specs(CONFIG)}
    assert charm.template() == template


def test_template_is_deleted_after_its_last_scale_set(charm: Charm):
    """Arrange: a converged scale set with its template.

    Act: delete the template while the scale set exists (GARM and the charm's sweep); then
    the configurator goes: passes until converged.
    Assert: GARM refuses the delete (400, in use) and the sweep keeps it; once the scale set
    is gone the template is deleted, and github_linux is untouched.
    """
    charm.converge(desired(spec_with()))
    template = charm.template()
    assert template is not None

    with pytest.raises(GarmBadRequest) as refused:
        charm.client.delete_template(template.id)
    swept = remove_unused_templates(charm.client, frozenset())
    charm.converge(DesiredState())

    assert (refused.value.status, refused.value.error, refused.value.details) == (
        400,
        "Bad Request",
        IN_USE,
    )
    assert (swept.deleted, swept.in_use) == ((), (NAME,))
    assert charm.scaleset_ids() == {}
    assert charm.template() is None
    assert SYSTEM_TEMPLATE in {t.name for t in charm.client.list_templates()}


def test_template_refusals(target: Target):
    """Arrange: a bootstrapped GARM with one scale set on github_linux.

    Act: create a template twice, one with empty data; point scale sets at an unknown
    template id (create and update); delete an unknown template id.
    Assert: GARM's exact answers (409, 400, 404, 404, 200); the system templates' names and
    descriptions, and an empty description listed as "".
    """
    data = base64.b64encode(b"#!/bin/bash\n").decode()
    template = {"name": "mine", "os_type": "linux", "forge_type": "github", "data": data}
    scaleset = target.create_scaleset("on-github-linux")

    first = target.call("POST", "/templates", template)
    duplicate = target.call("POST", "/templates", template)
    empty = target.call("POST", "/templates", template | {"name": "empty", "data": ""})
    created = target.call(
        "POST", f"/repositories/{target.repo_id}/scalesets", scaleset_body("x", template_id=999)
    )
    updated = target.call("PUT", f"/scalesets/{scaleset['id']}", {"template_id": 999})
    deleted = target.call("DELETE", "/templates/999")
    listed = [(t["name"], t["description"]) for t in target.call("GET", "/templates").json]

    assert first.status == 200, first.raw
    assert (duplicate.status, duplicate.json) == (
        409,
        {
            "error": "Conflict",
            "details": "failed to create template: "
            "a template name already exists with the specified name",
        },
    )
    assert (empty.status, empty.json) == (
        400,
        {"error": "Bad Request", "details": 'invalid create params "template data is empty"'},
    )
    unknown = {"error": "Not Found", "details": UNKNOWN_TEMPLATE}
    assert (created.status, created.json) == (404, unknown)
    assert (updated.status, updated.json) == (404, unknown)
    assert (deleted.status, deleted.raw) == (200, "")
    assert listed[4] == ("mine", "")
    assert listed[:4] == [
        ("github_windows", "Default Windows runner install template for GitHub"),
        ("github_linux", "Default Linux runner install template for GitHub"),
        ("gitea_linux", "Default Linux runner install template for Gitea"),
        ("gitea_windows", "Default Windows runner install template for Gitea"),
    ]
