"""No value of a numeric field crashes a hook or an action (issue #31, "no hostile value").

Every field garm reads a number from (its config options, the debug-ssh, database and
garm-configurator relation fields, the times and the kept relay in the peer relation's
application data) and every action parameter is fed arbitrary Unicode, with a
bias to the digits `str.isdigit()` and `int()` disagree on ("²" is a digit to one and not to
the other, "٣" is a digit to both, neither is ASCII). The unit serves two scale sets from the
simulator, so an accepted value runs the whole reconcile. The property: the hook or action ends
without an uncaught exception (a refusal is fine, a crash is not); an option of Juju type `int`
only ever carries an integer, so those get arbitrary integers. The workload is the recording
double, so the backup actions' names reach the charm's handlers, not `workload.backup`'s own
name check (a regex of letters, digits, '.', '_' and '-'; no number is read from a name).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
from typing import Any

import pytest
import test_bad_values
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ops import testing
from test_bad_values import CHARMCRAFT, RELAY, Serving

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.database_publication import database_relation

# The bad-value table's fixtures, shared rather than copied.
app_key = test_bad_values.app_key
sim = test_bad_values.sim
serving = test_bad_values.serving

# Every kind of Unicode digit (decimal, superscript and other, letterlike), with the characters
# numbers are written with, so most examples look like a number and many nearly parse.
_DIGITS = st.characters(categories=("N",))  # decimal, letterlike and other digits
_NUMBER_PARTS = st.sampled_from(list("0123456789:-+._ hms[]/%x"))
NUMBERISH = st.one_of(
    st.text(alphabet=st.one_of(_DIGITS, _NUMBER_PARTS), max_size=12),
    st.text(max_size=24),
    st.builds("{}{}".format, st.sampled_from(["", "1", "10.0.0.5:", "h"]), st.text(max_size=6)),
)
_RUN = settings(
    max_examples=15,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)

# Options of Juju type string that carry a number (a duration, a URL's port).
TEXT_OPTIONS = (
    "external-url",
    "drain-timeout",
    "handover-grace",
    "handover-timeout",
    "reconcile-interval",
    "runner-stuck-timeout",
    "teardown-timeout",
)
INT_OPTIONS = ("port", "refresh-surge", "changeover-surge", "max-writes-per-pass", "backup-keep")
# Options that hold no number at all, with why.
NOT_NUMERIC = {"log-level": "one of four words"}


def test_every_option_is_fed():
    """Arrange: the options charmcraft.yaml declares. Act: compare with the fed ones.

    Assert: each option is fed (as text or as an integer) or named as holding no number.
    """
    declared = set(yaml.safe_load(CHARMCRAFT.read_text())["config"]["options"])

    assert {*TEXT_OPTIONS, *INT_OPTIONS, *NOT_NUMERIC} == declared


@pytest.mark.parametrize("option", TEXT_OPTIONS)
@_RUN
@given(value=NUMBERISH)
@example(value="²").via("superscript two: isdigit() says digit, int() refuses")
@example(value="²h").via("a duration of superscript hours")
@example(value="٣h").via("a duration of Arabic-Indic hours")
@example(value="https://garm.example.com:²").via("a URL's port")
def test_no_config_value_crashes_a_hook(option: str, value: str, serving: Serving):
    """Arrange: the leader serves `small` and `large`. Act: config-changed with the value.

    Assert: the hook ends without an uncaught exception.
    """
    state = dataclasses.replace(serving.state, config={**serving.state.config, option: value})

    serving.ctx.run(serving.ctx.on.config_changed(), state)


@pytest.mark.parametrize("option", INT_OPTIONS)
@_RUN
@given(value=st.integers())
def test_no_integer_option_crashes_a_hook(option: str, value: int, serving: Serving):
    """Arrange: the leader serves. Act: config-changed with any integer. Assert: no crash."""
    state = dataclasses.replace(serving.state, config={**serving.state.config, option: value})

    serving.ctx.run(serving.ctx.on.config_changed(), state)


@pytest.mark.parametrize("field", sorted(RELAY))
@_RUN
@given(value=NUMBERISH)
@example(value="²")
@example(value="٣")
def test_no_debug_ssh_value_crashes_a_hook(field: str, value: str, serving: Serving):
    """Arrange: the leader serves. Act: a relay publishes the value in one field.

    Assert: relation-changed ends without an uncaught exception.
    """
    relay = testing.Relation("debug-ssh", remote_units_data={0: {**RELAY, field: value}})
    state = dataclasses.replace(serving.state, relations={*serving.state.relations, relay})

    serving.ctx.run(serving.ctx.on.relation_changed(relay, remote_unit=0), state)


@_RUN
@given(value=NUMBERISH)
@example(value="db.example.com:²")
@example(value="[::1]:²")
@example(value="db.example.com:٣")
def test_no_database_endpoint_crashes_a_hook(value: str, serving: Serving):
    """Arrange: the leader serves. Act: the database provider publishes the endpoint.

    Assert: relation-changed ends without an uncaught exception.
    """
    user = testing.Secret(tracked_content={"username": "relation_7", "password": "pg-password"})
    relation = database_relation(user, endpoints=value)
    state = dataclasses.replace(
        serving.state,
        relations={*serving.state.relations, relation},
        secrets={*serving.state.secrets, user},
    )

    serving.ctx.run(serving.ctx.on.relation_changed(relation, remote_unit=0), state)


# The configurator's fields that hold a number, and where in the databag they are.
CONFIGURATOR_FIELDS = (
    "scaleset.min_idle_runners",
    "scaleset.max_runners",
    "github-app.app_id",
    "github-app.installation_id",
    "openstack.auth_url",
    "runner.http_proxy",
    "runner.dockerhub_mirror",
    "runner.otel_collector_endpoint",
    "runner.aproxy_redirect_ports",
    "runner.min_idle_schedule",
)
JSON_VALUES = st.one_of(
    NUMBERISH,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(NUMBERISH, max_size=3),
    st.builds("Mon 08:00-18:00 UTC={}".format, NUMBERISH),
    st.builds("Mon {}-18:00 UTC=1".format, NUMBERISH),
    st.builds("http://proxy.example:{}".format, NUMBERISH),
)


@pytest.mark.parametrize("field", CONFIGURATOR_FIELDS)
@_RUN
@given(value=JSON_VALUES)
@example(value="Mon 08:00-18:00 UTC=²")
@example(value="Mon \u0660\u0668:\u0660\u0660-18:00 UTC=1")  # Arabic-Indic 08:00
@example(value=["²"])
@example(value=["٨٠"])
def test_no_configurator_value_crashes_a_hook(field: str, value: Any, serving: Serving):
    """Arrange: the leader serves `small` and `large`. Act: `small` publishes the value.

    Assert: relation-changed ends without an uncaught exception.
    """
    relations = test_bad_values._configurators(serving.state)  # pyright: ignore[reportPrivateUsage]
    small = next(r for r in relations if r.remote_app_name == "small")
    data = dict(small.remote_app_data)
    key, _, path = field.partition(".")
    if key == interface.RUNNER_KEY:
        data[interface.VERSION_KEY] = interface.SCHEMA_VERSION
        data[key] = json.dumps({})
    data[key] = test_bad_values._changed(data[key], path, value)  # pyright: ignore[reportPrivateUsage]
    changed = dataclasses.replace(small, remote_app_data=data)
    others = {r for r in serving.state.relations if r.id != small.id}
    state = dataclasses.replace(serving.state, relations={*others, changed})

    serving.ctx.run(serving.ctx.on.relation_changed(changed), state)


ACTIONS_WITH_TEXT = (
    ("refresh-runners", "scaleset"),
    ("create-backup", "name"),
    ("restore-backup", "name"),
)


def test_every_action_parameter_is_fed():
    """Arrange: the actions charmcraft.yaml declares. Act: compare with the fed parameters.

    Assert: every string parameter is fed; the others are booleans (no number to misread).
    """
    actions = yaml.safe_load(CHARMCRAFT.read_text())["actions"]
    params = {
        (name, param): spec["type"]
        for name, action in actions.items()
        for param, spec in action.get("params", {}).items()
    }

    assert {key for key, kind in params.items() if kind != "boolean"} == set(ACTIONS_WITH_TEXT)


@pytest.mark.parametrize(("action", "param"), ACTIONS_WITH_TEXT)
@_RUN
@given(value=NUMBERISH)
@example(value="²")
def test_no_action_parameter_crashes_an_action(
    action: str, param: str, value: str, serving: Serving
):
    """Arrange: the leader serves. Act: run the action with the parameter's value.

    Assert: the action ends as a result or a failure, never an uncaught exception.
    """
    with contextlib.suppress(testing.ActionFailed):  # a refusal, as the action reports it
        serving.ctx.run(serving.ctx.on.action(action, params={param: value}), serving.state)


# The peer relation's application data: times (the pause, the lease, the hand-over claim) and
# the kept relay, with its port. Only this application writes there, yet a value a former
# revision or a hand edit left is read back untrusted.
PEER_FIELDS = ("maintenance-since", "garm-lease-until", "garm-host-since", "debug-ssh-relay")
TIMES = st.one_of(
    NUMBERISH,
    st.datetimes().map(datetime.datetime.isoformat),
    st.datetimes(timezones=st.just(datetime.UTC)).map(datetime.datetime.isoformat),
    st.builds(lambda port: json.dumps({**RELAY, "port": port}), NUMBERISH),
)


@pytest.mark.parametrize("field", PEER_FIELDS)
@_RUN
@given(value=TIMES)
@example(value="9999-12-31T23:59:59+00:00").via("no time after it: a margin added overflows")
@example(value="0001-01-01T00:00:00+00:00")
@example(value="2026-12-02T10:00:00").via("naive: compared with an aware time, TypeError")
@example(value=json.dumps({**RELAY, "port": "\u00b2"}))
def test_no_peer_value_crashes_a_hook(field: str, value: str, serving: Serving):
    """Arrange: the leader serves. Act: the peer application data holds the value.

    Assert: update-status ends without an uncaught exception.
    """
    peers = next(
        (r for r in serving.state.relations if isinstance(r, testing.PeerRelation)),
        testing.PeerRelation("garm-peers"),
    )
    changed = dataclasses.replace(peers, local_app_data={**peers.local_app_data, field: value})
    others = {r for r in serving.state.relations if r.id != peers.id}
    state = dataclasses.replace(serving.state, relations={*others, changed})

    serving.ctx.run(serving.ctx.on.update_status(), state)
