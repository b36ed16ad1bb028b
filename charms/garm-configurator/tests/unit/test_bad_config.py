"""Every config option with a bad value, on a leader that already published its scale set.

The table is checked against charmcraft.yaml, so a new option fails here until it has a row.
A bad value must block naming the option and saying the fix within 120 characters, and leave
what garm reads (the relation's databag and the secret copies) exactly as it was.
"""

import dataclasses
import json
from pathlib import Path
from typing import Any

import ops
import pytest
import yaml
from conftest import PRIVATE_KEY_SECRET_ID
from ops import testing

from charm import GarmConfiguratorCharm

CHARMCRAFT = Path(__file__).resolve().parents[2] / "charmcraft.yaml"
NOT_GRANTED = "secret:d1n3kb7mp25c78a8ob99"
# A URL carrying credentials would publish them in clear in the relation databag.
CREDENTIALS = ("is invalid: must not carry a user or password", "use a secret")
# A link-local or metadata host: the keystone calls or every runner's traffic would go there.
OFF_LINK = ("is invalid: must not be a cloud metadata service or a link-local address",)


@dataclasses.dataclass(frozen=True)
class Bad:
    """One row: an option, a bad value for it, words the status must hold, other options."""

    option: str
    value: Any
    words: tuple[str, ...]
    also: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        """The test id: the option and the start of the value."""
        return f"{self.option}={self.value!r}"[:60]


ROWS = (
    Bad("name", "Small!", ("is invalid: must be 1-40 characters",)),
    Bad("labels", "ok,not ok", ("invalid label 'not ok'", "each label must be")),
    Bad("flavor", "m1\tsmall", ("is invalid: must be 1-255 printable characters",)),
    Bad("image", "noble x64", ("is invalid: must be an image name or id",)),
    Bad("os-arch", "riscv64", ("is invalid: input should be 'amd64'",)),
    Bad("min-idle-runners", 11, ("exceeds 'max-runners' (10)", "lower min-idle-runners")),
    Bad("max-runners", 0, ("is invalid: input should be greater than or equal to 1",)),
    Bad("runner-group", "my group", ("is invalid: must be 1-64 characters",)),
    Bad("org", "-acme", ("is invalid: must be a GitHub account name",)),
    Bad("repo", "acme", ("is invalid: must be owner/name",), also=(("org", ""),)),
    Bad("openstack-auth-url", "ftp://keystone", ("is invalid: must be an http://",)),
    Bad("openstack-auth-url", "https://admin:s3cret@keystone:5000/v3", CREDENTIALS),
    Bad("openstack-auth-url", "http://169.254.169.254/openstack", OFF_LINK),
    Bad("openstack-auth-url", "https://[fe80::1]:5000/v3", OFF_LINK),
    Bad("openstack-auth-url", "http://metadata.google.internal/v3", OFF_LINK),
    Bad("openstack-auth-url", "http://2852039166/v3", ("is invalid: must have a DNS name",)),
    Bad("openstack-username", "bot\x1b", ("is invalid: must be 1-255 printable",)),
    Bad("openstack-password", NOT_GRANTED, (f"juju grant-secret {NOT_GRANTED}",)),
    Bad("openstack-project-name", "p" * 256, ("is invalid: must be 1-255 printable",)),
    Bad("openstack-user-domain-name", "a\x7fb", ("is invalid: must be 1-255 printable",)),
    Bad("openstack-project-domain-name", "d" * 256, ("is invalid: must be 1-255 printable",)),
    Bad("openstack-region-name", "Region\x00", ("is invalid: must be 1-255 printable",)),
    Bad("openstack-network", "net\x1bwork", ("is invalid: must be 1-255 printable",)),
    Bad("github-app-id", 0, ("is invalid: input should be greater than or equal to 1",)),
    Bad("github-app-installation-id", 2**53, ("is invalid: input should be less than",)),
    Bad("github-app-private-key", "<PKCS#8 key>", ("names secret", "is PKCS#8")),
    Bad("runner-http-proxy", "proxy:3128", ("is invalid: must be an http://",)),
    Bad("runner-http-proxy", "http://user:s3cret@proxy:3128", CREDENTIALS),
    Bad("runner-http-proxy", "http://169.254.169.254:80", OFF_LINK),
    Bad("runner-http-proxy", "http://[fd00:ec2::254]", OFF_LINK),
    Bad("runner-http-proxy", "http://[::ffff:169.254.10.1]:3128", OFF_LINK),
    Bad("runner-http-proxy", "http://instance-data.ec2.internal.", OFF_LINK),
    Bad("aproxy-exclude-addresses", "::1", ("is invalid: must be IPv4 addresses",)),
    Bad("aproxy-redirect-ports", "0", ("is invalid: must be ports 1-65535",)),
    Bad("aproxy-redirect-ports", "80,\u00b2", ("is invalid: must be ports 1-65535",)),
    Bad("aproxy-redirect-ports", "\u0668\u0660", ("is invalid: must be ports 1-65535",)),
    Bad("dockerhub-mirror", "mirror", ("is invalid: must be an http://",)),
    Bad("dockerhub-mirror", "https://robot:s3cret@mirror.example", CREDENTIALS),
    Bad("otel-collector-endpoint", "collector:4317", ("is invalid: must be an http://",)),
    Bad("otel-collector-endpoint", "http://s3cret@collector:4317", CREDENTIALS),
    Bad("pre-job-script", "x" * 20000, ("is invalid: must be at most 16384",)),
    Bad("pre-install-scripts", "apt: true", ("is invalid: must be a JSON object",)),
    Bad(
        "pre-install-scripts",
        json.dumps({"a": "x" * 8000, "b": "x" * 8000}),
        ("is invalid: names and scripts together must be at most 15360",),
    ),
    Bad("min-idle-schedule", "Mon-Fri 08:00-18:00 Mars/Olympus=6", ("unknown time zone",)),
    Bad("min-idle-schedule", "Mon-Fri 08:00-18:00 UTC=11", ("more than 'max-runners' (10)",)),
    Bad("min-idle-schedule", "Mon-Fri 08:00-18:00 localtime=2", ("no place's time zone",)),
    Bad("min-idle-schedule", "Mon 08:00-18:00 posixrules=2", ("no place's time zone",)),
    Bad("min-idle-schedule", "Mon 08:00-18:00 right/UTC=2", ("no place's time zone",)),
    Bad("min-idle-schedule", "Mon 08:00-18:00 UTC=\u00b2", ("entry 1: expected <window>=",)),
    Bad("min-idle-schedule", "Mon \u0660\u0668:00-18:00 UTC=2", ("entry 1: expected e.g.",)),
)


def test_every_option_has_a_row():
    """Arrange: the options charmcraft.yaml declares. Act: compare with the table.

    Assert: each option has at least one bad value below, and the table names no other.
    """
    declared = set(yaml.safe_load(CHARMCRAFT.read_text())["config"]["options"])

    assert {row.option for row in ROWS} == declared


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_bad_option_blocks_and_keeps_the_publication(
    row: Bad,
    valid_config: dict[str, Any],
    user_secrets: dict[str, dict[str, str]],
    pkcs8_pem: str,
):
    """Arrange: the leader published `small` on a garm relation. Act: the bad value.

    Act: config-changed.
    Assert: Blocked naming the option and its fix, within 120 characters; the databag and the
    secret copies garm reads are as they were.
    """
    ctx = testing.Context(GarmConfiguratorCharm)
    garm = testing.Relation("garm-configurator", remote_app_name="garm")
    secrets = [
        testing.Secret(content, id=secret_id) for secret_id, content in user_secrets.items()
    ]
    state = testing.State(
        leader=True,
        config={**valid_config, "image": "noble-x64"},
        secrets=secrets,
        relations=[garm],
    )
    published = ctx.run(ctx.on.config_changed(), state)
    assert published.unit_status == ops.ActiveStatus("scale set 'small' published")
    databag = dict(published.get_relation(garm.id).local_app_data)
    copies = {s.label: s.latest_content for s in published.secrets if s.owner == "app"}
    bad = _with_bad_value(published, row, pkcs8_pem)

    out = ctx.run(ctx.on.config_changed(), bad)

    assert isinstance(out.unit_status, ops.BlockedStatus)
    message = out.unit_status.message
    assert message.startswith(f"config '{row.option}' "), message
    assert all(word in message for word in row.words), message
    assert len(message) <= 120, message
    assert "s3cret" not in message
    assert dict(out.get_relation(garm.id).local_app_data) == databag
    assert {s.label: s.latest_content for s in out.secrets if s.owner == "app"} == copies


def _with_bad_value(state: testing.State, row: Bad, pkcs8_pem: str) -> testing.State:
    """`state` with the row's value set; the App key row puts a PKCS#8 key into its secret."""
    if row.value == "<PKCS#8 key>":
        secrets = {
            dataclasses.replace(
                s,
                tracked_content={"private-key": pkcs8_pem},
                latest_content={"private-key": pkcs8_pem},
            )
            if s.id == PRIVATE_KEY_SECRET_ID
            else s
            for s in state.secrets
        }
        return dataclasses.replace(state, secrets=secrets)
    config = {**state.config, row.option: row.value, **dict(row.also)}
    return dataclasses.replace(state, config=config)
