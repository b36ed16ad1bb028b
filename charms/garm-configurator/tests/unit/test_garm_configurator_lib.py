"""The relation library on both sides: publishing, and reading untrusted data back."""

import datetime
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ops
import pytest
from ops import testing

from charms.garm_configurator.v0 import garm_configurator as lib
from charms.garm_configurator.v0.garm_configurator import (
    ConfiguratorDataError,
    GarmConfiguratorData,
    InvalidDataError,
    NotLeaderError,
    NotPublishedError,
    SecretUnavailableError,
    UnsupportedVersionError,
    fetch_secrets,
    parse_app_data,
    publish,
    read_relation,
)

PASSWORD_ID = "secret:d1n3kb7mp25c78a8ob30"
KEY_ID = "secret:d1n3kb7mp25c78a8ob3g"
# ops.testing's default name for the application on the other side of a relation.
PUBLISHER = "remote"
SCALESET: dict[str, Any] = {
    "name": "small",
    "labels": ["noble", "X64"],
    "flavor": "m1.small",
    "image": "c0ffee-1234",
    "os_type": "linux",
    "os_arch": "amd64",
    "min_idle_runners": 1,
    "max_runners": 4,
    "runner_group": "Default",
    "entity": {"kind": "repo", "owner": "canonical", "repo": "garm-operator"},
}
OPENSTACK: dict[str, Any] = {
    "auth_url": "https://keystone.example:5000/v3",
    "username": "runner-bot",
    "password_secret_id": PASSWORD_ID,
    "project_name": "runners",
    "user_domain_name": "Default",
    "project_domain_name": "Default",
    "region_name": "",
    "network": "runners-net",
}
GITHUB_APP: dict[str, Any] = {
    "app_id": 123456,
    "installation_id": 7890123,
    "private_key_secret_id": KEY_ID,
}


def _databag(
    scaleset: Any = None, openstack: Any = None, github_app: Any = None, **extra: str
) -> dict[str, str]:
    return {
        "version": "1",
        "scaleset": json.dumps(SCALESET if scaleset is None else scaleset),
        "openstack": json.dumps(OPENSTACK if openstack is None else openstack),
        "github-app": json.dumps(GITHUB_APP if github_app is None else github_app),
        **extra,
    }


def _invalid(databag: dict[str, str]) -> str:
    with pytest.raises(InvalidDataError) as caught:
        parse_app_data(databag)
    return str(caught.value)


def test_lib_header_is_a_charm_library():
    """Arrange: the library module. Act: read its header. Assert: LIBID, LIBAPI 0, LIBPATCH 7."""
    assert len(lib.LIBID) == 32
    assert int(lib.LIBID, 16)
    assert lib.LIBAPI == 0
    assert lib.LIBPATCH == 7


def test_valid_databag_is_parsed():
    """Arrange: a well-formed databag. Act: parse. Assert: typed values, entity path."""
    data = parse_app_data(_databag())

    assert data.scaleset.labels == ("noble", "X64")
    assert data.scaleset.entity.path == "canonical/garm-operator"
    assert data.openstack.password_secret_id == PASSWORD_ID
    assert data.github_app.app_id == 123456


def test_round_trip_is_exact_and_deterministic():
    """Arrange: parsed data. Act: serialise twice and parse again. Assert: identical."""
    data = parse_app_data(_databag())

    first, second = data.to_databag(), data.to_databag()

    assert first == second
    assert parse_app_data(first) == data
    assert first["version"] == "1"


@pytest.mark.parametrize(
    "databag",
    [{}, {"some-other-lib": "x"}, {"egress-subnets": "10.0.0.0/24"}],
)
def test_empty_databag_is_not_published_rather_than_invalid(databag: dict[str, str]):
    """Arrange: no key of this interface. Act: parse. Assert: NotPublishedError, not invalid."""
    with pytest.raises(NotPublishedError):
        parse_app_data(databag)


@pytest.mark.parametrize("version", ["0", "3", "", "v1", "1.0", "9" * 10_000])
def test_unknown_version_is_refused(version: str):
    """Arrange: an unknown version. Act: parse. Assert: UnsupportedVersionError, bounded text."""
    with pytest.raises(UnsupportedVersionError) as caught:
        parse_app_data(_databag() | {"version": version})

    assert isinstance(caught.value, InvalidDataError)
    assert "upgrade" in str(caught.value)
    assert len(str(caught.value)) < 200


def test_missing_version_with_data_is_invalid():
    """Arrange: sections without a version. Act: parse. Assert: invalid, not 'not published'."""
    databag = _databag()
    del databag["version"]

    assert _invalid(databag) == "'version' is missing"


@pytest.mark.parametrize("key", ["scaleset", "openstack", "github-app"])
def test_missing_section_is_invalid(key: str):
    """Arrange: one section missing. Act: parse. Assert: invalid naming the key."""
    databag = _databag()
    del databag[key]

    assert _invalid(databag) == f"{key!r} is missing"


def test_foreign_top_level_keys_are_ignored():
    """Arrange: a valid databag plus another library's key. Act: parse. Assert: parsed."""
    data = parse_app_data(_databag(**{"other-lib-key": "anything"}))

    assert data.scaleset.name == "small"


@pytest.mark.parametrize(
    ("section", "patch", "expected"),
    [
        ("scaleset", {"extra": 1}, "scaleset.extra: Extra inputs are not permitted"),
        ("openstack", {"password": "leak"}, "openstack.password: Extra inputs are not permitted"),
        ("github-app", {"private_key": "x"}, "github-app.private_key: Extra inputs are not"),
        ("scaleset", {"max_runners": "5"}, "scaleset.max_runners: Input should be a valid int"),
        ("scaleset", {"max_runners": 5.5}, "scaleset.max_runners: Input should be a valid int"),
        ("scaleset", {"max_runners": True}, "scaleset.max_runners: Input should be a valid int"),
        ("scaleset", {"max_runners": 10**30}, "scaleset.max_runners: Input should be less"),
        ("scaleset", {"max_runners": 0}, "scaleset.max_runners: Input should be greater"),
        ("scaleset", {"labels": "noble"}, "scaleset.labels: Input should be a valid"),
        ("scaleset", {"labels": []}, "scaleset.labels: Tuple should have at least 1 item"),
        ("scaleset", {"labels": [1]}, "scaleset.labels.0: Input should be a valid string"),
        ("scaleset", {"labels": ["a b"]}, "scaleset.labels.0: each label must be 1-64"),
        ("scaleset", {"labels": ["x"] * 33}, "scaleset.labels: Tuple should have at most 32"),
        ("scaleset", {"labels": ["A", "a"]}, "scaleset: labels must be unique, ignoring case"),
        ("scaleset", {"min_idle_runners": 5}, "scaleset: min_idle_runners must not exceed"),
        ("scaleset", {"name": "a&b=c"}, "scaleset.name: must be 1-40 characters"),
        ("scaleset", {"name": "small-"}, "scaleset.name: must be 1-40 characters"),
        ("scaleset", {"name": None}, "scaleset.name: Input should be a valid string"),
        ("scaleset", {"os_type": "windows"}, "scaleset.os_type: Input should be 'linux'"),
        ("scaleset", {"os_arch": "x86"}, "scaleset.os_arch: Input should be 'amd64'"),
        ("scaleset", {"runner_group": "a&b"}, "scaleset.runner_group: must be 1-64"),
        ("scaleset", {"image": "a b"}, "scaleset.image: must be an image name or id"),
        ("scaleset", {"entity": None}, "scaleset.entity: Input should be an object"),
        (
            "scaleset",
            {"entity": {"kind": "repo", "owner": "canonical"}},
            "scaleset.entity: 'repo' is required for kind 'repo'",
        ),
        (
            "scaleset",
            {"entity": {"kind": "org", "owner": "canonical", "repo": "x"}},
            "scaleset.entity: 'repo' is required for kind 'repo' and forbidden for kind 'org'",
        ),
        (
            "scaleset",
            {"entity": {"kind": "user", "owner": "me"}},
            "scaleset.entity.kind: Input should be 'org' or 'repo'",
        ),
        ("openstack", {"auth_url": "file:///etc/passwd"}, "openstack.auth_url: must be an http"),
        ("openstack", {"auth_url": "javascript:alert(1)"}, "openstack.auth_url: must be"),
        ("openstack", {"network": "\x00"}, "openstack.network: must be 1-255 printable"),
        ("openstack", {"password_secret_id": "hunter2"}, "password_secret_id: must be a Juju"),
        ("openstack", {"password_secret_id": "secret:../x"}, "password_secret_id: must be a"),
        ("github-app", {"app_id": -1}, "github-app.app_id: Input should be greater than"),
        ("github-app", {"app_id": "1"}, "github-app.app_id: Input should be a valid integer"),
        ("github-app", {"installation_id": 2**60}, "installation_id: Input should be less"),
    ],
)
def test_malformed_fields_are_invalid(section: str, patch: dict[str, Any], expected: str):
    """Arrange: one field of one section wrong. Act: parse. Assert: invalid, located, clear."""
    bases = {"scaleset": SCALESET, "openstack": OPENSTACK, "github-app": GITHUB_APP}
    databag = _databag() | {section: json.dumps(bases[section] | patch)}

    assert expected in _invalid(databag)


@pytest.mark.parametrize(
    "raw",
    ["", "{", "null", "[]", '"text"', "1", '{"name": NaN}', "{" * 5000 + "}" * 5000],
)
def test_section_that_is_not_a_json_object_is_invalid(raw: str):
    """Arrange: a section that is not a JSON object. Act: parse. Assert: invalid, no crash."""
    assert _invalid(_databag() | {"scaleset": raw}).startswith("scaleset")


def test_huge_section_is_refused_before_parsing():
    """Arrange: a multi-megabyte section. Act: parse. Assert: invalid by length, not echoed."""
    huge = json.dumps(SCALESET | {"flavor": "f" * 5_000_000})

    message = _invalid(_databag() | {"scaleset": huge})

    assert message == "'scaleset' is longer than 65536 characters"


def test_hostile_values_are_not_echoed():
    """Arrange: long and script-like values under the size limit. Act: parse.

    Assert: the error names the fields but contains none of the values; it stays short.
    """
    hostile = SCALESET | {"name": "<script>evil</script>", "flavor": "F" * 60_000}

    message = _invalid(_databag() | {"scaleset": json.dumps(hostile)})

    assert "scaleset.name" in message
    assert "scaleset.flavor" in message
    assert "<script>" not in message
    assert "FFFF" not in message
    assert len(message) < 500


def test_many_errors_are_summarised():
    """Arrange: every field of a section wrong. Act: parse. Assert: at most five and a count."""
    wrong = dict.fromkeys(SCALESET, 3.5)

    message = _invalid(_databag() | {"scaleset": json.dumps(wrong)})

    assert message.count("scaleset.") == 5
    assert message.endswith("more")


def test_every_error_is_a_configurator_data_error():
    """Arrange: the error types. Act: inspect them. Assert: one base for a single except."""
    for error in (NotPublishedError, InvalidDataError, UnsupportedVersionError):
        assert issubclass(error, ConfiguratorDataError)
    assert issubclass(SecretUnavailableError, ConfiguratorDataError)


def test_secrets_are_not_in_repr():
    """Arrange: fetched secrets. Act: repr. Assert: the values are hidden."""
    secrets = lib.ConfiguratorSecrets(openstack_password="pw-1", github_app_private_key="key-1")

    assert "pw-1" not in repr(secrets)
    assert "key-1" not in repr(secrets)


# The requirer side through ops: a minimal garm-like charm that only has the relation.

REQUIRER_META = {
    "name": "garm",
    "requires": {"garm-configurator": {"interface": "garm_configurator"}},
}
PROVIDER_META = {
    "name": "garm-configurator",
    "provides": {"garm-configurator": {"interface": "garm_configurator"}},
}


def test_read_relation_parses_the_remote_app_data(pkcs1_pem: str):
    """Arrange: a relation whose configurator published, secrets granted.

    Act: read_relation and fetch_secrets. Assert: typed data and both secret values.
    """
    relation = testing.Relation("garm-configurator", remote_app_data=_databag())
    secrets = [
        testing.Secret(_published({"password": "pw"}), id=PASSWORD_ID),
        testing.Secret(_published({"private-key": pkcs1_pem}), id=KEY_ID),
    ]

    with _requirer(relation, secrets) as model:
        data = read_relation(_relation(model))
        values = fetch_secrets(model, data, publisher=PUBLISHER)

    assert data.scaleset.name == "small"
    assert values.openstack_password == "pw"
    assert values.github_app_private_key == pkcs1_pem


def test_fetch_secrets_follows_the_latest_revision(pkcs1_pem: str):
    """Arrange: the password secret has a newer revision. Act: fetch. Assert: the new value."""
    relation = testing.Relation("garm-configurator", remote_app_data=_databag())
    secrets = [
        testing.Secret(
            _published({"password": "old"}),
            latest_content=_published({"password": "new"}),
            id=PASSWORD_ID,
        ),
        testing.Secret(_published({"private-key": pkcs1_pem}), id=KEY_ID),
    ]

    with _requirer(relation, secrets) as model:
        values = fetch_secrets(model, read_relation(_relation(model)), publisher=PUBLISHER)

    assert values.openstack_password == "new"


def test_read_relation_on_an_empty_databag_is_not_published():
    """Arrange: a relation whose configurator has not written yet. Act: read.

    Assert: NotPublishedError, never an empty desired state.
    """
    relation = testing.Relation("garm-configurator")

    with _requirer(relation, []) as model, pytest.raises(NotPublishedError):
        read_relation(_relation(model))


def test_fetch_secrets_without_grant_is_unavailable():
    """Arrange: published ids, no secret granted. Act: fetch. Assert: SecretUnavailableError."""
    relation = testing.Relation("garm-configurator", remote_app_data=_databag())

    with _requirer(relation, []) as model, pytest.raises(SecretUnavailableError) as caught:
        fetch_secrets(model, read_relation(_relation(model)), publisher=PUBLISHER)

    assert PASSWORD_ID in str(caught.value)


@pytest.mark.parametrize(
    ("password_content", "key_content", "expected"),
    [
        ({"pass": "x"}, None, "has no key 'password'"),
        ({"password": "pw"}, {"key": "x"}, "has no key 'private-key'"),
        ({"password": "pw"}, {"private-key": "garbage"}, "must be the GitHub App's PEM"),
        ({"password": "p" * 5000}, None, "the password must be 1-4096 characters"),
    ],
)
def test_fetch_secrets_refuses_malformed_content(
    pkcs1_pem: str,
    password_content: dict[str, str],
    key_content: dict[str, str] | None,
    expected: str,
):
    """Arrange: a secret with a wrong key or value. Act: fetch. Assert: unavailable, no value."""
    relation = testing.Relation("garm-configurator", remote_app_data=_databag())
    secrets = [
        testing.Secret(_published(password_content), id=PASSWORD_ID),
        testing.Secret(_published(key_content or {"private-key": pkcs1_pem}), id=KEY_ID),
    ]

    with _requirer(relation, secrets) as model, pytest.raises(SecretUnavailableError) as caught:
        fetch_secrets(model, read_relation(_relation(model)), publisher=PUBLISHER)

    assert expected in str(caught.value)
    assert "garbage" not in str(caught.value)
    assert "ppp" not in str(caught.value)


def test_fetch_secrets_refuses_a_pkcs8_key(pkcs8_pem: str):
    """Arrange: the key secret holds PKCS#8. Act: fetch. Assert: refused with the conversion."""
    relation = testing.Relation("garm-configurator", remote_app_data=_databag())
    secrets = [
        testing.Secret(_published({"password": "pw"}), id=PASSWORD_ID),
        testing.Secret(_published({"private-key": pkcs8_pem}), id=KEY_ID),
    ]

    with _requirer(relation, secrets) as model, pytest.raises(SecretUnavailableError) as caught:
        fetch_secrets(model, read_relation(_relation(model)), publisher=PUBLISHER)

    assert "openssl pkcs8" in str(caught.value)


@pytest.mark.parametrize(
    ("password_content", "owner", "expected"),
    [
        ({"password": "pw", "app": "other-configurator"}, None, "does not name remote"),
        ({"password": "pw"}, None, "does not name remote"),
        ({"username": "admin", "password": "garm-admin-Pa55"}, "app", "owned by this app"),
        ({"password": "pw", "app": PUBLISHER}, "unit", "owned by this app"),
    ],
    ids=["another-publisher", "no-publisher", "requirer-admin-secret", "requirer-unit-secret"],
)
def test_fetch_secrets_refuses_a_secret_that_is_not_the_publishers(
    pkcs1_pem: str, password_content: dict[str, str], owner: Any, expected: str
):
    """Arrange: the password id points at another app's secret, or at one the requirer owns.

    Act: fetch. Assert: UntrustedSecretError naming the secret, never its value.
    """
    relation = testing.Relation("garm-configurator", remote_app_data=_databag())
    secrets = [
        testing.Secret(password_content, id=PASSWORD_ID, owner=owner),
        testing.Secret(_published({"private-key": pkcs1_pem}), id=KEY_ID),
    ]
    ctx = testing.Context(ops.CharmBase, meta=REQUIRER_META)
    state = testing.State(leader=True, relations=[relation], secrets=secrets)

    with ctx(ctx.on.update_status(), state) as manager:
        model = manager.charm.model
        with pytest.raises(lib.UntrustedSecretError) as caught:
            fetch_secrets(model, read_relation(_relation(model)), publisher=PUBLISHER)

    assert expected in str(caught.value)
    assert PASSWORD_ID in str(caught.value)
    assert "Pa55" not in str(caught.value)
    assert issubclass(lib.UntrustedSecretError, ConfiguratorDataError)


def test_publish_writes_only_changes_and_only_on_the_leader():
    """Arrange: a provider leader. Act: publish, publish again, publish a change.

    Assert: written, then unchanged (False), then only the changed key differs.
    """
    relation = testing.Relation("garm-configurator")
    data = parse_app_data(_databag())
    changed = GarmConfiguratorData(
        scaleset=data.scaleset.model_copy(update={"max_runners": 8}),
        openstack=data.openstack,
        github_app=data.github_app,
    )
    ctx = testing.Context(ops.CharmBase, meta=PROVIDER_META)

    with ctx(ctx.on.update_status(), testing.State(leader=True, relations=[relation])) as mgr:
        model = mgr.charm.model
        first = publish(model, _relation(model), data)
        again = publish(model, _relation(model), data)
        before = dict(_relation(model).data[model.app])
        third = publish(model, _relation(model), changed)
        after = dict(_relation(model).data[model.app])

    assert (first, again, third) == (True, False, True)
    assert before == data.to_databag()
    assert {key for key in after if after[key] != before[key]} == {"scaleset"}


def test_publish_refuses_a_non_leader():
    """Arrange: a provider non-leader. Act: publish. Assert: NotLeaderError, nothing written."""
    relation = testing.Relation("garm-configurator")
    ctx = testing.Context(ops.CharmBase, meta=PROVIDER_META)

    with ctx(ctx.on.update_status(), testing.State(leader=False, relations=[relation])) as mgr:
        model = mgr.charm.model
        with pytest.raises(NotLeaderError):
            publish(model, _relation(model), parse_app_data(_databag()))


@contextmanager
def _requirer(relation: testing.Relation, secrets: list[testing.Secret]) -> Iterator[ops.Model]:
    ctx = testing.Context(ops.CharmBase, meta=REQUIRER_META)
    state = testing.State(relations=[relation], secrets=secrets)
    with ctx(ctx.on.update_status(), state) as manager:
        yield manager.charm.model


def _published(content: dict[str, str]) -> dict[str, str]:
    """A secret's content as the configurator publishes it: naming itself under `app`."""
    return {**content, "app": PUBLISHER}


def _relation(model: ops.Model) -> ops.Relation:
    relation = model.get_relation("garm-configurator")
    assert relation is not None
    return relation


# Schema version 2: the runner section.

RUNNER: dict[str, Any] = {
    "http_proxy": "http://squid.internal:3128",
    "aproxy_exclude_addresses": ["10.0.0.0/8", "192.168.1.10"],
    "aproxy_redirect_ports": ["80", "443", "8000-9000"],
    "dockerhub_mirror": "https://mirror.internal:5000",
    "otel_collector_endpoint": "http://otel.internal:4318",
    "pre_job_script": "echo hello\n",
    "pre_install_scripts": {"10-apt": "apt-get install -y jq\n"},
}


def test_version_2_databag_carries_the_runner_options():
    """Arrange: a version-2 databag with a runner section. Act: parse. Assert: typed options."""
    data = parse_app_data(_databag(version="2", runner=json.dumps(RUNNER)))

    assert data.runner.http_proxy == "http://squid.internal:3128"
    assert data.runner.aproxy_redirect_ports == ("80", "443", "8000-9000")
    assert data.runner.pre_install_scripts == {"10-apt": "apt-get install -y jq\n"}
    assert data.to_databag()["version"] == "2"
    assert parse_app_data(data.to_databag()) == data


def test_version_1_databag_reads_with_default_runner_options():
    """Arrange: a version-1 databag, even with a stray runner key. Act: parse.

    Assert: default runner options: version 1 has no runner section to read.
    """
    data = parse_app_data(_databag(runner=json.dumps(RUNNER)))

    assert data.runner == lib.RunnerOptions()
    assert data.runner.aproxy_redirect_ports == ("80", "443")


def test_default_runner_options_publish_as_version_1():
    """Arrange: data with default runner options. Act: serialise.

    Assert: version 1 without a runner key, which a version-1-only garm charm reads.
    """
    databag = parse_app_data(_databag()).to_databag()

    assert databag["version"] == "1"
    assert "runner" not in databag


def test_unknown_runner_fields_are_ignored_not_refused():
    """Arrange: a version-2 runner section with a field this library does not know.

    Act: parse. Assert: parsed; the known fields are kept and the unknown one dropped.
    """
    runner = RUNNER | {"future_option": "anything"}

    data = parse_app_data(_databag(version="2", runner=json.dumps(runner)))

    assert data.runner.dockerhub_mirror == "https://mirror.internal:5000"
    assert "future_option" not in data.to_databag()["runner"]


def test_version_2_without_runner_section_is_invalid():
    """Arrange: version 2 and no runner key. Act: parse. Assert: invalid naming the key."""
    assert _invalid(_databag(version="2")) == "'runner' is missing"


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"http_proxy": "squid:3128"}, "runner.http_proxy: must be an http:// or https://"),
        ({"dockerhub_mirror": "ftp://m"}, "runner.dockerhub_mirror: must be an http://"),
        ({"otel_collector_endpoint": ""}, "runner.otel_collector_endpoint: must be an http"),
        ({"aproxy_exclude_addresses": ["fe80::1"]}, "aproxy_exclude_addresses.0: must be IPv4"),
        ({"aproxy_exclude_addresses": ["10.0.0.0/33"]}, "aproxy_exclude_addresses.0: must be"),
        ({"aproxy_redirect_ports": ["0"]}, "aproxy_redirect_ports.0: must be ports 1-65535"),
        ({"aproxy_redirect_ports": ["9-8"]}, "aproxy_redirect_ports.0: must be ports 1-65535"),
        ({"aproxy_redirect_ports": ["65536"]}, "aproxy_redirect_ports.0: must be ports"),
        ({"aproxy_redirect_ports": []}, "runner.aproxy_redirect_ports: Tuple should have at"),
        ({"pre_job_script": "x" * 16385}, "runner.pre_job_script: must be at most 16384"),
        ({"pre_job_script": "a\x00b"}, "runner.pre_job_script: must be at most 16384"),
        ({"pre_install_scripts": {"../x": "y"}}, "script names must be 1-64 of A-Z"),
        ({"pre_install_scripts": {".hidden": "y"}}, "script names must be 1-64 of A-Z"),
        (
            {"pre_install_scripts": {f"s{i}": "y" for i in range(9)}},
            "runner.pre_install_scripts: Dictionary should have at most 8 items",
        ),
        (
            {"pre_install_scripts": {"a": "x" * 7679, "b": "x" * 7680}},
            "runner.pre_install_scripts: names and scripts together must be at most 15360 "
            "characters (they are 15361)",
        ),
    ],
)
def test_malformed_runner_fields_are_invalid(patch: dict[str, Any], expected: str):
    """Arrange: one runner field wrong. Act: parse. Assert: invalid, located, value not echoed."""
    databag = _databag(version="2", runner=json.dumps(RUNNER | patch))

    message = _invalid(databag)

    assert expected in message
    assert "xxxx" not in message


def test_pre_install_scripts_at_their_combined_budget_are_valid():
    """Arrange: two scripts whose names and bodies are 15,360 characters in all (the budget).

    Act: parse. Assert: valid (one character more is refused, above).
    """
    scripts = {"a": "x" * 7679, "b": "x" * 7679}
    databag = _databag(version="2", runner=json.dumps(RUNNER | {"pre_install_scripts": scripts}))

    assert lib.parse_app_data(databag).runner.pre_install_scripts == scripts


def test_publish_drops_the_runner_section_when_options_return_to_defaults():
    """Arrange: a leader that published version 2. Act: publish data with default options.

    Assert: version 1 and no runner key left behind.
    """
    relation = testing.Relation("garm-configurator")
    with_runner = parse_app_data(_databag(version="2", runner=json.dumps(RUNNER)))
    plain = with_runner.model_copy(update={"runner": lib.RunnerOptions()})
    ctx = testing.Context(ops.CharmBase, meta=PROVIDER_META)

    with ctx(ctx.on.update_status(), testing.State(leader=True, relations=[relation])) as mgr:
        model = mgr.charm.model
        publish(model, _relation(model), with_runner)
        published = dict(_relation(model).data[model.app])
        changed = publish(model, _relation(model), plain)
        after = dict(_relation(model).data[model.app])

    assert published["version"] == "2"
    assert changed
    assert after["version"] == "1"
    assert "runner" not in after


# Scheduled min idle runners (LIBPATCH 4) -------------------------------------------------------

BERLIN_OFFICE = "Mon-Fri 08:00-18:00 Europe/Berlin=6; default=1"


def _utc(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        # Winter (UTC+1): 07:30 UTC is 08:30 in Berlin, a Tuesday.
        ("2026-12-01T07:30:00", (6, "Mon-Fri 08:00-18:00 Europe/Berlin")),
        ("2026-12-01T06:30:00", (1, "default")),
        # Summer (UTC+2): 06:30 UTC is 08:30 in Berlin; the window follows local time.
        ("2026-07-07T06:30:00", (6, "Mon-Fri 08:00-18:00 Europe/Berlin")),
        ("2026-07-07T16:30:00", (1, "default")),
        # The Monday after the spring change (29 March 2026): 06:00 UTC is 08:00 CEST.
        ("2026-03-30T06:00:00", (6, "Mon-Fri 08:00-18:00 Europe/Berlin")),
        # Saturday.
        ("2026-12-05T10:00:00", (1, "default")),
    ],
)
def test_schedule_follows_local_time_across_daylight_saving(
    moment: str, expected: tuple[int, str]
):
    """Arrange: Berlin office hours = 6, default 1. Act: evaluate at UTC moments.

    Assert: the value of local Berlin time, summer and winter alike.
    """
    schedule = lib.parse_min_idle_schedule(BERLIN_OFFICE)

    assert schedule.at(_utc(moment)) == expected


def test_overlapping_windows_take_the_highest_and_overnight_windows_wrap():
    """Arrange: an all-week window of 2, a Friday window of 5, a Fri night window of 3.

    Act: evaluate on Friday 12:00 UTC and on Saturday 02:00 UTC.

    Assert: 5 (the highest active); Saturday 02:00 is in Friday's 22:00-04:00 window (3).
    """
    schedule = lib.parse_min_idle_schedule(
        "Mon-Sun 09:00-17:00 UTC=2; Fri 10:00-14:00 UTC=5; Fri 22:00-04:00 UTC=3"
    )

    assert schedule.at(_utc("2026-12-04T12:00:00"))[0] == 5
    assert schedule.at(_utc("2026-12-05T02:00:00")) == (3, "Fri 22:00-04:00 UTC")
    assert schedule.highest() == 5


def test_schedule_above_max_runners_is_refused_in_a_publication():
    """Arrange: a version-2 publication whose schedule asks for more than max_runners.

    Act: parse. Assert: invalid, naming min_idle_schedule.
    """
    runner = RUNNER | {"min_idle_schedule": "Mon 08:00-09:00 UTC=9999"}

    assert "min_idle_schedule" in _invalid(_databag(version="2", runner=json.dumps(runner)))


def test_publications_without_a_schedule_stay_readable():
    """Arrange: a version-1 databag and a version-2 one from before LIBPATCH 4. Act: parse.

    Assert: both read, with no schedule.
    """
    old_v1 = parse_app_data(_databag())
    old_v2 = parse_app_data(_databag(version="2", runner=json.dumps(RUNNER)))

    assert old_v1.runner.min_idle_schedule == old_v2.runner.min_idle_schedule == ""
