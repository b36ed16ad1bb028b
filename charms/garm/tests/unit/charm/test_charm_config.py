"""charm_config: config validation and the database-switch rule."""

from __future__ import annotations

import datetime

import pytest

from charm_config import (
    InvalidConfigError,
    backend_switch_problem,
    parse_config,
    parse_duration,
)


def test_defaults_are_valid():
    """Arrange: charmcraft.yaml's defaults. Act: parse. Assert: the documented values."""
    config = parse_config(
        {
            "external-url": "",
            "port": 9997,
            "log-level": "info",
            "drain-timeout": "7h",
            "handover-grace": "60s",
            "reconcile-interval": "1m",
            "handover-timeout": "30m",
            "refresh-surge": 1,
            "runner-stuck-timeout": "30m",
            "changeover-surge": 40,
            "max-writes-per-pass": 50,
            "backup-keep": 10,
        }
    )

    assert config.port == 9997
    assert config.reconcile_interval == datetime.timedelta(minutes=1)
    assert config.handover_timeout == datetime.timedelta(minutes=30)
    assert config.drain_timeout == datetime.timedelta(hours=7)
    assert config.handover_grace == datetime.timedelta(seconds=60)
    assert config.refresh_surge == 1
    assert config.runner_stuck_timeout == datetime.timedelta(minutes=30)
    assert (config.changeover_surge, config.max_writes_per_pass) == (40, 50)
    assert config.backup_keep == 10
    assert config.base_url("10.1.2.3") == "http://10.1.2.3:9997"


def test_external_url_wins_and_loses_its_trailing_slash():
    """Arrange: an external URL with a path. Act: parse. Assert: used as the base, no slash."""
    config = parse_config({"external-url": "https://ci.example.com/garm/"})

    assert config.base_url("10.1.2.3") == "https://ci.example.com/garm"


def test_ipv6_unit_address_is_bracketed():
    """Arrange: no external URL. Act: base URL for an IPv6 address. Assert: bracketed."""
    assert parse_config({}).base_url("fd00::5") == "http://[fd00::5]:9997"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7h", datetime.timedelta(hours=7)),
        ("90m", datetime.timedelta(minutes=90)),
        ("60s", datetime.timedelta(seconds=60)),
        ("1h30m", datetime.timedelta(minutes=90)),
    ],
)
def test_durations(text: str, expected: datetime.timedelta):
    """Arrange: a duration string. Act: parse it. Assert: the timedelta."""
    assert parse_duration(text, datetime.timedelta(days=1)) == expected


@pytest.mark.parametrize("text", ["0", "0s", "0m"])
def test_zero_reconcile_interval_means_hooks_only(text: str):
    """Arrange: a zero interval. Act: parse. Assert: accepted as zero (no tick)."""
    assert parse_config({"reconcile-interval": text}).reconcile_interval == datetime.timedelta(0)


@pytest.mark.parametrize(
    ("raw", "option"),
    [
        ({"port": 0}, "port"),
        ({"port": 65536}, "port"),
        ({"log-level": "verbose"}, "log-level"),
        ({"external-url": "//garm"}, "external-url"),
        ({"external-url": "https://"}, "external-url"),
        ({"external-url": "https://garm.example.com/?x=1"}, "external-url"),
        ({"drain-timeout": "0s"}, "drain-timeout"),
        ({"drain-timeout": "1d"}, "drain-timeout"),
        ({"handover-grace": ""}, "handover-grace"),
        ({"reconcile-interval": "1d"}, "reconcile-interval"),
        ({"handover-timeout": "0"}, "handover-timeout"),
        ({"reconcile-interval": ""}, "reconcile-interval"),
        ({"refresh-surge": 0}, "refresh-surge"),
        ({"refresh-surge": 51}, "refresh-surge"),
        ({"changeover-surge": -1}, "changeover-surge"),
        ({"changeover-surge": True}, "changeover-surge"),
        ({"max-writes-per-pass": 10_001}, "max-writes-per-pass"),
        ({"runner-stuck-timeout": "1d"}, "runner-stuck-timeout"),
        ({"backup-keep": 0}, "backup-keep"),
        ({"backup-keep": 1001}, "backup-keep"),
        ({"backup-keep": "10"}, "backup-keep"),
        ({"backup-keep": True}, "backup-keep"),
    ],
)
def test_bad_values_name_the_option(raw: dict[str, object], option: str):
    """Arrange: one bad option. Act: parse. Assert: the error names it, not the value."""
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(raw)

    assert caught.value.option == option
    assert str(caught.value).startswith(f"invalid config {option}:")


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("drain-timeout", "9999999999999999999999h", "must be a duration such as 7h"),
        ("drain-timeout", "999999999h", "must be at most 144h"),
        ("drain-timeout", "145h", "must be at most 144h"),
        ("drain-timeout", "1" * 5000 + "s", "must be a duration such as 7h"),
        ("handover-grace", "25h", "must be at most 24h"),
        ("handover-grace", "999999999s", "must be at most 24h"),
        ("external-url", "https://garm .example.com", "must not contain spaces or control"),
        ("external-url", "https://garm.example.com/a\tb", "must not contain spaces or control"),
        ("external-url", "https://garm.example.com/\x00", "must not contain spaces or control"),
        ("external-url", "https://garm.example.com/\nx", "must not contain spaces or control"),
        ("external-url", "https://admin:pw@garm.example.com", "must not carry a user"),
        ("external-url", "https://evil@garm.example.com", "must not carry a user"),
        ("external-url", "https://garm.example.com:0", "must have a port of 1-65535"),
        ("external-url", "https://garm.example.com:65536", "must have a port of 1-65535"),
        ("external-url", "https://garm.example.com:99999999999", "must have a port of 1-65535"),
        ("external-url", "https://garm.example.com:x", "must have a port of 1-65535"),
    ],
)
def test_out_of_bounds_values_say_what_to_do(option: str, value: str, reason: str):
    """Arrange: a value out of bounds (never an OverflowError). Act: parse.

    Assert: InvalidConfigError naming the option and the rule, never the value.
    """
    with pytest.raises(InvalidConfigError) as caught:
        parse_config({option: value})

    assert str(caught.value) == f"invalid config {option}: {reason}" or (
        str(caught.value).startswith(f"invalid config {option}: {reason}")
    )
    assert "pw@" not in str(caught.value)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("drain-timeout", "144h"),
        ("handover-grace", "24h"),
        ("external-url", "https://garm.example.com:8443/prefix"),
        ("external-url", "http://[fd00::5]:9997"),
    ],
)
def test_values_at_the_bounds_are_accepted(option: str, value: str):
    """Arrange: a value at the upper bound or a full URL. Act: parse. Assert: no error."""
    parse_config({option: value})


@pytest.mark.parametrize(
    ("wanted", "recorded", "sqlite_has_state", "has_objects", "blocked"),
    [
        ("sqlite3", "", False, None, False),
        ("postgresql", "postgresql", False, True, False),
        ("postgresql", "sqlite3", False, True, False),
        ("postgresql", "sqlite3", True, False, False),
        ("postgresql", "sqlite3", True, True, True),
        ("postgresql", "sqlite3", True, None, True),
        ("sqlite3", "postgresql", False, True, True),
        ("sqlite3", "postgresql", False, False, False),
    ],
)
def test_backend_switch_rule(
    wanted: str, recorded: str, sqlite_has_state: bool, has_objects: bool | None, blocked: bool
):
    """Arrange: where GARM's data is and what is asked for. Act: check the switch.

    Assert: blocked exactly when data would be lost (unknown counts as data).
    """
    problem = backend_switch_problem(
        wanted, recorded, sqlite_has_state=sqlite_has_state, garm_has_objects=has_objects
    )

    assert (problem is not None) is blocked
    if problem is not None:
        assert len(problem) <= 120
        assert "database" in problem


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"port": 0}, "must be 1024-65535 (GARM runs unprivileged)"),
        ({"port": "9997"}, "must be a valid integer"),
        ({"port": True}, "must be a valid integer"),
        ({"log-level": "verbose"}, "must be 'debug', 'info', 'warn' or 'error'"),
        ({"drain-timeout": 7}, "must be a string"),
    ],
)
def test_wrong_kinds_of_value_say_the_rule(raw: dict[str, object], reason: str):
    """Arrange: a value of the wrong kind or out of range. Act: parse.

    Assert: the option and the rule, as the status shows them.
    """
    option = next(iter(raw))

    with pytest.raises(InvalidConfigError) as caught:
        parse_config(raw)

    assert str(caught.value) == f"invalid config {option}: {reason}"


def test_the_first_bad_option_in_config_order_is_named():
    """Arrange: two bad options. Act: parse. Assert: the one listed first is named."""
    with pytest.raises(InvalidConfigError) as caught:
        parse_config({"reconcile-interval": "x", "port": 0, "something-else": "ignored"})

    assert caught.value.option == "port"


def test_reading_the_config_loads_no_pydantic():
    """Arrange: a fresh interpreter. Act: import charm_config and parse the defaults.

    Assert: pydantic was not loaded (every hook reads the config; performance.md).
    """
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    import charm_config  # noqa: PLC0415

    code = (
        "import sys, charm_config\ncharm_config.parse_config({})\nprint('pydantic' in sys.modules)"
    )

    output = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(charm_config.__file__).parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert output.strip() == "False"
