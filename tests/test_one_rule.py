"""One rule for names and labels: whatever the configurator accepts, the garm charm accepts.

The configurator's config loader and the garm charm's reading of the relation and planning of
the scale set are chained here: generated `juju config` values that the configurator accepts
must come out of the garm side as a spec GARM is asked to create, with the same labels.
"""

import importlib.util
import pathlib
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charms.garm_configurator.v0 import garm_configurator as interface
from garm_api.models import normalise_labels
from relations.configurators import desired_from
from scaleset_reconciler import ReconcileSettings
from scaleset_reconciler.naming import live_name
from scaleset_reconciler.prepare import validate_spec

CONFIGURATOR_SRC = pathlib.Path(__file__).resolve().parents[1] / "charms/garm-configurator/src"
PASSWORD_ID = "secret:d1n3kb7mp25c78a8ob30"
KEY_ID = "secret:d1n3kb7mp25c78a8ob3g"


def _configurator_config() -> ModuleType:
    # The configurator's module, loaded by path: its charm.py would clash with garm's. It
    # imports the relation library, which resolves to garm's byte-identical copy.
    spec = importlib.util.spec_from_file_location(
        "configurator_config", CONFIGURATOR_SRC / "configurator_config.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("configurator_config", module)
    spec.loader.exec_module(module)
    return module


config_module = _configurator_config()

# Mostly the alphabets the rules allow, at and beyond their lengths and with dashes at the ends,
# plus characters each side refuses, so that accepted and refused input are both explored.
names = st.one_of(
    st.from_regex(r"[a-z][a-z0-9-]{0,39}", fullmatch=True),
    st.from_regex(r"[a-z0-9-][a-z0-9-]{0,40}-?", fullmatch=True),
    st.text(st.sampled_from("az09-_A. "), max_size=44),
)
_valid_label = st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True)
labels = st.one_of(
    st.lists(_valid_label, min_size=1, max_size=32),
    st.lists(
        st.one_of(_valid_label, st.text(st.sampled_from("aX0._- &/\u00e9"), max_size=66)),
        max_size=34,
    ),
)
groups = st.one_of(
    st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True),
    st.text(st.sampled_from("Df0._- &"), max_size=66),
)


def _read_secret(_: str, key: str) -> str:
    return {"password": "pw", "private-key": _PEM}[key]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, label_list=labels, group=groups, org=st.sampled_from(["acme", "a-b", "A1"]))
def test_configurator_valid_input_is_garm_valid(
    name: str, label_list: list[str], group: str, org: str
):
    """Arrange: generated name, labels and runner group.

    Act: load them as the configurator does; if it accepts them, publish, read the databag as
    the garm charm does and plan the scale set.
    Assert: the garm side reads it, finds nothing to refuse, names the scale set within
    GARM's limits and keeps every label.
    """
    raw = _config(name=name, labels=",".join(label_list), group=group, org=org)
    try:
        config = config_module.load_config(raw, _read_secret)
    except config_module.InvalidConfigError:
        return

    databag = config.to_relation_data(
        image="noble", password_secret_id=PASSWORD_ID, private_key_secret_id=KEY_ID
    ).to_databag()
    data = interface.parse_app_data(databag)
    secrets = interface.ConfiguratorSecrets(openstack_password="pw", github_app_private_key=_PEM)
    spec, _, _ = desired_from("configurator", data, secrets)

    assert validate_spec(spec, ReconcileSettings()) == []
    assert len(live_name(spec)) <= ReconcileSettings().name_budget
    assert len(normalise_labels(spec.labels)) == len(config.scaleset.labels)


def test_a_name_ending_in_a_dash_is_refused_by_the_configurator():
    """Arrange: a name the garm charm cannot extend with a generation suffix. Act: load.

    Assert: the configurator refuses it, naming the rule, instead of the garm charm later.
    """
    raw = _config(name="small-", labels="noble", group="Default", org="acme")

    with pytest.raises(config_module.InvalidConfigError) as caught:
        config_module.load_config(raw, _read_secret)

    assert "config 'name' is invalid" in str(caught.value)
    assert "not ending with '-'" in str(caught.value)


def _config(*, name: str, labels: str, group: str, org: str) -> dict[str, Any]:
    return {
        "name": name,
        "labels": labels,
        "flavor": "m1.small",
        "image": "noble",
        "runner-group": group,
        "org": org,
        "openstack-auth-url": "https://keystone.example:5000/v3",
        "openstack-username": "runner-bot",
        "openstack-password": PASSWORD_ID,
        "openstack-project-name": "runners",
        "openstack-user-domain-name": "Default",
        "openstack-project-domain-name": "Default",
        "openstack-network": "runners-net",
        "github-app-id": 1,
        "github-app-installation-id": 2,
        "github-app-private-key": KEY_ID,
    }


_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n" * 2
    + "-----END RSA PRIVATE KEY-----\n"
)
