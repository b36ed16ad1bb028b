"""No value of a numeric option crashes a hook (issue #31, "no hostile value"; ADR 0034).

Every option the configurator reads a number from is fed arbitrary Unicode, biased to the
digits `str.isdigit()` and `int()` disagree on, on a leader that has published its scale set.
The property: config-changed ends without an uncaught exception. Options of Juju type `int`
only ever carry integers, so those get arbitrary integers. The configurator has no actions.
"""

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ops import testing

from charm import GarmConfiguratorCharm

CHARMCRAFT = Path(__file__).resolve().parents[2] / "charmcraft.yaml"
_DIGITS = st.characters(categories=("N",))  # decimal, letterlike and other digits
_NUMBER_PARTS = st.sampled_from(list("0123456789:-+._ =;,[]/%x"))
NUMBERISH = st.one_of(
    st.text(alphabet=st.one_of(_DIGITS, _NUMBER_PARTS), max_size=12),
    st.text(max_size=24),
    st.builds("Mon 08:00-18:00 UTC={}".format, st.text(alphabet=_DIGITS, max_size=3)),
    st.builds("Mon {}-18:00 UTC=1".format, st.text(max_size=5)),
    st.builds("http://proxy.example:{}".format, st.text(alphabet=_DIGITS, max_size=5)),
)
_RUN = settings(
    max_examples=30,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)

# Options of Juju type string that carry a number (ports, counts, times, URL ports, addresses).
TEXT_OPTIONS = (
    "aproxy-redirect-ports",
    "aproxy-exclude-addresses",
    "min-idle-schedule",
    "openstack-auth-url",
    "runner-http-proxy",
    "dockerhub-mirror",
    "otel-collector-endpoint",
)
INT_OPTIONS = ("min-idle-runners", "max-runners", "github-app-id", "github-app-installation-id")
# Options that hold no number: names, labels, scripts, secret ids.
NOT_NUMERIC = {
    "name",
    "labels",
    "flavor",
    "image",
    "os-arch",
    "runner-group",
    "org",
    "repo",
    "openstack-username",
    "openstack-password",
    "openstack-project-name",
    "openstack-user-domain-name",
    "openstack-project-domain-name",
    "openstack-region-name",
    "openstack-network",
    "github-app-private-key",
    "pre-job-script",
    "pre-install-scripts",
}


def test_every_option_is_fed():
    """Arrange: the options charmcraft.yaml declares. Act: compare with the fed ones.

    Assert: each option is fed (as text or as an integer) or named as holding no number.
    """
    declared = set(yaml.safe_load(CHARMCRAFT.read_text())["config"]["options"])

    assert {*TEXT_OPTIONS, *INT_OPTIONS, *NOT_NUMERIC} == declared


def _published(config: dict[str, Any], user_secrets: dict[str, dict[str, str]]) -> testing.State:
    secrets = [
        testing.Secret(content, id=secret_id) for secret_id, content in user_secrets.items()
    ]
    return testing.State(
        leader=True,
        config={**config, "image": "noble-x64"},
        secrets=secrets,
        relations=[testing.Relation("garm-configurator", remote_app_name="garm")],
    )


@pytest.mark.parametrize("option", TEXT_OPTIONS)
@_RUN
@given(value=NUMBERISH)
@example(value="\u00b2")  # superscript two: isdigit() true, int() raises
@example(value="Mon 08:00-18:00 UTC=\u00b2")
@example(value="Mon \u0660\u0668:00-18:00 UTC=1")  # Arabic-Indic 08
@example(value="80,\u00b2,\u0668\u0660")
@example(value="http://proxy.example:\u00b2")
def test_no_text_option_crashes_a_hook(
    option: str,
    value: str,
    valid_config: dict[str, Any],
    user_secrets: dict[str, dict[str, str]],
):
    """Arrange: a leader with a valid config. Act: config-changed with the option's value.

    Assert: the hook ends without an uncaught exception.
    """
    ctx = testing.Context(GarmConfiguratorCharm)
    state = _published({**valid_config, option: value}, user_secrets)

    ctx.run(ctx.on.config_changed(), state)


@pytest.mark.parametrize("option", INT_OPTIONS)
@_RUN
@given(value=st.integers())
def test_no_integer_option_crashes_a_hook(
    option: str,
    value: int,
    valid_config: dict[str, Any],
    user_secrets: dict[str, dict[str, str]],
):
    """Arrange: a leader with a valid config. Act: config-changed with any integer.

    Assert: the hook ends without an uncaught exception.
    """
    ctx = testing.Context(GarmConfiguratorCharm)
    state = _published({**valid_config, option: value}, user_secrets)

    ctx.run(ctx.on.config_changed(), state)
