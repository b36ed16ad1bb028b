"""What GARM, garm-provider-openstack and systemd read, pinned where a looser test let a change by.

Written after a mutation run of `workload.rendering` (docs/reference/testing.md): each test
names the rendered detail a reader of the file depends on.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_workload import JWT_SECRET, PASSPHRASE, provider

from workload.config import GarmConfig, PostgresConfig, ProxyConfig
from workload.host import Paths, WorkloadError
from workload.rendering import render_clouds_yaml, render_config, render_environment, service_proxy

POSTGRES = PostgresConfig("10.1.2.3", 5432, "relation_id_7", "pg-pass", "garm")


def rendered(config: GarmConfig, tmp_path: Path) -> dict[str, Any]:
    """config.toml as GARM parses it."""
    return tomllib.loads(render_config(config, Paths(tmp_path), {}))


@pytest.mark.parametrize("postgres", [None, POSTGRES], ids=["sqlite3", "postgresql"])
def test_the_database_passphrase_and_the_log_format_are_garms_keys(
    postgres: PostgresConfig | None, tmp_path: Path
):
    """Arrange: a config on SQLite or PostgreSQL. Act: render config.toml.

    Assert: `database.passphrase` holds the passphrase (GARM encrypts its secrets with it and
    refuses to start without it) on both backends; logging is `text` at the level asked.
    """
    config = GarmConfig(jwt_secret=JWT_SECRET, db_passphrase=PASSPHRASE, postgres=postgres)

    document = rendered(config, tmp_path)

    assert document["database"]["passphrase"] == PASSPHRASE
    assert document["logging"] == {"log_level": "info", "log_format": "text"}


def test_clouds_yaml_keeps_non_ascii_as_written_in_block_style_auth_first():
    """Arrange: a provider whose password is not ASCII. Act: render its clouds.yaml.

    Assert: the password is written as is (not escaped), the document in block style (no
    `{`), `auth` before `region_name` before `identity_api_version`, and it reads back equal.
    """
    openstack = dataclasses.replace(provider(), password="pässwörd-ü")

    text = render_clouds_yaml(openstack)

    assert "pässwörd-ü" in text
    assert "{" not in text
    assert text.index("auth:") < text.index("region_name:") < text.index("identity_api_version:")
    cloud = yaml.safe_load(text)["clouds"]["openstack-small"]
    assert cloud["auth"]["password"] == "pässwörd-ü"


def test_no_proxy_hosts_of_the_model_are_kept_one_by_one():
    """Arrange: the model's NO_PROXY with two hosts. Act: GARM's proxy variables.

    Assert: NO_PROXY holds each host, then loopback and the auth host, each once.
    """
    proxy = ProxyConfig("http://p:3128", "http://p:3128", "a.example, b.example,,a.example")

    variables = service_proxy(proxy, ["keystone.example"])

    hosts = variables["NO_PROXY"].split(",")
    assert hosts[:2] == ["a.example", "b.example"]
    assert hosts[-1] == "keystone.example"
    assert len(hosts) == len(set(hosts))


def test_the_environment_file_escapes_quotes_and_backslashes():
    """Arrange: a proxy URL holding a quote and a backslash. Act: render the EnvironmentFile.

    Assert: both escaped the way systemd unquotes them, in both spellings of the name.
    """
    text = render_environment({"HTTP_PROXY": 'http://u:p"w\\d@p:3128'})

    assert 'HTTP_PROXY="http://u:p\\"w\\\\d@p:3128"' in text
    assert 'http_proxy="http://u:p\\"w\\\\d@p:3128"' in text
    assert text.startswith("# Managed by the garm charm")


@pytest.mark.parametrize("char", ["\x7f", "\n", "\x1f"], ids=["DEL", "newline", "unit-sep"])
def test_a_control_character_in_a_proxy_value_is_refused(char: str):
    """Arrange: a proxy value with a control character. Act: render. Assert: WorkloadError."""
    with pytest.raises(WorkloadError, match="control character"):
        render_environment({"HTTP_PROXY": f"http://p:3128{char}"})


def test_a_space_in_a_proxy_value_is_not_a_control_character():
    """Arrange: a value with a space (quoted by the file). Act: render. Assert: written."""
    text = render_environment({"NO_PROXY": "a b"})

    assert 'NO_PROXY="a b"' in text
