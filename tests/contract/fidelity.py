"""One scripted request sequence, run on a real GARM and on the simulator as the same version.

`run_sequence` drives a fresh GARM from first-run to its last delete: bootstrap gates, first-run,
login, controller URLs, a GitHub endpoint and PAT credentials, a repository and an organization,
a runner template, scale sets and their refusals, one runner through its states (created,
booting, reporting `installing` then `idle` through the callback URL as GARM's install script
does, a job, the job's end, its replacement, the scale-down), and every delete with the refusals
before it. Every answer is kept as an `Exchange`.

`differences` compares two transcripts answer by answer: the status, every object's key set,
every value's JSON type, and every value GARM decides deterministically. Values that come from
elsewhere are compared by type only, after `normalise`: ids and names GARM draws at random
(UUIDs, runner names: numbered in order of appearance, so references must still agree), tokens,
timestamps other than Go's zero time, the loopback URLs of GARM and of the GitHub it talks to,
and the values the provider, GitHub or the machine choose (`VALUE_FROM_ELSEWHERE`).

A difference fails the check unless `ALLOWED` lists it, with its reason; `ALLOWED` holds at most
three entries, and an entry no difference needs fails the check too.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from contract.conftest import ADMIN, PASSWORD, garm_binary
from contract.garm_http import Reply, call
from contract.real_garm import RealGarm
from garm_sim import GarmSim
from must_run import cannot_run

PROVIDER = {"name": "fake", "type": "external", "description": "contract-suite fake provider"}
# The simulator talks to no GitHub; this stands for the fake GitHub's URL in its answers.
SIM_GITHUB_URL = "http://127.0.0.1:9"
# A scale set's runner boots this long on the simulator's clock (about as long as on a real GARM
# with the fake provider), so the sequence sees it `pending_create` first.
SIM_BOOT_SECONDS = 10.0
WEBHOOK_SECRET = "fidelity-webhook-secret"
# Values the provider (its ids), GitHub (its ids, its clock) or the machine choose.
VALUE_FROM_ELSEWHERE = frozenset({"provider_id", "agent_id", "hostname", "reset", "remaining"})
# GitHub's count of the requests spent, which GARM copies into `rate_limit` and leaves out at 0:
# how many the fake GitHub counted depends on GARM's own calls, which the simulator makes none of.
COUNT_FROM_GITHUB = frozenset({"used"})
_ZERO_TIME = "0001-01-01T00:00:00Z"
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_JWT = re.compile(r"^[\w-]+\.[\w-]+\.[\w-]+$")
_RUNNER = re.compile(r"\bgarm-[a-z0-9]{12}\b")


@dataclass(frozen=True)
class Exchange:
    """One answer of the sequence (or one thing it observed, with `method` "OBSERVE")."""

    label: str
    method: str
    path: str
    status: int
    body: Any


@dataclass(frozen=True)
class Difference:
    """Where two transcripts disagree."""

    label: str
    where: str
    sim: Any
    real: Any

    def __str__(self) -> str:
        """Return one line for a failure message."""
        return f"{self.label} {self.where}: simulator {self.sim!r}, real {self.real!r}"


@dataclass(frozen=True)
class Allowance:
    """A difference the check accepts, and why.

    Attributes:
        labels: the steps it applies to.
        where: a regular expression the difference's place must match in full.
        reason: why the simulator may differ there.
        holds: a further condition on the two values (True: none).
    """

    labels: frozenset[str]
    where: str
    reason: str
    holds: Callable[[Any, Any], bool] = field(default=lambda sim, real: True)

    def covers(self, difference: Difference) -> bool:
        """Return whether this entry accepts the difference."""
        return (
            difference.label in self.labels
            and re.fullmatch(self.where, difference.where) is not None
            and self.holds(difference.sim, difference.real)
        )


def _same_garm_words(sim: Any, real: Any) -> bool:
    """GARM's own words agree once the Actions service's URLs and quoted answer are cut."""
    return isinstance(sim, str) and isinstance(real, str) and _garm_words(sim) == _garm_words(real)


def _garm_words(details: str) -> str:
    """The details without the quoted GitHub answer (after the last `: "`) and URLs."""
    head = details.rsplit(': "', 1)[0]
    return re.sub(r"(https?://|<github>)\S*?(?=: |$)", "<url>", head)


ALLOWED: tuple[Allowance, ...] = (
    Allowance(
        frozenset({"scale set duplicate", "runner delete while busy"}),
        r"\$\.details",
        "GARM quotes the Actions service's URL and error body: that text is GitHub's (here the "
        "fake GitHub's, in the simulator its own GitHub model's), not GARM's; GARM's own words "
        "around the URLs are compared",
        _same_garm_words,
    ),
)


# -- The targets ---------------------------------------------------------------------------------


@dataclass
class Driven:
    """A GARM the sequence drives: the simulator or a real binary, and what stands beside it."""

    url: str
    github_url: str
    sim: GarmSim | None = None
    real: RealGarm | None = None
    token: str | None = None
    exchanges: list[Exchange] = field(default_factory=lambda: [])

    def call(self, label: str, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """Send one request, keep its answer; return the decoded body (None if not JSON)."""
        kwargs.setdefault("token", self.token)
        reply = call(self.url, method, path, body, **kwargs)
        decoded = _decoded(reply)
        self.exchanges.append(Exchange(label, method, path, reply.status, decoded))
        return decoded

    def observe(self, label: str, value: Any) -> None:
        """Keep something the sequence saw over time (a runner's status sequence)."""
        self.exchanges.append(Exchange(label, "OBSERVE", "", 0, value))

    def read(self, path: str) -> Any:
        """GET without keeping the answer (for polling)."""
        return call(self.url, "GET", path, token=self.token).json

    def wait_until(self, check: Callable[[], bool], timeout: float = 60.0) -> bool:
        """Return once `check()` holds: real seconds, or the simulator's clock in 5 s steps."""
        if self.sim is not None:
            for _ in range(int(timeout / 5)):
                if check():
                    return True
                self.sim.advance(5)
            return check()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.25)
        return check()

    def instance_token(self, runner: str) -> str:
        """Return the token the runner's provider was given (`instance-token`)."""
        if self.real is not None:
            return self.real.instance_token(runner)
        assert self.sim is not None
        return self.sim.instance_token(runner)

    def start_job(self, github_scaleset_id: int, garm_scaleset_id: int, runner: str) -> None:
        """GitHub hands the runner a job."""
        if self.real is not None:
            self.real.github.start_job(github_scaleset_id, runner)
            return
        assert self.sim is not None
        started = self.sim.start_job(garm_scaleset_id)
        assert started == runner, f"the simulator gave the job to {started}, not {runner}"

    def finish_job(self, runner: str) -> None:
        """The runner's job ends (an ephemeral runner then leaves GitHub)."""
        if self.real is not None:
            self.real.github.finish_job(runner)
            return
        assert self.sim is not None
        self.sim.finish_job(runner)


@contextmanager
def real_garm(version: str, workdir: Path) -> Iterator[Driven]:
    """A fresh real GARM of this version with its fake GitHub, stopped afterwards."""
    binary, reason = garm_binary(version)
    if binary is None:
        cannot_run(reason)
    workdir.mkdir(parents=True, exist_ok=True)
    garm = RealGarm(binary, workdir, PROVIDER["name"], version=version)
    try:
        garm.start()
        yield Driven(garm.url, garm.github.url, real=garm)
    finally:
        garm.stop()
    garm.assert_no_dns_lookup()


@contextmanager
def simulator(version: str) -> Iterator[Driven]:
    """The simulator as this version, set up as the real GARM is: no runner reports by itself.

    The fake provider boots nothing, so on a real GARM only the sequence's callbacks move a
    runner past `pending`; the simulator's runners must not report either.
    """
    with GarmSim(
        [PROVIDER], garm_version=version, boot_seconds=SIM_BOOT_SECONDS, frozen_clock=True
    ) as sim:
        sim.github.runners_report = False
        yield Driven(sim.url, SIM_GITHUB_URL, sim=sim)


# -- The sequence --------------------------------------------------------------------------------


def run_sequence(garm: Driven) -> list[Exchange]:
    """Drive a fresh GARM through the whole sequence; return every answer, in order."""
    _bootstrap(garm)
    repo_id, org_id = _github_objects(garm)
    template_id = _template(garm)
    scaleset = _scale_sets(garm, repo_id, template_id)
    _runner(garm, scaleset)
    _deletes(garm, repo_id, org_id, template_id, scaleset["id"])
    return garm.exchanges


def _bootstrap(garm: Driven) -> None:
    user = {"username": ADMIN, "email": "admin@example.com", "password": PASSWORD}
    garm.call("controller info before first-run", "GET", "/controller-info", token=None)
    garm.call("login before first-run", "POST", "/auth/login", user, token=None)
    weak = user | {"password": "password"}
    garm.call("first-run with a weak password", "POST", "/first-run", weak, token=None)
    garm.call("first-run without an email", "POST", "/first-run", user | {"email": ""})
    garm.call("first-run", "POST", "/first-run", user, token=None)
    garm.call("first-run again", "POST", "/first-run", user, token=None)
    garm.call("login with a wrong password", "POST", "/auth/login", weak, token=None)
    garm.token = garm.call("login", "POST", "/auth/login", user, token=None)["token"]
    garm.call("controller info without a token", "GET", "/controller-info", token=None)
    garm.call("controller info before the URLs", "GET", "/controller-info")
    garm.call("providers before the URLs", "GET", "/providers")
    urls = {
        "metadata_url": f"{garm.url}/api/v1/metadata",
        "callback_url": f"{garm.url}/api/v1/callbacks",
        "garm_agent_releases_url": f"{garm.github_url}/repos/cloudbase/garm-agent/releases",
    }
    garm.call("controller URLs with a bad URL", "PUT", "/controller", {"metadata_url": "x"})
    garm.call("controller URLs", "PUT", "/controller", urls)
    garm.call("providers", "GET", "/providers")
    garm.call("bad token", "GET", "/providers", token="not-a-token")


def _github_objects(garm: Driven) -> tuple[str, str]:
    garm.call("endpoints", "GET", "/github/endpoints")
    endpoint = {
        "name": "fake-ghes",
        "description": "fake GitHub on loopback",
        "base_url": garm.github_url,
        "api_base_url": f"{garm.github_url}/api/v3/",
        "upload_base_url": f"{garm.github_url}/api/uploads/",
    }
    garm.call("endpoint create", "POST", "/github/endpoints", endpoint)
    garm.call("endpoint duplicate", "POST", "/github/endpoints", endpoint)
    garm.call("endpoint read", "GET", "/github/endpoints/fake-ghes")
    garm.call("credentials before any", "GET", "/github/credentials")
    creds = {
        "name": "fake-pat",
        "description": "PAT for fake GitHub",
        "endpoint": "fake-ghes",
        "auth_type": "pat",
        "pat": {"oauth2_token": "fake-pat-token"},
    }
    garm.call("credentials create", "POST", "/github/credentials", creds)
    # Before GARM's first rate-limit fetch for them: no `rate_limit` key at all.
    garm.call("credentials list at once", "GET", "/github/credentials")
    garm.call("credentials read at once", "GET", "/github/credentials/1")
    garm.call("credentials duplicate", "POST", "/github/credentials", creds)
    unknown = creds | {"name": "other", "endpoint": "no-such-endpoint"}
    garm.call("credentials on an unknown endpoint", "POST", "/github/credentials", unknown)
    garm.call("credentials unknown id", "GET", "/github/credentials/99")
    repo = {
        "owner": "fake-org",
        "name": "fake-repo",
        "credentials_name": "fake-pat",
        "webhook_secret": WEBHOOK_SECRET,
    }
    repo_id = garm.call("repository create", "POST", "/repositories", repo)["id"]
    no_secret = {"owner": "fake-org", "name": "other", "credentials_name": "fake-pat"}
    garm.call("repository without a webhook secret", "POST", "/repositories", no_secret)
    garm.call("repository duplicate", "POST", "/repositories", repo)
    org = {"name": "fake-org", "credentials_name": "fake-pat", "webhook_secret": WEBHOOK_SECRET}
    org_id = garm.call("organization create", "POST", "/organizations", org)["id"]
    garm.call("organization duplicate", "POST", "/organizations", org)
    # GARM's pool managers start in the background; read the entities once they run.
    garm.wait_until(lambda: _pool_managers_running(garm, repo_id, org_id))
    garm.call("repositories", "GET", "/repositories")
    garm.call("repository read", "GET", f"/repositories/{repo_id}")
    garm.call("organization read", "GET", f"/organizations/{org_id}")
    garm.call("repository unknown id", "GET", "/repositories/00000000-0000-0000-0000-000000000000")
    garm.call("credentials with their entities", "GET", "/github/credentials/1")
    return repo_id, org_id


def _pool_managers_running(garm: Driven, repo_id: str, org_id: str) -> bool:
    paths = (f"/repositories/{repo_id}", f"/organizations/{org_id}")
    return all(garm.read(path).get("pool_manager_status", {}).get("running") for path in paths)


def _template(garm: Driven) -> int:
    garm.call("templates", "GET", "/templates")
    garm.call("system template read", "GET", "/templates/2")
    script = base64.b64encode(b"#!/bin/bash\necho fidelity\n").decode()
    template = {
        "name": "fidelity",
        "description": "a runner template",
        "os_type": "linux",
        "forge_type": "github",
        "data": script,
    }
    template_id = garm.call("template create", "POST", "/templates", template)["id"]
    garm.call("template duplicate", "POST", "/templates", template)
    garm.call("template without data", "POST", "/templates", template | {"name": "x", "data": ""})
    garm.call("template update", "PUT", f"/templates/{template_id}", {"description": "updated"})
    garm.call("template read", "GET", f"/templates/{template_id}")
    garm.call("template system delete", "DELETE", "/templates/2")
    return template_id


def _scale_sets(garm: Driven, repo_id: str, template_id: int) -> dict[str, Any]:
    sets = f"/repositories/{repo_id}/scalesets"
    garm.call("scale set min above max", "POST", sets, _scaleset("bad", min_idle_runners=3))
    garm.call("scale set unknown template", "POST", sets, _scaleset("bad", template_id=999))
    garm.call("scale set no name", "POST", sets, _scaleset(""))
    created = garm.call("scale set create", "POST", sets, _scaleset("fidelity", template_id))
    garm.call("scale set duplicate", "POST", sets, _scaleset("fidelity", template_id))
    other = garm.call("scale set second", "POST", sets, _scaleset("second", template_id))
    path = f"/scalesets/{created['id']}"
    garm.call("scale set read", "GET", path)
    garm.call("scale sets", "GET", "/scalesets")
    garm.call("repository scale sets", "GET", sets)
    garm.call("scale set unknown id", "GET", "/scalesets/999")
    garm.call("scale set bad id", "GET", "/scalesets/x")
    garm.call("scale set update min above max", "PUT", path, {"min_idle_runners": 5})
    garm.call("scale set update no-op", "PUT", path, {})
    garm.call("scale set delete second", "DELETE", f"/scalesets/{other['id']}")
    return garm.call("scale set enable", "PUT", path, {"enabled": True, "min_idle_runners": 1})


def _scaleset(name: str, template_id: int = 0, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "provider_name": PROVIDER["name"],
        "image": "ubuntu:24.04",
        "flavor": "small",
        "os_type": "linux",
        "os_arch": "amd64",
        "labels": ["fidelity", "x64"],
        "min_idle_runners": 0,
        "max_runners": 2,
        "enabled": False,
    }
    if template_id:
        body["template_id"] = template_id
    return body | fields


def _runner(garm: Driven, scaleset: dict[str, Any]) -> None:
    """One runner from creation to its job's end and its replacement."""
    instances = f"/scalesets/{scaleset['id']}/instances"
    statuses: list[tuple[str, str]] = []

    def running() -> bool:
        listed = garm.read(instances) or []
        if listed:
            seen = (listed[0]["status"], listed[0]["runner_status"])
            if not statuses or statuses[-1] != seen:
                statuses.append(seen)
        return bool(statuses) and statuses[-1][0] == "running"

    garm.wait_until(running)
    # `creating` lasts a moment on a real GARM: polling sees it or not.
    garm.observe("runner statuses while booting", [s for s in statuses if s[0] != "creating"])
    runner = garm.call("runners of the scale set", "GET", instances)[0]["name"]
    garm.call("runner read", "GET", f"/instances/{runner}")
    garm.call("runners", "GET", "/instances")
    garm.call("runner read unknown name", "GET", "/instances/no-such-runner")
    garm.call("runner delete unknown name", "DELETE", "/instances/no-such-runner")
    _runner_reports(garm, runner)
    garm.start_job(scaleset["scale_set_id"], scaleset["id"], runner)
    garm.wait_until(lambda: garm.read(f"/instances/{runner}")["runner_status"] == "active")
    garm.call("runner delete while busy", "DELETE", f"/instances/{runner}")
    garm.call("scale set delete while enabled", "DELETE", f"/scalesets/{scaleset['id']}")
    garm.finish_job(runner)

    def replaced() -> bool:
        listed = garm.read(instances) or []
        return [i["name"] for i in listed if i["name"] == runner] == [] and len(listed) == 1

    garm.wait_until(replaced)
    garm.call("runners after the job", "GET", instances)
    path = f"/scalesets/{scaleset['id']}"
    retire = {"enabled": False, "min_idle_runners": 0, "max_runners": 0}
    garm.call("scale set retire", "PUT", path, retire)
    garm.wait_until(lambda: not garm.read(instances))
    garm.call("runners after the retire", "GET", instances)


def _runner_reports(garm: Driven, runner: str) -> None:
    """Report as GARM's install script does on the instance, with the instance's token."""
    token = garm.instance_token(runner)
    status = "/callbacks/status"
    installing = {"status": "installing", "message": "installing runner"}
    garm.call("callback with a bad token", "POST", status, installing, token="x.y.z")
    garm.call("callback installing", "POST", status, installing, token=token)
    garm.call("runner read while installing", "GET", f"/instances/{runner}")
    bogus = {"status": "no-such-status", "message": "bogus"}
    garm.call("callback with an unknown status", "POST", status, bogus, token=token)
    idle = {"status": "idle", "message": "runner online"}
    garm.call("callback idle", "POST", status, idle, token=token)
    garm.call("runner read when idle", "GET", f"/instances/{runner}")
    garm.call("callback after idle", "POST", status, installing, token=token)


def _deletes(garm: Driven, repo_id: str, org_id: str, template_id: int, scaleset_id: int) -> None:
    garm.call("template delete in use", "DELETE", f"/templates/{template_id}")
    garm.call("repository delete with a scale set", "DELETE", f"/repositories/{repo_id}")
    garm.call("credentials delete in use", "DELETE", "/github/credentials/1")
    garm.call("endpoint delete in use", "DELETE", "/github/endpoints/fake-ghes")
    garm.call("scale set delete", "DELETE", f"/scalesets/{scaleset_id}")
    garm.call("scale set read after delete", "GET", f"/scalesets/{scaleset_id}")
    garm.call("scale set delete again", "DELETE", f"/scalesets/{scaleset_id}")
    garm.call("template delete", "DELETE", f"/templates/{template_id}")
    garm.call("repository delete", "DELETE", f"/repositories/{repo_id}")
    garm.call("credentials delete in use by an organization", "DELETE", "/github/credentials/1")
    garm.call("organization delete", "DELETE", f"/organizations/{org_id}")
    # GARM fetches rate limits every 30 s and (newer) caches the releases index after the PUT.
    garm.wait_until(lambda: "rate_limit" in garm.read("/github/credentials")[0])
    garm.wait_until(lambda: _releases_cached(garm))
    garm.call("controller info later", "GET", "/controller-info")
    garm.call("credentials list later", "GET", "/github/credentials")
    garm.call("credentials delete", "DELETE", "/github/credentials/1")
    garm.call("credentials after delete", "GET", "/github/credentials")
    garm.call("endpoint delete", "DELETE", "/github/endpoints/fake-ghes")
    garm.call("endpoint read after delete", "GET", "/github/endpoints/fake-ghes")


def _releases_cached(garm: Driven) -> bool:
    info = garm.read("/controller-info")
    return "garm_agent_version" not in info or "cached_garm_agent_release_fetched_at" in info


def _decoded(reply: Reply) -> Any:
    try:
        return reply.json
    except ValueError:
        return reply.raw


# -- Comparing -----------------------------------------------------------------------------------


def normalise(exchanges: Sequence[Exchange], urls: dict[str, str]) -> list[Exchange]:
    """Replace what is not GARM's to decide by placeholders (see the module docstring).

    Args:
        exchanges: one transcript.
        urls: loopback base URLs and the placeholders they become (`<garm>`, `<github>`).
    """
    names: dict[str, str] = {}
    return [
        Exchange(
            e.label,
            e.method,
            _normal_text(e.path, urls, names),
            e.status,
            _normal(e.body, urls, names, ""),
        )
        for e in exchanges
    ]


def _normal(value: Any, urls: dict[str, str], names: dict[str, str], key: str) -> Any:
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return {k: _normal(v, urls, names, k) for k, v in items if k not in COUNT_FROM_GITHUB}
    if isinstance(value, list):
        items = cast("list[Any]", value)
        if key == "tags":
            # GARM reads a scale set's tags by their random ids: their order is random too.
            items = sorted(items, key=lambda tag: str(cast("dict[str, Any]", tag).get("name")))
        return [_normal(v, urls, names, key) for v in items]
    if key in VALUE_FROM_ELSEWHERE:
        return f"<{type(value).__name__}>"
    if not isinstance(value, str):
        return value
    return _normal_text(value, urls, names)


def _normal_text(text: str, urls: dict[str, str], names: dict[str, str]) -> str:
    if _TIME.match(text):
        return text if text == _ZERO_TIME else "<time>"
    if _JWT.match(text) and len(text) > 40:
        return "<token>"
    for url, placeholder in urls.items():
        text = text.replace(url, placeholder)

    def number(found: re.Match[str]) -> str:
        kind = "runner" if found.group(0).startswith("garm-") else "uuid"
        return names.setdefault(found.group(0), f"<{kind}-{len(names) + 1}>")

    return _RUNNER.sub(number, _UUID.sub(number, text))


def differences(sim: Sequence[Exchange], real: Sequence[Exchange]) -> list[Difference]:
    """Return every disagreement between two normalised transcripts of the same sequence."""
    found: list[Difference] = []
    for ours, theirs in zip(sim, real, strict=True):
        assert (ours.label, ours.path) == (theirs.label, theirs.path), "not the same sequence"
        if ours.status != theirs.status:
            found.append(Difference(ours.label, "status", ours.status, theirs.status))
        _compare(ours.label, "$", ours.body, theirs.body, found)
    return found


def _compare(label: str, where: str, sim: Any, real: Any, found: list[Difference]) -> None:
    if isinstance(sim, dict) and isinstance(real, dict):
        ours, theirs = cast("dict[str, Any]", sim), cast("dict[str, Any]", real)
        for key in sorted(set(ours) ^ set(theirs)):
            found.append(Difference(label, f"{where}.{key}", ours.get(key), theirs.get(key)))
        for key in sorted(set(ours) & set(theirs)):
            _compare(label, f"{where}.{key}", ours[key], theirs[key], found)
    elif isinstance(sim, list) and isinstance(real, list):
        ours_list, theirs_list = cast("list[Any]", sim), cast("list[Any]", real)
        if len(ours_list) != len(theirs_list):
            found.append(Difference(label, f"{where}[]", len(ours_list), len(theirs_list)))
        for index, (one, other) in enumerate(zip(ours_list, theirs_list, strict=False)):
            _compare(label, f"{where}[{index}]", one, other, found)
    elif type(sim) is not type(real) or sim != real:
        found.append(Difference(label, where, sim, real))


def unexplained(
    found: Sequence[Difference], allowed: Sequence[Allowance] = ALLOWED
) -> tuple[list[Difference], list[Allowance]]:
    """Split the differences: those no entry allows, and the entries no difference used."""
    left = [d for d in found if not any(entry.covers(d) for entry in allowed)]
    unused = [entry for entry in allowed if not any(entry.covers(d) for d in found)]
    return left, unused
