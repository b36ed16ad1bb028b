"""The peer relation's one room, `relations.peers` (ADR 0045).

Through ops.testing, with every `relation-set` the charm makes counted: a hook writes each peer
databag at most once, and only keys `relations.peers.keys` declares. Read from the source: no
module outside `relations/peers/` reaches a peer databag or names a key, and the package itself
names its keys only in `keys.py`.
"""

from __future__ import annotations

import ast
import collections
import datetime
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from ops import testing
from scenario.mocking import _MockModelBackend  # pyright: ignore[reportPrivateUsage]

import charm
from doubles.database_publication import database_relation, database_secret
from doubles.workload_double import RecordingWorkload
from garm_sim import GarmSim
from reconcile.bootstrap import ADMIN_LABEL, DB_PASSPHRASE_LABEL, JWT_SECRET_LABEL
from relations.peers import keys
from relations.peers.handover import HostClaim, stopped_for
from relations.peers.lease import LEASE_LENGTH, Lease
from relations.peers.pause import Maintenance
from workload.backup import BackupManifest

Ctx = testing.Context[charm.GarmCharm]

NOW = datetime.datetime(2026, 12, 2, 12, 0, tzinfo=datetime.UTC)
PASSWORD = "existing-admin-Password-9fK2mQ"
SRC = Path(__file__).resolve().parents[2] / "src"
PEERS = SRC / "relations" / "peers"
# What other modules may import from relations.peers: the relation's name (to observe its
# events), the adapter and the pure decisions; never a key.
PEERS_NAMES_OUTSIDE = frozenset({"RELATION", "PeerData", "lease", "handover", "pause"})


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The charm's clock stands at `NOW`."""
    monkeypatch.setattr(charm, "utc_now", lambda: NOW)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool, frozenset[str]]]:
    """Every `relation-set` of the hook: (relation id, app databag?, the keys written)."""
    made: list[tuple[int, bool, frozenset[str]]] = []
    relation_set = _MockModelBackend.relation_set

    def counted(
        self: _MockModelBackend,
        relation_id: int,
        data: Mapping[str, str],
        is_app: bool,
        **kwargs: Any,
    ) -> None:
        made.append((relation_id, is_app, frozenset(data)))
        relation_set(self, relation_id, data, is_app, **kwargs)

    monkeypatch.setattr(_MockModelBackend, "relation_set", counted)
    return made


def unit_state(
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
    peers: testing.PeerRelation,
    *,
    leader: bool = True,
    postgresql: bool = True,
) -> testing.State:
    """A unit on PostgreSQL (or SQLite) whose GARM secrets exist, with `peers`."""
    secret = database_secret()
    return testing.State(
        leader=leader,
        resources=resources,
        config=config,
        relations=[database_relation(secret), peers] if postgresql else [peers],
        secrets=[
            testing.Secret({"secret": "jwt-" + "k3J9xQ" * 8}, owner="app", label=JWT_SECRET_LABEL),
            testing.Secret(
                {"passphrase": "Xk3vQ9-rT7wLp2_Zm8Yc4NbH6sJd1FgA"},
                owner="app",
                label=DB_PASSPHRASE_LABEL,
            ),
            testing.Secret(
                {"username": "admin", "password": PASSWORD}, owner="app", label=ADMIN_LABEL
            ),
            secret,
        ],
    )


def peer_writes(
    made: list[tuple[int, bool, frozenset[str]]], peers: testing.PeerRelation
) -> dict[bool, list[frozenset[str]]]:
    """The writes to the peer relation: app databag (True) or the unit's (False) -> keys."""
    found: dict[bool, list[frozenset[str]]] = collections.defaultdict(list)
    for relation_id, is_app, written in made:
        if relation_id == peers.id:
            found[is_app].append(written)
    return found


def assert_once_and_declared(found: Mapping[bool, list[frozenset[str]]]) -> None:
    """Each databag written at most once, with declared keys only."""
    assert len(found.get(True, [])) <= 1, found
    assert len(found.get(False, [])) <= 1, found
    for written in found.get(True, []):
        assert written <= keys.APP_KEYS
    for written in found.get(False, []):
        assert written <= keys.UNIT_KEYS


# One write per databag and hook --------------------------------------------------------------


def test_a_new_leader_writes_its_claim_and_lease_in_one_write(
    ctx: Ctx,
    writes: list[tuple[int, bool, frozenset[str]]],
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
):
    """Arrange: garm/0 leads a peer relation with no claim and no lease; garm/1 runs nothing.

    Act: leader-elected. Assert: the app databag is written once, with the claim and the lease
    together; the unit's once, saying it does not run GARM yet (the lease is used once
    committed, ADR 0019).
    """
    peers = testing.PeerRelation("garm-peers", peers_data={1: {keys.RUNNING_KEY: "false"}})

    out = ctx.run(ctx.on.leader_elected(), unit_state(resources, config, peers))

    found = peer_writes(writes, peers)
    assert found[True] == [
        frozenset(
            {keys.HOST_KEY, keys.HOST_SINCE_KEY, keys.LEASE_HOLDER_KEY, keys.LEASE_UNTIL_KEY}
        )
    ]
    assert found[False] == [frozenset({keys.RUNNING_KEY})]
    written = out.get_relation(peers.id)
    assert Lease.from_app_data(written.local_app_data) == Lease("garm/0", NOW + LEASE_LENGTH)
    assert HostClaim.from_app_data(written.local_app_data) == HostClaim("garm/0", NOW)
    assert written.local_unit_data[keys.RUNNING_KEY] == "false"


def test_a_pause_and_the_lease_it_renews_are_one_write(
    ctx: Ctx,
    writes: list[tuple[int, bool, frozenset[str]]],
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
):
    """Arrange: garm/0 leads and holds a lease with 4 minutes left (due for renewal).

    Act: the pause action (it writes the pause, then reconciles: the renewal).
    Assert: the app databag is written once, with the pause and the renewed lease's end.
    """
    lease = Lease("garm/0", NOW + datetime.timedelta(minutes=4))
    peers = testing.PeerRelation("garm-peers", local_app_data=lease.as_app_data())

    out = ctx.run(ctx.on.action("pause"), unit_state(resources, config, peers))

    found = peer_writes(writes, peers)
    assert_once_and_declared(found)
    # The holder stays: only the keys whose value changed are written.
    assert found[True] == [
        frozenset({keys.PAUSED_SINCE_KEY, keys.PAUSED_BY_KEY, keys.LEASE_UNTIL_KEY})
    ]
    written = out.get_relation(peers.id).local_app_data
    assert Maintenance.from_app_data(written) == Maintenance(NOW)
    assert Lease.from_app_data(written) == Lease("garm/0", NOW + LEASE_LENGTH)


def test_a_restores_own_pause_set_and_ended_in_one_hook_is_never_written(
    ctx: Ctx,
    writes: list[tuple[int, bool, frozenset[str]]],
    workload: RecordingWorkload,
    garm: GarmSim,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
):
    """Arrange: garm/0 leads on SQLite, holding a fresh lease; a backup of this application.

    Act: restore-backup (it pauses, swaps the backup in, resumes and reconciles).
    Assert: the backup is in and GARM started again, yet the app databag is never written:
    the pause the restore took and ended is no change; the unit's is written once.
    """
    garm.bootstrap("admin", PASSWORD)
    workload.installed = True
    workload.running = True
    lease = Lease("garm/0", NOW + datetime.timedelta(minutes=9))
    held = {
        **lease.as_app_data(),
        **HostClaim("garm/0", NOW - datetime.timedelta(hours=1)).as_app_data(),
    }
    peers = testing.PeerRelation("garm-peers", local_app_data=held)
    state = unit_state(resources, config, peers, postgresql=False)
    secret = next(s for s in state.secrets if s.label == DB_PASSPHRASE_LABEL)
    workload.backups["b1"] = BackupManifest(
        "b1", NOW.isoformat(), workload.version(), "0" * 64, 4096, secret.id
    )

    out = ctx.run(ctx.on.action("restore-backup", params={"name": "b1"}), state)

    assert workload.calls.index("restore_backup b1") < workload.calls.index("apply")
    found = peer_writes(writes, peers)
    assert found == {False: [frozenset({keys.RUNNING_KEY})]}
    assert dict(out.get_relation(peers.id).local_app_data) == held


def test_a_former_leader_says_it_stopped_in_one_write_and_then_writes_nothing(
    ctx: Ctx,
    writes: list[tuple[int, bool, frozenset[str]]],
    workload: RecordingWorkload,
    resources: frozenset[testing.Resource],
    config: dict[str, Any],
):
    """Arrange: garm/0 ran GARM; garm/1 leads now and claimed it.

    Act: update-status on garm/0, then again with what it wrote.
    Assert: the first hook writes garm/0's databag once (stopped, echoing the claim) and the
    app databag never; the second writes nothing: nothing changed.
    """
    workload.running = True
    claim = HostClaim("garm/1", NOW - datetime.timedelta(minutes=1))
    peers = testing.PeerRelation("garm-peers", local_app_data=claim.as_app_data())

    first = ctx.run(ctx.on.update_status(), unit_state(resources, config, peers, leader=False))
    found = peer_writes(writes, peers)
    said = first.get_relation(peers.id)
    writes.clear()
    again = testing.PeerRelation(
        "garm-peers", local_app_data=claim.as_app_data(), local_unit_data=said.local_unit_data
    )
    ctx.run(ctx.on.update_status(), unit_state(resources, config, again, leader=False))

    assert found == {False: [frozenset({keys.RUNNING_KEY, keys.STOPPED_FOR_KEY})]}
    assert said.local_unit_data[keys.RUNNING_KEY] == "false"
    assert said.local_unit_data[keys.STOPPED_FOR_KEY] == stopped_for(claim)[keys.STOPPED_FOR_KEY]
    assert peer_writes(writes, again) == {}


# Every key in one place ------------------------------------------------------------------------


def test_keys_declares_each_key_once_in_one_databag():
    """Arrange: the keys module. Act: collect its `*_KEY` constants.

    Assert: each is in exactly one of APP_KEYS and UNIT_KEYS, every value differs, and the two
    sets hold nothing else.
    """
    declared = {name: value for name, value in vars(keys).items() if name.endswith("_KEY")}

    assert len(set(declared.values())) == len(declared)
    assert keys.APP_KEYS.isdisjoint(keys.UNIT_KEYS)
    assert set(declared.values()) == keys.APP_KEYS | keys.UNIT_KEYS


def test_no_module_outside_relations_peers_reaches_a_peer_databag():
    """Arrange: every module of src/ outside relations/peers/ (and the generated client).

    Act: read each one's syntax tree.
    Assert: none spells the peer relation's name or a key, imports a key or the package's
    internals, or uses the relation's name other than to observe its events (`self.on[...]`).
    """
    spelled = keys.APP_KEYS | keys.UNIT_KEYS | {keys.RELATION}

    problems = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path in _modules_outside_peers()
        for line, what in _peer_reaches(ast.parse(path.read_text()), spelled)
    ]

    assert problems == []


def test_the_peers_package_names_its_keys_only_in_keys():
    """Arrange: the modules of relations/peers/ other than keys.py.

    Act: read each one's syntax tree.
    Assert: none defines a `*_KEY` constant, spells a key, or looks a key up by a literal.
    """
    spelled = keys.APP_KEYS | keys.UNIT_KEYS | {keys.RELATION}
    problems: list[str] = []
    for path in sorted(PEERS.glob("*.py")):
        if path.name == "keys.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign | ast.AnnAssign) and any(
                isinstance(target, ast.Name) and target.id.endswith("_KEY")
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            ):
                problems.append(f"{path.name}:{node.lineno}: defines a key")
            if isinstance(node, ast.Constant) and node.value in spelled:
                problems.append(f"{path.name}:{node.lineno}: spells {node.value!r}")
            if isinstance(node, ast.Subscript) and _is_text(node.slice):
                problems.append(f"{path.name}:{node.lineno}: a literal key")

    assert problems == []


def _modules_outside_peers() -> Iterator[Path]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts
        if parts[0] == "garm_client" or parts[:2] == ("relations", "peers"):
            continue
        yield path


def _peer_reaches(tree: ast.Module, spelled: frozenset[str]) -> Iterator[tuple[int, str]]:
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in spelled:
            yield node.lineno, f"spells {node.value!r}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("relations.peers"):
            for name in node.names:
                if node.module == "relations.peers.keys" or (
                    node.module == "relations.peers" and name.name not in PEERS_NAMES_OUTSIDE
                ):
                    yield node.lineno, f"imports {node.module}.{name.name}"
                if name.name == "RELATION":
                    aliases.add(name.asname or name.name)
    observed = {
        id(node.slice)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "on"
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases and id(node) not in observed:
            yield node.lineno, f"uses {node.id} other than in self.on[...]"


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
