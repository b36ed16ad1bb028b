"""Properties of relation trust and naming: the relation library, the charm and GARM agree.

Hypothesis draws configurator applications whose names are prefixes, extensions and case
variants of each other (`garm-config`, `garm-config-2`, `Garm-Config` as a forged claim), with
mixed-case GitHub entities, non-default OpenStack domains and `min_idle_runners` anywhere from
0 to `max_runners`. The charm reads them through `relations.configurators.read_configurators`
(the library parses, the charm builds specs): a relation's secrets are used only when both name
exactly its application; a forged one blocks only its own relation; every publication the
library accepts makes a spec the charm's own checks (GARM's rules) accept, a provider of its own,
and a clouds.yaml carrying its domains as given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, ClassVar

import ops
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ops import testing

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import pkcs1_app_key
from reconcile.desired_state import DesiredState
from relations.configurators import provider_name, read_configurators
from scaleset_reconciler import ReconcileSettings
from scaleset_reconciler.needs import entity_key
from scaleset_reconciler.prepare import validate_spec
from unit.walks.hypothesis_budget import SHRINK_SECONDS, shrinking_bounded
from workload.rendering import render_clouds_yaml

ENDPOINT = "garm-configurator"
META: dict[str, Any] = {
    "name": "garm",
    "requires": {ENDPOINT: {"interface": "garm_configurator"}},
}
APP_KEY = pkcs1_app_key()
PASSWORD = "openstack-Pa55word-of-the-cloud"
# Each example runs one hook; bounded so the default run stays within seconds.
PROPERTY = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _bounded_shrinking() -> Iterator[None]:
    """A failure is reported within a minute, not after hypothesis's five of shrinking."""
    with shrinking_bounded(SHRINK_SECONDS):
        yield


class _Reader(ops.CharmBase):
    """A charm whose only job is the garm charm's read of its configurator relations."""

    read: ClassVar[list[DesiredState]] = []

    def __init__(self, framework: ops.Framework) -> None:
        super().__init__(framework)
        framework.observe(self.on.update_status, self._read)

    def _read(self, _: ops.EventBase) -> None:
        _Reader.read.append(read_configurators(self.model, self.model.relations[ENDPOINT]))


def read(relations: list[testing.Relation], secrets: list[testing.Secret]) -> DesiredState:
    """What the garm charm reads from `relations` in one hook, as the leader."""
    _Reader.read.clear()
    context = testing.Context(_Reader, meta=META)
    context.run(
        context.on.update_status(),
        testing.State(leader=True, relations=relations, secrets=secrets),
    )
    (desired,) = _Reader.read
    return desired


@dataclasses.dataclass(frozen=True)
class Publication:
    """What one configurator application publishes, and whom its secrets claim as publisher."""

    app: str
    claimed: tuple[str, str]  # the password's and the private key's `app` field
    fields: dict[str, Any]

    def relation_and_secrets(self) -> tuple[testing.Relation, list[testing.Secret]]:
        """Its relation, naming its two secrets by id."""
        password = testing.Secret(tracked_content={"password": PASSWORD, "app": self.claimed[0]})
        key = testing.Secret(tracked_content={"private-key": APP_KEY, "app": self.claimed[1]})
        data = dict(self.fields)
        data["openstack"] = {**data["openstack"], "password_secret_id": password.id}
        data["github_app"] = {**data["github_app"], "private_key_secret_id": key.id}
        databag = interface.GarmConfiguratorData.model_validate(data).to_databag()
        relation = testing.Relation(ENDPOINT, remote_app_name=self.app, remote_app_data=databag)
        return relation, [password, key]


_BASE = st.from_regex(r"[a-z][a-z0-9]{1,7}(-[a-z][a-z0-9]{0,5})?", fullmatch=True)
_OWNER = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9]|-(?=[A-Za-z0-9])){0,14}", fullmatch=True)
_REPO = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,19}", fullmatch=True)
_DOMAIN = st.one_of(
    st.sampled_from(["Default", "default", "LDAP_Users", "Corp Domain", "ドメイン", "ad.example"]),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,20}[A-Za-z0-9]", fullmatch=True),
)


def related_names(base: str) -> list[str]:
    """Application names that are prefixes or extensions of each other."""
    return [
        base,
        f"{base}-2",
        f"{base}-config",
        f"{base}x",
        *([base[:-1]] if len(base) > 2 else []),
    ]


def forgeries(app: str, others: list[str]) -> list[str]:
    """What a secret may claim instead of `app`: near misses and the other applications."""
    near = [app.upper(), app.capitalize(), f"{app}-2", app[:-1], f"{app} ", f" {app}", ""]
    return [claim for claim in [*near, *others] if claim != app]


@st.composite
def scaleset_fields(draw: st.DrawFn, index: int) -> dict[str, Any]:
    """A publication the library accepts: mixed-case entity, any domains, 0 <= min <= max."""
    max_runners = draw(st.integers(1, 10))
    kind = draw(st.sampled_from(["org", "repo"]))
    entity: dict[str, Any] = {"kind": kind, "owner": draw(_OWNER)}
    if kind == "repo":
        entity["repo"] = draw(_REPO.filter(lambda name: name not in {".", ".."}))
    return {
        "scaleset": {
            "name": f"set{index}",
            "labels": ("linux", "x64"),
            "flavor": "m1.small",
            "image": "ubuntu-24.04",
            "os_arch": "amd64",
            "min_idle_runners": draw(st.integers(0, max_runners)),
            "max_runners": max_runners,
            "runner_group": "Default",
            "entity": entity,
        },
        "openstack": {
            "auth_url": "https://keystone.example.com:5000/v3",
            "username": "runners",
            "project_name": "ci",
            "user_domain_name": draw(_DOMAIN),
            "project_domain_name": draw(_DOMAIN),
            "network": "runners-net",
        },
        "github_app": {"app_id": 123, "installation_id": 456},
    }


@st.composite
def publications(draw: st.DrawFn) -> list[Publication]:
    """Two or three related applications with near names; each secret honest or forged."""
    names = draw(
        st.lists(st.sampled_from(related_names(draw(_BASE))), min_size=2, max_size=3, unique=True)
    )
    drawn: list[Publication] = []
    for index, app in enumerate(names):
        others = [name for name in names if name != app]
        claims = st.one_of(st.just(app), st.sampled_from(forgeries(app, others)))
        claimed = (draw(claims), draw(claims))
        drawn.append(Publication(app, claimed, draw(scaleset_fields(index))))
    return drawn


@PROPERTY
@given(publications())
def test_secrets_are_used_only_when_they_name_exactly_their_publisher(
    published: list[Publication],
):
    """Arrange: near-named configurators, each secret naming its publisher or a near miss.

    Act: the charm reads the relations. Assert: exactly the honest applications give a spec and
    a provider named after them; each forged one is a problem naming its application; none
    blocks another.
    """
    relations, secrets = [], []
    for publication in published:
        relation, granted = publication.relation_and_secrets()
        relations.append(relation)
        secrets.extend(granted)

    desired = read(relations, secrets)

    honest = {p.app for p in published if p.claimed == (p.app, p.app)}
    assert {provider.name for provider in desired.providers} == {provider_name(a) for a in honest}
    assert {spec.provider_name for spec in desired.specs} == {provider_name(a) for a in honest}
    forged = [p.app for p in published if p.app not in honest]
    assert len(desired.problems) == len(forged)
    for app in forged:
        (problem,) = [p for p in desired.problems if f"({app}): secret" in p]
        assert problem.endswith(f"does not name {app}: refused")
        assert PASSWORD not in problem


@PROPERTY
@given(publications())
def test_what_the_library_accepts_the_charm_and_garm_accept(published: list[Publication]):
    """Arrange: honest near-named configurators: mixed-case entities, any domains, any min.

    Act: the charm reads them. Assert: one spec each that the charm's GARM rules accept, with
    the entity's spelling, min/max and domains as published; distinct providers; clouds.yaml
    carries the domains unchanged.
    """
    relations, secrets = [], []
    for publication in published:
        honest = dataclasses.replace(publication, claimed=(publication.app, publication.app))
        relation, granted = honest.relation_and_secrets()
        relations.append(relation)
        secrets.extend(granted)

    desired = read(relations, secrets)

    assert desired.problems == ()
    assert len({provider.name for provider in desired.providers}) == len(published)
    by_provider = {provider.name: provider for provider in desired.providers}
    specs = {spec.provider_name: spec for spec in desired.specs}
    for publication in published:
        name = provider_name(publication.app)
        spec, provider = specs[name], by_provider[name]
        scaleset, openstack = publication.fields["scaleset"], publication.fields["openstack"]
        entity = scaleset["entity"]
        path = entity["owner"] + (f"/{entity['repo']}" if "repo" in entity else "")
        assert validate_spec(spec, ReconcileSettings()) == []
        assert spec.entity.name == path
        assert entity_key(spec.entity.kind, spec.entity.name)[1] == path.lower()
        assert (spec.min_idle_runners, spec.max_runners) == (
            scaleset["min_idle_runners"],
            scaleset["max_runners"],
        )
        clouds = yaml.safe_load(render_clouds_yaml(provider))["clouds"][name]["auth"]
        assert clouds["user_domain_name"] == openstack["user_domain_name"]
        assert clouds["project_domain_name"] == openstack["project_domain_name"]
