r"""The one number parser (ADR 0034): ASCII digits only, ranges, units; never a crash.

`str.isdigit()` is true for "²" and `int("²")` raises; `int()` and `\d` read "٣" (Arabic-Indic
three). The charm's own parser (`text_numbers`) and the relation library's copy, which the
configurator uses, must read every text alike.
"""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charm_config import InvalidConfigError, parse_config
from charms.garm_configurator.v0 import garm_configurator as interface
from relations import database, debug_ssh
from text_numbers import parse_duration, parse_whole_number
from unit.walks.serving import RELAY

NOT_ASCII_DIGITS = (
    "\u00b2",  # superscript two: isdigit() true, int() raises
    "1\u00b2",
    "\u00b9\u2070",  # superscript 10
    "\u0663",  # Arabic-Indic three: int() reads 3
    "\uff11",  # fullwidth one: int() reads 1
    "\U0001d7d7",  # mathematical bold nine
    "\u216b",  # Roman numeral twelve (Nl)
    "1_0",
    " 7",
    "7 ",
    "+7",
    "-7",
    "",
    "0x10",
    "9" * 5000,  # int() refuses more than 4300 digits
)


@pytest.mark.parametrize("text", NOT_ASCII_DIGITS, ids=ascii)
def test_only_ascii_digits_are_a_number(text: str):
    """Arrange: text int() or isdigit() takes for a number. Act: parse. Assert: ValueError."""
    with pytest.raises(ValueError, match=r"must be a whole number 0-65535 \(digits 0-9\)"):
        parse_whole_number(text, maximum=65535)
    with pytest.raises(ValueError, match=r"must be a whole number 0-65535 \(digits 0-9\)"):
        interface.parse_whole_number(text, maximum=65535)


@pytest.mark.parametrize(("text", "number"), [("0", 0), ("007", 7), ("65535", 65535)])
def test_ascii_digits_in_range_are_read(text: str, number: int):
    """Arrange: ASCII digits in range. Act: parse. Assert: the number, by both parsers."""
    assert parse_whole_number(text, maximum=65535) == number
    assert interface.parse_whole_number(text, maximum=65535) == number


@pytest.mark.parametrize("text", ["65536", "0", "9999999"])
def test_out_of_range_names_the_range(text: str):
    """Arrange: digits outside 1-65535. Act: parse. Assert: the error gives the range."""
    with pytest.raises(ValueError, match="1-65535"):
        parse_whole_number(text, minimum=1, maximum=65535)


def _reading(parse: object, text: str) -> int | str:
    try:
        return parse(text, minimum=1, maximum=65535)  # type: ignore[operator]
    except ValueError as error:
        return str(error)


@given(st.one_of(st.text(), st.text(alphabet=st.characters(categories=("N",)))))
def test_the_library_reads_every_text_as_the_charm_does(text: str):
    """Arrange: any text, biased to Unicode digits. Act: both parsers read it.

    Assert: the same number or the same error, never another exception.
    """
    assert _reading(parse_whole_number, text) == _reading(interface.parse_whole_number, text)


@pytest.mark.parametrize("text", ["\u0663h", "\uff11h", "1\u00b2m", "\u00b2s", "1h\u0663m"])
def test_a_duration_of_other_digits_is_refused(text: str):
    """Arrange: a duration written with non-ASCII digits. Act: parse. Assert: ValueError."""
    with pytest.raises(ValueError, match="must be a duration such as 7h"):
        parse_duration(text, datetime.timedelta(days=7))


@pytest.mark.parametrize("value", ["1s", "60s", "9m59s"])
def test_runner_stuck_timeout_below_ten_minutes_is_refused(value: str):
    """Arrange: a stuck timeout under 10 minutes. Act: parse the config.

    Assert: InvalidConfigError naming the option and its bound.
    """
    with pytest.raises(InvalidConfigError) as caught:
        parse_config({"runner-stuck-timeout": value})

    assert str(caught.value) == "invalid config runner-stuck-timeout: must be 0 or at least 10m"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", datetime.timedelta(0)), ("10m", datetime.timedelta(minutes=10))],
)
def test_runner_stuck_timeout_off_or_from_ten_minutes_is_read(
    value: str, expected: datetime.timedelta
):
    """Arrange: 0 (off) or exactly 10m. Act: parse. Assert: read as given."""
    assert parse_config({"runner-stuck-timeout": value}).runner_stuck_timeout == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[v1.fe]:9997", "DNS name or an IP address"),  # IPvFuture
        ("http://[fe80::1%25eth0]:9997", "DNS name or an IP address"),  # a zone is local
        ("http://2130706433:9997", "DNS name or an IP address"),  # 127.0.0.1, inet_aton
        ("http://127.1:9997", "DNS name or an IP address"),
        ("http://0x7f.0.0.1", "DNS name or an IP address"),
        ("http://010.0.0.1", "DNS name or an IP address"),  # octal to some readers
        ("http://garm.123", "DNS name or an IP address"),
        ("https://garm.example.com/%00", "control characters"),
        ("https://garm.example.com/a%0ab", "control characters"),
        ("https://garm.example.com:\u00b2", "port of 1-65535"),
        ("https://garm.example.com:\u0669\u0669\u0669\u0667", "port of 1-65535"),
        ("https://garm.example.com:+9997", "port of 1-65535"),
        ("http://[::1]:80:90", "port of 1-65535"),
        ("http://[fd00::5]x", "port of 1-65535"),
        ("http://[fd00::5]:\u00b2", "port of 1-65535"),
    ],
)
def test_external_url_refuses_futures_numbers_and_encoded_controls(url: str, reason: str):
    """Arrange: an external-url with a host no resolver reads alike, or a hidden NUL.

    Act: parse the config. Assert: InvalidConfigError naming external-url and the rule.
    """
    with pytest.raises(InvalidConfigError) as caught:
        parse_config({"external-url": url})

    assert str(caught.value).startswith("invalid config external-url: must ")
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    "url",
    ["http://10.1.2.3:9997", "http://[fd00::5]:9997", "https://garm1.example.com/ci%20x"],
)
def test_external_url_keeps_addresses_and_names(url: str):
    """Arrange: a dotted quad, an IPv6 literal, a name. Act: parse. Assert: kept as given."""
    assert parse_config({"external-url": url}).external_url == url


@pytest.mark.parametrize("port", ["\u00b2", "\u0662\u0662", "22\u00b2", "+22"])
def test_a_relay_port_of_other_digits_is_malformed_not_a_crash(port: str):
    """Arrange: a relay publishing its port in non-ASCII digits. Act: check and parse.

    Assert: the port is named malformed and the relay is not used; nothing raises.
    """
    assert debug_ssh.unit_data_problem({**RELAY, "port": port}) == "port missing or malformed"
    assert debug_ssh.parse_unit_data({**RELAY, "port": port}) is None


@pytest.mark.parametrize("endpoint", ["db:\u00b2", "db:\u0665\u0664\u0663\u0662", "[::1]:\u00b2"])
def test_a_database_port_of_other_digits_is_refused_not_a_crash(endpoint: str):
    """Arrange: a database endpoint with a non-ASCII port. Act: parse it.

    Assert: InvalidDatabaseError naming the port.
    """
    with pytest.raises(database.InvalidDatabaseError, match="the endpoint's port is not 1-65535"):
        database.parse_endpoint(endpoint)
