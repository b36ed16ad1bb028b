"""The debug-ssh relay's publication: what is accepted, what is ignored."""

from __future__ import annotations

import dataclasses
import json

import pytest
from ops import testing

import unit.walks.serving as serving_walks
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from relations import debug_ssh
from relations.debug_ssh import DebugSsh, parse_unit_data
from relations.peers.keys import DEBUG_SSH_RELAY_KEY
from unit.walks.serving import RELAY, Serving, garm_objects

app_key = serving_walks.app_key
serving = serving_walks.serving
sim = serving_walks.sim

VALID = {
    "host": "tmate.internal",
    "port": "10022",
    "rsa_fingerprint": "SHA256:" + "a" * 43,
    "ed25519_fingerprint": "SHA256:" + "B" * 42 + "/",
}


def test_a_valid_publication_becomes_the_runners_variables():
    """Arrange: a complete publication. Act: parse. Assert: the four TMATE_SERVER_* entries."""
    relay = parse_unit_data(VALID)

    assert relay == DebugSsh(
        "tmate.internal", 10022, VALID["rsa_fingerprint"], VALID["ed25519_fingerprint"]
    )
    assert relay is not None
    assert relay.env_entries()["TMATE_SERVER_PORT"] == "10022"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("host", ""),
        ("host", "evil host"),
        ("host", "a\nTMATE_SERVER_HOST=x"),
        ("port", "0"),
        ("port", "65536"),
        ("port", "22a"),
        ("rsa_fingerprint", "MD5:aa:bb"),
        ("ed25519_fingerprint", "SHA256:short"),
        ("ed25519_fingerprint", "SHA256:" + "a" * 43 + "\nX=1"),
    ],
)
def test_a_malformed_field_makes_the_publication_ignored(key: str, value: str):
    """Arrange: one field missing or malformed (e.g. a newline that would add a variable).

    Act: parse. Assert: None, so nothing reaches the runners.
    """
    assert parse_unit_data({**VALID, key: value}) is None


# --- Found by the hostile-input review (issue #20): relay hosts ---
# (was test_debug_ssh_hostile.py)
# The debug-ssh relay refuses hosts on the runner itself or the cloud's metadata (issue #20).
#
# Every runner would open its debug session, with the job's screen, to whatever the host names;
# a relay unit publishing 127.0.0.1 or 169.254.169.254 must not reach the runner templates. And
# the last valid relay lives in the peer relation's application data, so a new leader keeps it.


# The bad-value table's fixtures, shared rather than copied.

REFUSED_HOSTS = (
    "127.0.0.1",
    "127.8.9.10",
    "127.1",
    "2130706433",
    "0x7f.0.0.1",
    "0.0.0.0",  # noqa: S104 - a host the relay refuses, not one anything binds
    "169.254.169.254",
    "169.254.0.1",
    "fe80::1",
    "fe80::a:b:c:d",
    "fd00:ec2::254",
    "100.100.100.200",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "224.0.0.1",
    "localhost",
    "LOCALHOST.",
    "relay.localhost",
    "metadata",
    "metadata.google.internal",
    "instance-data.ec2.internal",
)
ACCEPTED_HOSTS = ("10.1.2.3", "192.168.1.5", "2001:db8::1", "relay.example.com", "tmate-1")


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_a_local_or_metadata_host_is_refused_naming_the_field(host: str):
    """Arrange: a relay publication with a valid port and fingerprints. Act: check the host.

    Assert: refused, the problem naming `host` (and why, for a host of a valid form).
    """
    problem = debug_ssh.unit_data_problem({**RELAY, "host": host})

    assert problem in (
        "host is a loopback, link-local or cloud-metadata address; refused",
        "host missing or malformed",  # the form alone refuses ::ffff:... and a trailing dot
    )
    assert debug_ssh.parse_unit_data({**RELAY, "host": host}) is None


@pytest.mark.parametrize("host", ACCEPTED_HOSTS)
def test_a_relay_elsewhere_is_accepted(host: str):
    """Arrange: a relay on a private, global or named host. Act: check. Assert: no problem."""
    assert debug_ssh.unit_data_problem({**RELAY, "host": host}) is None


def test_a_new_leader_keeps_the_last_valid_relay(
    serving: Serving, sim: GarmSim, workload: RecordingWorkload
):
    """Arrange: the leader gave the runners a valid relay; leadership moves to a fresh unit.

    The new leader never saw the relay (no unit-local state); the relay unit then publishes
    169.254.169.254.
    Act: relation-changed on debug-ssh on the new leader.
    Assert: the runner templates keep the valid relay: no write reached GARM; the peer app data
    still holds it.
    """
    ctx = serving.ctx
    relay = testing.Relation("debug-ssh", remote_units_data={0: dict(RELAY)})
    peers = testing.PeerRelation("garm-peers")
    state = dataclasses.replace(serving.state, relations={*serving.state.relations, relay, peers})
    with_relay = ctx.run(ctx.on.relation_changed(relay, remote_unit=0), state)
    sim.clock.advance(1.1)
    with_relay = ctx.run(ctx.on.update_status(), with_relay)
    # The template change starts a rolling refresh of the runners (ADR 0022): let it finish.
    for _ in range(10):
        if "refreshing" not in with_relay.unit_status.message:
            break
        sim.advance(61)
        with_relay = ctx.run(ctx.on.update_status(), with_relay)
    given = garm_objects(sim)
    assert given != serving.garm  # the relay reached the runners' templates
    kept = with_relay.get_relation(peers.id).local_app_data[DEBUG_SSH_RELAY_KEY]
    sim.reset_log()
    hostile = dataclasses.replace(
        relay, remote_units_data={0: {**RELAY, "host": "169.254.169.254"}}
    )
    new_leader = dataclasses.replace(
        with_relay,
        relations={*(r for r in with_relay.relations if r.id != relay.id), hostile},
        stored_states=frozenset(),
    )

    out = ctx.run(ctx.on.relation_changed(hostile, remote_unit=0), new_leader)

    assert sim.write_count() == 0
    assert garm_objects(sim) == given
    assert json.loads(out.get_relation(peers.id).local_app_data[DEBUG_SSH_RELAY_KEY]) == (
        json.loads(kept)
    )
    assert json.loads(kept)["host"] == "10.1.2.3"


def test_removing_the_relay_clears_what_the_leader_kept(serving: Serving, sim: GarmSim):
    """Arrange: the leader kept a valid relay. Act: the debug-ssh relation is removed.

    Assert: the peer app data says "no relay" (a later invalid relay never brings it back).
    """
    ctx = serving.ctx
    relay = testing.Relation("debug-ssh", remote_units_data={0: dict(RELAY)})
    peers = testing.PeerRelation("garm-peers")
    state = dataclasses.replace(serving.state, relations={*serving.state.relations, relay, peers})
    # The first hook with the peer relation takes GARM's lease; GARM runs from the next one.
    leased = ctx.run(ctx.on.update_status(), state)
    with_relay = ctx.run(ctx.on.relation_changed(relay, remote_unit=0), leased)
    without = dataclasses.replace(
        with_relay, relations={r for r in with_relay.relations if r.id != relay.id}
    )

    out = ctx.run(ctx.on.update_status(), without)

    assert json.loads(out.get_relation(peers.id).local_app_data[DEBUG_SSH_RELAY_KEY]) == {}
