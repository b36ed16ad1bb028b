"""What the charm stores in GARM stays the same across charm versions.

Live names and the marker in `extended_state` outlive the charm that wrote them: after an
upgrade the new charm must compute the same name and config hash for an unchanged spec, and read
every marker an older one wrote, or it would replace every scale set (or lose their drain
clocks). The other tests compute names with the same code they test; these pin the values.
(The names pinned here changed once, on purpose, when live names had to fit the OpenStack
provider's budget: ADR 0031.)
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

import pytest

from scaleset_reconciler.marker import Marker, config_hash, parse_marker
from scaleset_reconciler.naming import live_name, spec_generation, stem
from unit.walks.scalesets import ORG, make_spec

MOMENT = datetime.datetime(2026, 11, 30, 5, 52, 8, 62603, tzinfo=datetime.UTC)
STAMP = "2026-11-30T05:52:08.062603Z"


def test_live_names_are_pinned():
    """Arrange: the fixture spec and variants. Act: their live names.

    Assert: the recorded names: labels normalised (case, spaces, duplicates), the entity and
    a further attempt in the hash, attempt 0 left out; the generation key the marker records.
    """
    assert live_name(make_spec()) == "smal-x1br2"
    assert live_name(make_spec(labels=("X64 ", "Linux", "x64"))) == "smal-x1br2"
    assert live_name(make_spec(), attempt=0) == "smal-x1br2"
    assert live_name(make_spec(), attempt=2) == "smal-grgub"
    assert live_name(make_spec(entity=ORG)) == "smal-dawzd"
    assert spec_generation(make_spec()) == "9d3291215daa4c90"


@pytest.mark.parametrize(
    ("logical", "expected"),
    [
        ("a" * 70, "aaaa-sfd6n"),
        ("abcd-efgh-ijkl-mnop-qrst-uvwx", "abcd-lzjuv"),
        ("abcdefghijklm-opqrstuvwxyz", "abcd-hsdt5"),
        ("abc-abc", "abc-ehz64"),
    ],
)
def test_long_logical_names_get_a_pinned_cut_stem(logical: str, expected: str):
    """Arrange: a logical name. Act: its live name.

    Assert: the recorded name: the stem is the first 4 characters without a trailing dash, the
    hash tells names of one stem apart; 10 characters at most.
    """
    assert live_name(make_spec(name=logical)) == expected
    assert stem(logical) == expected.rsplit("-", 1)[0]
    assert len(expected) <= 10


def test_config_hashes_are_pinned():
    """Arrange: a spec without and with extra specs and a template. Act: config hashes.

    Assert: the recorded 16-character hashes; the order of extra specs does not matter.
    """
    assert config_hash(make_spec()) == "d0f71a21dcaa9f3b"
    assert config_hash(make_spec(extra_specs={"disk": 20}, template_name="t")) == (
        "fce124c954113161"
    )
    assert config_hash(make_spec(extra_specs={"b": 1, "a": 2})) == config_hash(
        make_spec(extra_specs={"a": 2, "b": 1})
    )


def test_the_marker_renders_to_the_pinned_text():
    """Arrange: a marker with every field, and a bare one. Act: render.

    Assert: compact JSON, keys sorted, UTC times with `Z`, zero and unset fields left out.
    """
    full = Marker(
        "small",
        "abc",
        retired_at=MOMENT,
        enabled_at=MOMENT,
        delete_failures=2,
        delete_retry_at=MOMENT,
        attempt=3,
        generation="9d3291215daa4c90",
    )

    assert full.render() == (
        '{"attempt":3,"config":"abc","delete-failures":2,'
        f'"delete-retry-at":"{STAMP}","enabled-at":"{STAMP}",'
        '"generation":"9d3291215daa4c90","logical":"small",'
        f'"managed-by":"garm-charm","retired-at":"{STAMP}"}}'
    )
    assert Marker("small").render() == '{"config":"","logical":"small","managed-by":"garm-charm"}'
    assert parse_marker(full.render()) == full


def test_a_marker_from_another_timezone_renders_in_utc():
    """Arrange: a marker retired at 06:52 at UTC+1. Act: render. Assert: 05:52 with `Z`."""
    plus_one = datetime.timezone(datetime.timedelta(hours=1))
    moment = MOMENT.astimezone(plus_one)

    assert f'"retired-at":"{STAMP}"' in Marker("small", retired_at=moment).render()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  ",
        "small",
        "[1]",
        "{not json",
        '"{}"',
        '{"managed-by":"garm-charm"}',
        '{"managed-by":"garm-charm","logical":""}',
        '{"managed-by":"garm-charm","logical":5}',
        '{"managed-by":"someone-else","logical":"small"}',
    ],
)
def test_what_the_charm_did_not_write_is_no_marker(text: str):
    """Arrange: extended states a person or another tool may have set. Act: parse.

    Assert: no marker, so the scale set counts as hand-made and is never touched.
    """
    assert parse_marker(text) is None


def test_malformed_marker_fields_read_as_unset():
    """Arrange: the charm's marker with a naive time, bad times, counts and config.

    Act: parse. Assert: a naive time is UTC; unreadable times, negative or non-integer counts
    and a non-string config or generation read as unset.
    """
    text = (
        '{"managed-by":"garm-charm","logical":"small","retired-at":"2026-11-30T05:52:08",'
        '"enabled-at":"yesterday","delete-retry-at":5,"delete-failures":-1,"attempt":"2",'
        '"config":5,"generation":7}'
    )

    marker = parse_marker(text)

    assert marker == Marker(
        "small", retired_at=datetime.datetime(2026, 11, 30, 5, 52, 8, tzinfo=datetime.UTC)
    )
    assert marker is not None
    assert marker.retired
    assert not Marker("small").retired


def test_a_marker_with_spaces_around_it_is_read():
    """Arrange: the charm's marker with leading blanks. Act: parse. Assert: it is read."""
    marker = parse_marker('  {"managed-by":"garm-charm","logical":"small","delete-failures":1}')

    assert marker == Marker("small", delete_failures=1)


@pytest.fixture
def kolkata_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's local time zone set to UTC+5:30 (the charm's host may have any)."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("kolkata_clock")
def test_a_marker_renders_in_utc_whatever_the_local_time_zone():
    """Arrange: the local time zone UTC+5:30; a marker retired at a UTC moment. Act: render.

    Assert: the time is written in UTC with `Z`, not in local time.
    """
    assert f'"retired-at":"{STAMP}"' in Marker("small", retired_at=MOMENT).render()


def test_a_marker_time_with_an_offset_keeps_its_moment():
    """Arrange: a marker whose retired-at has a +02:00 offset. Act: parse.

    Assert: the same moment (07:52 at +02:00 is 05:52 UTC), not 07:52 UTC.
    """
    text = (
        '{"managed-by":"garm-charm","logical":"small",'
        '"retired-at":"2026-11-30T07:52:08.062603+02:00"}'
    )

    marker = parse_marker(text)

    assert marker is not None
    assert marker.retired_at == MOMENT
