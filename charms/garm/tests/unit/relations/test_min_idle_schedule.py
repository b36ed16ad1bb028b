"""A configurator's min-idle-schedule becomes the spec's min idle at the reconcile's time."""

from __future__ import annotations

import datetime
import json

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import published_databag
from relations.configurators import desired_from

SCHEDULE = "Mon-Fri 08:00-18:00 Europe/Berlin=3; default=0"
SECRETS = interface.ConfiguratorSecrets(openstack_password="pw", github_app_private_key="key")


def _publication(schedule: str) -> interface.GarmConfiguratorData:
    databag = published_databag(
        ("x64",), password_secret_id="secret:a", private_key_secret_id="secret:b"
    )
    databag |= {"version": "2", "runner": json.dumps({"min_idle_schedule": schedule})}
    return interface.parse_app_data(databag)


def test_office_hours_window_sets_min_idle_and_names_the_window():
    """Arrange: a publication with Berlin office hours = 3, default 0 (min-idle-runners 1).

    Act: build the spec on a Tuesday at 09:00 Berlin and at 20:00 Berlin.

    Assert: min idle 3 with the window named, then 0 with `default`.
    """
    data = _publication(SCHEDULE)
    office = datetime.datetime(2026, 12, 1, 8, 0, tzinfo=datetime.UTC)
    evening = datetime.datetime(2026, 12, 1, 19, 0, tzinfo=datetime.UTC)

    during, _, _ = desired_from("small", data, SECRETS, (), office)
    after, _, _ = desired_from("small", data, SECRETS, (), evening)

    assert (during.min_idle_runners, during.min_idle_window) == (
        3,
        "Mon-Fri 08:00-18:00 Europe/Berlin",
    )
    assert (after.min_idle_runners, after.min_idle_window) == (0, "default")


def test_without_a_schedule_min_idle_runners_applies():
    """Arrange: a version-1 publication (no schedule). Act: build the spec.

    Assert: the publication's min idle runners (1) and no window.
    """
    databag = published_databag(
        ("x64",), password_secret_id="secret:a", private_key_secret_id="secret:b"
    )

    spec, _, _ = desired_from("small", interface.parse_app_data(databag), SECRETS)

    assert (spec.min_idle_runners, spec.min_idle_window) == (1, "")
