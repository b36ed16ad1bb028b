"""Validation of every option: what is accepted, and the message naming what to fix."""

from collections.abc import Callable
from typing import Any

import pytest

from configurator_config import InvalidConfigError, load_config

Reader = Callable[[str, str], str]


def _problems(config: dict[str, Any], reader: Reader) -> list[str]:
    with pytest.raises(InvalidConfigError) as caught:
        load_config(config, reader)
    return [str(problem) for problem in caught.value.problems]


def test_valid_config_is_loaded(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: a complete config. Act: load it. Assert: every field is parsed and normalised."""
    config = load_config(valid_config, secret_reader)

    assert config.scaleset.name == "small"
    assert config.scaleset.labels == ("noble", "x64", "large")
    assert config.scaleset.entity.kind == "org"
    assert config.scaleset.entity.path == "canonical"
    assert config.image_override is None
    assert config.openstack.region_name == "RegionOne"
    assert config.openstack_password == "s3cr3t-openstack-password"
    assert config.github_app_private_key.startswith("-----BEGIN RSA PRIVATE KEY-----")


def test_secret_values_are_not_in_repr(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: a valid config. Act: repr it. Assert: neither secret value appears."""
    config = load_config(valid_config, secret_reader)

    text = repr(config)

    assert "s3cr3t" not in text
    assert "PRIVATE KEY" not in text


def test_labels_are_deduplicated_ignoring_case(
    valid_config: dict[str, Any], secret_reader: Reader
):
    """Arrange: labels repeating in other cases, blanks. Act: load. Assert: first spellings."""
    valid_config["labels"] = " X64,noble,x64 ,,NOBLE,large,"

    config = load_config(valid_config, secret_reader)

    assert config.scaleset.labels == ("X64", "noble", "large")


def test_repo_is_split_into_owner_and_name(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: repo instead of org. Act: load. Assert: a repo entity with owner and name."""
    valid_config.update(org="", repo="canonical/garm-operator")

    config = load_config(valid_config, secret_reader)

    assert config.scaleset.entity.kind == "repo"
    assert config.scaleset.entity.owner == "canonical"
    assert config.scaleset.entity.repo == "garm-operator"


def test_image_option_is_kept_as_override(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: the image option set. Act: load. Assert: it is the image override."""
    valid_config["image"] = " noble-x64-2026 "

    config = load_config(valid_config, secret_reader)

    assert config.image_override == "noble-x64-2026"


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("name", "", "config 'name' is not set: name the scale set"),
        ("name", "Small", "config 'name' is invalid: must be 1-40 characters of a-z, 0-9 and '-'"),
        ("name", "1small", "starting with a letter"),
        ("name", "a" * 41, "config 'name' is invalid: must be 1-40 characters"),
        ("name", "small_set", "config 'name' is invalid"),
        ("labels", "", "config 'labels' is not set: give the runners labels"),
        ("labels", " , ,", "config 'labels' is not set"),
        ("labels", "ok,has space", "config 'labels' has an invalid label 'has space': each label"),
        ("labels", "x" * 65, "each label must be 1-64 characters"),
        ("labels", "a&b", "config 'labels' has an invalid label 'a&b'"),
        ("labels", ",".join(f"l{i}" for i in range(33)), "has more than 32 labels: remove some"),
        ("flavor", "", "config 'flavor' is not set: name an OpenStack flavor"),
        ("flavor", "bad\tflavor", "config 'flavor' is invalid: must be 1-255 printable"),
        ("image", "has space", "config 'image' is invalid: must be an image name or id"),
        ("os-arch", "x86_64", "config 'os-arch' is invalid: input should be 'amd64', 'arm64'"),
        ("min-idle-runners", -1, "config 'min-idle-runners' is invalid: input should be greater"),
        ("max-runners", 0, "config 'max-runners' is invalid: input should be greater than or"),
        ("max-runners", 10_001, "config 'max-runners' is invalid: input should be less than"),
        ("runner-group", "my group", "config 'runner-group' is invalid: must be 1-64 characters"),
        ("org", "-canonical", "config 'org' is invalid: must be a GitHub account name"),
        ("org", "a--b", "config 'org' is invalid: must be a GitHub account name"),
        ("openstack-auth-url", "", "config 'openstack-auth-url' is not set: give the keystone"),
        ("openstack-auth-url", "ftp://keystone/v3", "is invalid: must be an http:// or https://"),
        ("openstack-auth-url", "https://", "config 'openstack-auth-url' is invalid: must be an"),
        ("openstack-auth-url", "keystone:5000", "config 'openstack-auth-url' is invalid"),
        ("openstack-auth-url", "https://k:notaport/v3", "config 'openstack-auth-url' is invalid"),
        ("openstack-username", "", "config 'openstack-username' is not set"),
        ("openstack-password", "", "config 'openstack-password' is not set: juju add-secret"),
        ("openstack-project-name", "", "config 'openstack-project-name' is not set"),
        ("openstack-user-domain-name", "", "config 'openstack-user-domain-name' is not set"),
        ("openstack-project-domain-name", "", "config 'openstack-project-domain-name' is not"),
        ("openstack-region-name", "x" * 256, "config 'openstack-region-name' is invalid"),
        ("openstack-network", "", "config 'openstack-network' is not set: name the OpenStack"),
        ("github-app-id", None, "config 'github-app-id' is not set: give the GitHub App's id"),
        ("github-app-id", 0, "config 'github-app-id' is invalid: input should be greater"),
        ("github-app-installation-id", None, "config 'github-app-installation-id' is not set"),
        ("github-app-installation-id", -5, "config 'github-app-installation-id' is invalid"),
        ("github-app-private-key", "", "config 'github-app-private-key' is not set: juju add"),
        ("name", "small-", "config 'name' is invalid: must be 1-40 characters"),
        ("runner-http-proxy", "squid:3128", "config 'runner-http-proxy' is invalid: must be an"),
        ("aproxy-exclude-addresses", "10.0.0.0/8,x", "'aproxy-exclude-addresses' is invalid"),
        ("aproxy-exclude-addresses", "::1", "is invalid: must be IPv4 addresses or CIDRs"),
        ("aproxy-redirect-ports", "80,70000", "'aproxy-redirect-ports' is invalid: must be"),
        ("aproxy-redirect-ports", " , ", "is invalid: value should have at least 1"),
        ("dockerhub-mirror", "mirror.internal", "config 'dockerhub-mirror' is invalid: must be"),
        ("otel-collector-endpoint", "grpc://o:4317", "'otel-collector-endpoint' is invalid"),
        ("pre-job-script", "x" * 16385, "config 'pre-job-script' is invalid: must be at most"),
        ("pre-install-scripts", "[1]", "'pre-install-scripts' is invalid: must be a JSON object"),
        ("pre-install-scripts", "{bad", "'pre-install-scripts' is invalid: must be a JSON"),
        ("pre-install-scripts", '{"a/b": "x"}', "'pre-install-scripts' is invalid: script names"),
        ("pre-install-scripts", '{"a": 1}', "'pre-install-scripts' is invalid: input should be"),
    ],
)
def test_each_option_names_itself_and_the_fix(
    valid_config: dict[str, Any], secret_reader: Reader, option: str, value: Any, expected: str
):
    """Arrange: one bad option. Act: load. Assert: one problem naming the option and the fix."""
    if value is None:
        del valid_config[option]
    else:
        valid_config[option] = value

    problems = _problems(valid_config, secret_reader)

    assert len(problems) == 1, problems
    assert expected in problems[0]


@pytest.mark.parametrize(
    "repo",
    ["canonical", "canonical/", "/garm", "canonical/garm/x", "canonical/..", "can onical/garm"],
)
def test_repo_must_be_owner_slash_name(
    valid_config: dict[str, Any], secret_reader: Reader, repo: str
):
    """Arrange: a malformed repo. Act: load. Assert: 'repo' is named as invalid."""
    valid_config.update(org="", repo=repo)

    problems = _problems(valid_config, secret_reader)

    assert len(problems) == 1
    assert problems[0].startswith("config 'repo' is invalid: must be")


def test_org_and_repo_together_are_refused(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: both org and repo. Act: load. Assert: told to keep exactly one."""
    valid_config["repo"] = "canonical/garm"

    problems = _problems(valid_config, secret_reader)

    assert problems == [
        "config 'org' and 'repo' are both set: keep one, e.g. juju config <app> org=''"
    ]


def test_neither_org_nor_repo_is_refused(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: no org, no repo. Act: load. Assert: told to set exactly one."""
    valid_config["org"] = ""

    problems = _problems(valid_config, secret_reader)

    assert problems == [
        "config 'org' is not set: "
        "set exactly one of 'org' (an organization) or 'repo' (owner/name)"
    ]


def test_min_idle_above_max_is_refused(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: min-idle-runners above max-runners. Act: load. Assert: both values and the fix."""
    valid_config.update({"min-idle-runners": 5, "max-runners": 3})

    problems = _problems(valid_config, secret_reader)

    assert problems == [
        "config 'min-idle-runners' (5) exceeds 'max-runners' (3): "
        "lower min-idle-runners or raise max-runners"
    ]


def test_unreadable_secret_is_reported(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: a password secret id nobody granted. Act: load. Assert: option and fix named."""
    valid_config["openstack-password"] = "secret:unknown0000000000000"

    problems = _problems(valid_config, secret_reader)

    assert problems == [
        "config 'openstack-password' names secret secret:unknown0000000000000, "
        "which this application cannot read"
    ]


@pytest.mark.parametrize(
    ("secret_id", "content", "option"),
    [
        ("secret:d1n3kb7mp25c78a8ob30", {"pass": "x"}, "openstack-password"),
        ("secret:d1n3kb7mp25c78a8ob3g", {"key": "x"}, "github-app-private-key"),
    ],
)
def test_secret_without_the_documented_key_is_reported(
    valid_config: dict[str, Any],
    secret_reader: Reader,
    user_secrets: dict[str, dict[str, str]],
    secret_id: str,
    content: dict[str, str],
    option: str,
):
    """Arrange: a secret lacking its key. Act: load. Assert: the option and the key are named."""
    user_secrets[secret_id] = content

    problems = _problems(valid_config, secret_reader)

    assert len(problems) == 1
    assert problems[0].startswith(f"config '{option}' names secret {secret_id}, which has no key")


def test_empty_password_is_refused_without_echo(
    valid_config: dict[str, Any], secret_reader: Reader, user_secrets: dict[str, dict[str, str]]
):
    """Arrange: an over-long password. Act: load. Assert: refused, the value not in the text."""
    user_secrets["secret:d1n3kb7mp25c78a8ob30"] = {"password": "p" * 5000}

    problems = _problems(valid_config, secret_reader)

    assert problems == [
        "config 'openstack-password' names secret secret:d1n3kb7mp25c78a8ob30: "
        "the password must be 1-4096 characters"
    ]


def test_pkcs8_key_is_refused_with_conversion_command(
    valid_config: dict[str, Any],
    secret_reader: Reader,
    user_secrets: dict[str, dict[str, str]],
    pkcs8_pem: str,
):
    """Arrange: a PKCS#8 App key. Act: load. Assert: refused with the openssl conversion."""
    user_secrets["secret:d1n3kb7mp25c78a8ob3g"] = {"private-key": pkcs8_pem}

    problems = _problems(valid_config, secret_reader)

    assert len(problems) == 1
    assert problems[0].startswith("config 'github-app-private-key' names secret")
    assert "PKCS#8" in problems[0]
    assert "openssl pkcs8 -in key.pem -traditional -nocrypt" in problems[0]
    assert "openssl rsa -in key.pem -traditional" in problems[0]
    assert pkcs8_pem.splitlines()[1] not in problems[0]


@pytest.mark.parametrize(
    "key",
    [
        "not a key",
        "-----BEGIN RSA PRIVATE KEY-----\nnot base64!\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
        "x" * 20000,
    ],
)
def test_malformed_private_key_is_refused(
    valid_config: dict[str, Any],
    secret_reader: Reader,
    user_secrets: dict[str, dict[str, str]],
    key: str,
):
    """Arrange: a secret holding no usable PKCS#1 key. Act: load. Assert: the option is named."""
    user_secrets["secret:d1n3kb7mp25c78a8ob3g"] = {"private-key": key}

    problems = _problems(valid_config, secret_reader)

    assert len(problems) == 1
    assert problems[0].startswith("config 'github-app-private-key' names secret")


def test_crlf_key_is_normalised(
    valid_config: dict[str, Any],
    secret_reader: Reader,
    user_secrets: dict[str, dict[str, str]],
    pkcs1_pem: str,
):
    """Arrange: the key with CRLF line ends and blank edges. Act: load. Assert: LF, one ending."""
    user_secrets["secret:d1n3kb7mp25c78a8ob3g"] = {
        "private-key": "\n" + pkcs1_pem.replace("\n", "\r\n") + "\n\n"
    }

    config = load_config(valid_config, secret_reader)

    assert config.github_app_private_key == pkcs1_pem


def test_every_problem_is_listed_in_option_order(secret_reader: Reader):
    """Arrange: an empty config. Act: load. Assert: every required option, in option order."""
    problems = _problems({}, secret_reader)

    options = [problem.split("'")[1] for problem in problems]
    assert options == [
        "name",
        "labels",
        "flavor",
        "org",
        "openstack-auth-url",
        "openstack-username",
        "openstack-password",
        "openstack-project-name",
        "openstack-user-domain-name",
        "openstack-project-domain-name",
        "openstack-network",
        "github-app-id",
        "github-app-installation-id",
        "github-app-private-key",
    ]


def test_runner_options_are_loaded_and_published(
    valid_config: dict[str, Any], secret_reader: Reader
):
    """Arrange: every runner option set, with spaces around list items.

    Act: load and build the relation data. Assert: trimmed, typed values in a version-2 databag.
    """
    valid_config |= {
        "runner-http-proxy": "http://squid.internal:3128",
        "aproxy-exclude-addresses": "10.0.0.0/8, 192.168.1.10",
        "aproxy-redirect-ports": "80,443, 8000-9000",
        "dockerhub-mirror": "https://mirror.internal",
        "otel-collector-endpoint": "http://otel.internal:4318",
        "pre-job-script": "echo hi",
        "pre-install-scripts": '{"10-apt": "apt-get install -y jq"}',
    }

    config = load_config(valid_config, secret_reader)
    databag = config.to_relation_data(
        image="img", password_secret_id="secret:a", private_key_secret_id="secret:b"
    ).to_databag()

    assert config.runner.aproxy_exclude_addresses == ("10.0.0.0/8", "192.168.1.10")
    assert config.runner.aproxy_redirect_ports == ("80", "443", "8000-9000")
    assert config.runner.pre_install_scripts == {"10-apt": "apt-get install -y jq"}
    assert databag["version"] == "2"
    assert "squid.internal" in databag["runner"]


def test_unset_runner_options_publish_version_1(
    valid_config: dict[str, Any], secret_reader: Reader
):
    """Arrange: no runner option set. Act: load and serialise.

    Assert: the default redirect ports, and a version-1 databag without a runner key.
    """
    config = load_config(valid_config, secret_reader)
    databag = config.to_relation_data(
        image="img", password_secret_id="secret:a", private_key_secret_id="secret:b"
    ).to_databag()

    assert config.runner.aproxy_redirect_ports == ("80", "443")
    assert databag["version"] == "1"
    assert "runner" not in databag


def test_script_contents_are_never_echoed(valid_config: dict[str, Any], secret_reader: Reader):
    """Arrange: a pre-install script with a bad name and a token in its body. Act: load.

    Assert: the problem names the option, not the script's content.
    """
    valid_config["pre-install-scripts"] = '{"../evil": "TOKEN=ghp_leak"}'

    problems = _problems(valid_config, secret_reader)

    assert len(problems) == 1
    assert "ghp_leak" not in problems[0]


def test_min_idle_schedule_is_published_in_the_runner_options(
    valid_config: dict[str, Any], secret_reader: Reader
):
    """Arrange: a schedule within max-runners. Act: load. Assert: published as given."""
    valid_config["min-idle-schedule"] = "Mon-Fri 08:00-18:00 Europe/Berlin=6; default=1"

    config = load_config(valid_config, secret_reader)

    assert config.runner.min_idle_schedule == "Mon-Fri 08:00-18:00 Europe/Berlin=6; default=1"


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        ("Mon-Fri 08:00-18:00 Europe/Berlin", "expected <window>=<count>"),
        ("Weekdays 08:00-18:00 UTC=2", "days are Mon..Sun"),
        ("Mon 25:00-26:00 UTC=2", "times are HH:MM"),
        ("Mon-Fri 08:00-18:00 Nowhere/City=2", "unknown time zone"),
    ],
)
def test_unreadable_schedule_names_the_option(
    valid_config: dict[str, Any], secret_reader: Reader, schedule: str, words: str
):
    """Arrange: a schedule that cannot be read. Act: load. Assert: one problem naming it."""
    valid_config["min-idle-schedule"] = schedule

    (problem,) = _problems(valid_config, secret_reader)

    assert problem.startswith("config 'min-idle-schedule'")
    assert words in problem
