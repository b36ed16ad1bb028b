"""The simulator answers one whole request sequence as the real GARM binaries do (`fidelity`).

Each real binary runs the sequence with the fake GitHub and the fake provider, the simulator
runs it as the same version, and every answer must agree by status, key set, JSON types and
every value GARM decides, but for the differences `fidelity.ALLOWED` lists with their reasons.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from contract import fidelity
from contract.conftest import garm_binary
from contract.fidelity import (
    ALLOWED,
    Allowance,
    Difference,
    Exchange,
    differences,
    normalise,
    unexplained,
)
from contract.real_garm import NEWER, V021
from must_run import cannot_run

MAX_ALLOWED = 3
VERSIONS = (V021, NEWER)


@pytest.mark.real_garm
def test_simulator_answers_the_sequence_as_the_real_garm_binaries(tmp_path: Path):
    """Arrange: a fresh real GARM of each version (run side by side), and the simulator as each.

    Act: run the whole sequence on each; normalise every transcript.

    Assert: for each version, no difference but those the allow-list names, and every
    allow-list entry is needed by some difference (a stale entry would hide the next one).
    """
    for version in VERSIONS:
        binary, reason = garm_binary(version)
        if binary is None:
            cannot_run(reason)
    with ThreadPoolExecutor(len(VERSIONS)) as pool:
        runs = {v: pool.submit(_real_transcript, v, tmp_path / v) for v in VERSIONS}
        theirs = {version: run.result() for version, run in runs.items()}
    ours = {version: _simulator_transcript(version) for version in VERSIONS}

    found = {v: unexplained(differences(ours[v], theirs[v])) for v in VERSIONS}

    assert {v: [str(d) for d in left] for v, (left, _) in found.items()} == {
        v: [] for v in VERSIONS
    }
    assert {v: [e.reason for e in unused] for v, (_, unused) in found.items()} == {
        v: [] for v in VERSIONS
    }


def _real_transcript(version: str, workdir: Path) -> list[Exchange]:
    with fidelity.real_garm(version, workdir) as real:
        exchanges = fidelity.run_sequence(real)
        return normalise(exchanges, {real.url: "<garm>", real.github_url: "<github>"})


def _simulator_transcript(version: str) -> list[Exchange]:
    with fidelity.simulator(version) as sim:
        exchanges = fidelity.run_sequence(sim)
        return normalise(exchanges, {sim.url: "<garm>", sim.github_url: "<github>"})


def test_the_allow_list_is_short_and_every_entry_says_why():
    """Arrange: the allow-list. Act: read it. Assert: at most three entries, each with a reason."""
    assert len(ALLOWED) <= MAX_ALLOWED
    assert all(len(entry.reason) > 40 and entry.labels for entry in ALLOWED)


def test_a_key_a_type_and_a_value_each_make_a_difference():
    """Arrange: one answer, and three copies each changed in one way.

    Act: compare each copy with the answer.

    Assert: an extra key, a value of another JSON type and another value are each one
    difference at its place; the same answer is none.
    """
    answer = {"id": 1, "rate_limit": {"limit": 5000}, "status": "pending"}
    changed = {
        "$.extra": answer | {"extra": True},
        "$.id": answer | {"id": "1"},
        "$.status": answer | {"status": "idle"},
    }

    found = {
        where: differences([_exchange(body)], [_exchange(answer)])
        for where, body in changed.items()
    }

    assert differences([_exchange(answer)], [_exchange(answer)]) == []
    assert {where: [d.where for d in diffs] for where, diffs in found.items()} == {
        where: [where] for where in changed
    }


def test_normalising_keeps_references_and_garms_own_values():
    """Arrange: two transcripts with other random ids, times and URLs but the same references.

    Act: normalise both.

    Assert: they become equal; an id that points elsewhere, Go's zero time and a status stay
    apart.
    """
    one = [
        _exchange({"id": "0b5e6a52-6c36-4f0f-9d8c-0d3c2c4a8e11", "at": "2026-12-01T10:00:00.5Z"}),
        _exchange({"repo_id": "0b5e6a52-6c36-4f0f-9d8c-0d3c2c4a8e11", "url": "http://a:1/x"}),
    ]
    other = [
        _exchange({"id": "9f1d2c3b-4a5e-4f60-8172-93a4b5c6d7e8", "at": "2026-12-02T11:00:00Z"}),
        _exchange({"repo_id": "9f1d2c3b-4a5e-4f60-8172-93a4b5c6d7e8", "url": "http://b:2/x"}),
    ]
    another = "11111111-2222-4333-8444-555555555555"
    elsewhere = [one[0], _exchange(one[1].body | {"repo_id": another})]
    zero = _exchange({"at": "0001-01-01T00:00:00Z", "status": "pending"})

    ours = normalise(one, {"http://a:1": "<garm>"})
    theirs = normalise(other, {"http://b:2": "<garm>"})
    wrong = normalise(elsewhere, {"http://a:1": "<garm>"})

    assert differences(ours, theirs) == []
    assert [d.where for d in differences(wrong, theirs)] == ["$.repo_id"]
    assert normalise([zero], {})[0].body == zero.body


def test_an_allowance_covers_only_what_it_names():
    """Arrange: the allow-list's entry for GitHub's quoted errors.

    Act: offer it the difference it is for, the same text with GARM's own words changed, and
    another step's difference.

    Assert: it covers only the first.
    """
    entry: Allowance = ALLOWED[0]
    garm = "error creating runner scale set: conflict while calling {url}: \"{{'m': '{m}'}}\""
    ours = garm.format(url="http://127.0.0.1:9/_apis/x", m="sim")
    theirs = garm.format(url="<github>/_apis/x?api-version=6.0-preview", m="fake")
    reworded = theirs.replace("error creating", "error making")

    covered = [
        entry.covers(Difference("scale set duplicate", "$.details", ours, theirs)),
        entry.covers(Difference("scale set duplicate", "$.details", ours, reworded)),
        entry.covers(Difference("endpoint duplicate", "$.details", ours, theirs)),
    ]

    assert covered == [True, False, False]


def _exchange(body: object) -> Exchange:
    return Exchange("step", "GET", "/x", 200, body)
