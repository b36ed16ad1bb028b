"""What a hook reads once (`CharmState`) and the one status it sets on the unit and the app."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import ops
import pytest
from ops import testing

import charm
import charm_config
from charm_config import CharmConfig, CharmState, InvalidConfigError
from doubles.tls_publication import certificates_relation
from doubles.workload_double import RecordingWorkload

Ctx = testing.Context[charm.GarmCharm]
Resources = frozenset[testing.Resource]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[str, Any]]:
    """Every config `parse_config` validated in this test, in order (the parse itself runs)."""
    seen: list[Mapping[str, Any]] = []
    real: Callable[[Mapping[str, Any]], CharmConfig] = charm_config.parse_config

    def counting(raw: Mapping[str, Any]) -> CharmConfig:
        seen.append(raw)
        return real(raw)

    monkeypatch.setattr(charm_config, "parse_config", counting)
    return seen


def everything_reading_the_config(resources: Resources, config: dict[str, Any]) -> testing.State:
    """A fresh leader whose hook asks for a certificate, publishes to COS and schedules a tick."""
    return testing.State(
        leader=True,
        resources=resources,
        config=config,
        relations=[
            certificates_relation(),
            testing.Relation("cos-agent", remote_app_name="grafana-agent"),
        ],
    )


def test_a_hook_parses_the_config_once(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources, parses: list[Mapping[str, Any]]
):
    """Arrange: a leader with a certificates and a cos-agent relation, a reconcile interval.

    Act: config-changed (the certificate names, the reconcile, COS and the tick all need it).
    Assert: the config was parsed once, and the hook did what each reader asks for.
    """
    state = everything_reading_the_config(
        resources, {"external-url": "https://garm.example.com", "reconcile-interval": "5m"}
    )

    out = ctx.run(ctx.on.config_changed(), state)

    assert len(parses) == 1
    assert out.unit_status == ops.WaitingStatus(
        "created GARM's secrets; GARM is configured at the next hook"
    )
    cos = next(relation for relation in out.relations if relation.endpoint == "cos-agent")
    assert isinstance(cos, testing.Relation)
    assert cos.local_unit_data.get("config")


def test_an_invalid_config_is_parsed_once_and_blocks_unit_and_app_alike(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources, parses: list[Mapping[str, Any]]
):
    """Arrange: a leader with a certificates relation and an invalid port.

    Act: config-changed.
    Assert: parsed once; the unit and the app both show the Blocked text naming the option.
    """
    state = everything_reading_the_config(resources, {"port": 0})

    out = ctx.run(ctx.on.config_changed(), state)

    assert len(parses) == 1
    assert out.unit_status == ops.BlockedStatus(
        "invalid config port: must be 1024-65535 (GARM runs unprivileged)"
    )
    assert out.app_status == out.unit_status


def test_the_one_collect_status_handler_sets_unit_and_app_status_alike(
    ctx: Ctx, workload: RecordingWorkload, resources: Resources
):
    """Arrange: a fresh leader. Act: install. Assert: the app shows the unit's status."""
    state = testing.State(leader=True, resources=resources)

    out = ctx.run(ctx.on.install(), state)

    assert isinstance(out.unit_status, ops.WaitingStatus)
    assert out.app_status == out.unit_status


def test_the_snapshot_reads_leadership_and_proxy_with_the_config():
    """Arrange: a config, leadership and Juju's proxy variables. Act: build the snapshot.

    Assert: the validated config, the leadership and the proxy, each as given.
    """
    state = CharmState.from_juju(
        {"port": 8443},
        leader=True,
        environ={"JUJU_CHARM_HTTPS_PROXY": "http://squid:3128", "JUJU_CHARM_NO_PROXY": "::1"},
    )

    assert state.config == CharmConfig(port=8443)
    assert state.leader
    assert state.proxy.https_proxy == "http://squid:3128"
    assert state.proxy.no_proxy == "::1"


def test_an_invalid_config_makes_no_snapshot():
    """Arrange: an invalid log level. Act: build the snapshot. Assert: the Blocked text's error."""
    with pytest.raises(InvalidConfigError, match="invalid config log-level"):
        CharmState.from_juju({"log-level": "loud"}, leader=False, environ={})
