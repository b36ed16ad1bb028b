"""Idle runners GitHub shows offline past a bound are removed through GARM (ADR 0040).

After a GitHub outage, runners GitHub shows offline stay `idle` in GARM and count against
`max_runners`: no job reaches them, and GARM does not replace them. The charm asks GitHub, as
the entity's App installation, for the entity's runners (`GET .../actions/runners`, 100 a page)
and removes, through GARM's API, the runners that:

- GARM shows idle (`running`, `idle`: never one reporting a job) on a scale set the charm made;
- GitHub lists with their GARM name and agent id, `offline` and not `busy`, at this check;
- GitHub has listed offline at every check since at least `OFFLINE_AFTER` ago (the first
  sighting is kept in the leader's stored state; a sighting online, busy or not listed, or the
  runner no longer idle in GARM, forgets it: a flip starts the clock again);
- at most `MAX_REMOVALS` a pass, the longest offline first, and within what the pass's
  `max-writes-per-pass` leaves (ADR 0038): the scale-set pass before it keeps `bound_share`
  of the bound for them, so they neither go past the bound nor wait out a fleet-wide change.

It runs after the scale-set pass, from the scale sets that pass left, and lists the runners.

Only positive evidence counts: an entity GitHub did not answer for (a 404 for a repository
the installation cannot see, a 5xx, no answer within the pass's budget, a page that is not a
runner list, the quota kept for GARM, ADR 0039) names nothing and keeps its sightings as they
were. The removal is not forced: GARM first removes the runner at GitHub, which refuses one
running a job (garm-behaviour B32), so a job that started since the check is not lost.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, cast
from urllib.parse import urlencode

from garm_api import GarmApiError, Instance, ScaleSet
from garm_api.models import EntityKind
from reconcile.github.check import EntityKey, GithubCheck, Installation
from reconcile.github.http import (
    Findings,
    GithubUnavailable,
    entity_path,
    json_object,
)
from scaleset_reconciler.marker import parse_marker
from scaleset_reconciler.needs import entity_key
from scaleset_reconciler.runners import is_idle

logger = logging.getLogger(__name__)

# How long GitHub must have shown a runner offline at every check before it is removed: far
# longer than a runner's reconnects (seconds) and a short GitHub hiccup, short enough that
# capacity comes back within the hour after an outage.
OFFLINE_AFTER = datetime.timedelta(minutes=15)
# How often the charm asks: a quarter of the bound, so a runner goes 15 to 20 minutes after
# GitHub first showed it offline, at one page per 100 runners per entity every 5 minutes.
CHECK_EVERY = datetime.timedelta(minutes=5)
# At most this many removals a pass: a wrong answer from GitHub costs at most this many idle
# runners, which GARM replaces.
MAX_REMOVALS = 3
# What a scale set's create writes (it and its marker): the share kept never leaves less.
CREATE_WRITES = 2
RUNNERS_PER_PAGE = 100
# Runner lists longer than this many pages are read this far (what was seen still counts).
MAX_PAGES = 10


@dataclasses.dataclass(frozen=True)
class IdleRunner:
    """A runner GARM shows idle on a scale set the charm made.

    Attributes:
        name: GARM's instance name (GitHub's runner name).
        agent_id: GitHub's runner id, as GARM knows it.
        entity_kind: the kind of the scale set's entity.
        entity_name: the entity's name.
        scaleset: the scale set's logical name (from the charm's marker).
        application: the configurator that publishes it.
    """

    name: str
    agent_id: int
    entity_kind: EntityKind
    entity_name: str
    scaleset: str
    application: str

    @property
    def entity(self) -> EntityKey:
        """The entity's key (`scaleset_reconciler.needs.entity_key`)."""
        return entity_key(self.entity_kind, self.entity_name)


@dataclasses.dataclass(frozen=True)
class Sighting:
    """What GitHub answered about the entities' runners at one check.

    Attributes:
        offline: names of the runners GitHub listed offline and not busy (agent id and name
            both matching GARM's).
        answered: the entities whose runner list GitHub answered.
    """

    offline: frozenset[str] = frozenset()
    answered: frozenset[EntityKey] = frozenset()


@dataclasses.dataclass(frozen=True)
class OfflineStep:
    """What one check decides.

    Attributes:
        removals: the runners to remove now, longest offline first.
        since: every idle runner GitHub shows offline, with when it was first seen so (ISO
            8601), to keep until the next check.
    """

    removals: tuple[IdleRunner, ...] = ()
    since: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])


def idle_runners(scalesets: Iterable[ScaleSet], instances: Iterable[Instance]) -> list[IdleRunner]:
    """The idle runners with a GitHub agent id on scale sets the charm's marker claims."""
    owned: dict[int, tuple[ScaleSet, str, str]] = {}
    for scaleset in scalesets:
        marker = parse_marker(scaleset.extended_state)
        if marker is not None:
            owned[scaleset.id] = (scaleset, marker.logical, marker.application)
    found: list[IdleRunner] = []
    for instance in instances:
        claim = owned.get(instance.scale_set_id)
        if claim is None or not is_idle(instance) or instance.agent_id <= 0:
            continue
        scaleset, logical, application = claim
        found.append(
            IdleRunner(
                instance.name,
                instance.agent_id,
                scaleset.entity_kind,
                scaleset.entity_name,
                logical,
                application,
            )
        )
    return found


def plan_offline(
    runners: Sequence[IdleRunner],
    sighting: Sighting,
    kept: Mapping[str, str],
    *,
    now: datetime.datetime,
) -> OfflineStep:
    """Decide which idle runners to remove, and which sightings to keep (pure).

    A runner of an entity GitHub did not answer for keeps its sighting and is not removed.
    """
    since: dict[str, str] = {}
    due: list[tuple[datetime.datetime, IdleRunner]] = []
    for runner in runners:
        first = _parse(kept.get(runner.name, ""))
        if runner.entity not in sighting.answered:
            if first is not None:
                since[runner.name] = first.isoformat()
            continue
        if runner.name not in sighting.offline:
            continue
        first = first if first is not None and first <= now else now
        since[runner.name] = first.isoformat()
        if now - first >= OFFLINE_AFTER:
            due.append((first, runner))
    due.sort(key=lambda item: (item[0], item[1].name))
    return OfflineStep(tuple(runner for _, runner in due[:MAX_REMOVALS]), since)


def bound_share(max_writes: int) -> int:
    """The writes of `max_writes` (0: no bound) the scale-set pass keeps for this check's.

    At most `MAX_REMOVALS`, and never so many that a create no longer fits in what is left.
    """
    if max_writes == 0:
        return 0
    return max(0, min(MAX_REMOVALS, max_writes - CREATE_WRITES))


def removals_left(max_writes: int, written: int) -> int:
    """How many runners the check may remove after a pass that wrote `written` of the bound."""
    if max_writes == 0:
        return MAX_REMOVALS
    return max(0, min(MAX_REMOVALS, max_writes - written))


def _parse(text: str) -> datetime.datetime | None:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


class OfflineApi(Protocol):
    """The GARM calls the offline check makes."""

    def list_instances(self) -> list[Instance]:
        """Return every runner."""
        ...

    def delete_instance(self, name: str, *, force: bool) -> None:
        """Remove a runner."""
        ...


@dataclasses.dataclass(frozen=True)
class OfflineReport:
    """What the offline check did.

    Attributes:
        asked: whether GitHub was asked (False when no idle runner was found).
        removed: the runners GARM accepted to remove.
        offline: per (application, logical scale set), the idle runners GitHub shows offline.
        since: the sightings to keep until the next check.
    """

    asked: bool = False
    removed: tuple[IdleRunner, ...] = ()
    offline: Mapping[tuple[str, str], int] = dataclasses.field(
        default_factory=dict[tuple[str, str], int]
    )
    since: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])

    def removed_by_scaleset(self) -> dict[tuple[str, str], int]:
        """Per (application, logical scale set), how many runners this check removed."""
        counts: dict[tuple[str, str], int] = {}
        for runner in self.removed:
            key = (runner.application, runner.scaleset)
            counts[key] = counts.get(key, 0) + 1
        return counts


def reap_offline(
    api: OfflineApi,
    scalesets: Sequence[ScaleSet],
    ask: Callable[[Sequence[IdleRunner]], Sighting],
    kept: Mapping[str, str],
    *,
    now: datetime.datetime,
    limit: int = MAX_REMOVALS,
) -> OfflineReport:
    """List GARM's idle runners, ask GitHub about them, remove those offline past the bound.

    `scalesets` are those GARM holds, as the scale-set pass just listed them; at most `limit`
    runners are removed (`removals_left`), the others keep their sightings for the next check.

    Raises:
        GarmUnreachable: GARM did not answer (the pass stops, as any outage stops it).
    """
    runners = idle_runners(scalesets, api.list_instances())
    if not runners:
        return OfflineReport()
    step = plan_offline(runners, ask(runners), kept, now=now)
    offline: dict[tuple[str, str], int] = {}
    by_name = {runner.name: runner for runner in runners}
    for name in step.since:
        runner = by_name[name]
        offline[(runner.application, runner.scaleset)] = (
            offline.get((runner.application, runner.scaleset), 0) + 1
        )
    removed: list[IdleRunner] = []
    for runner in step.removals[: max(0, limit)]:
        try:
            api.delete_instance(runner.name, force=False)
        except GarmApiError as error:
            logger.warning("offline runners: GARM kept %r: %s", runner.name, error)
            continue
        removed.append(runner)
        logger.warning(
            "offline runners: removed idle runner %r of %r: GitHub has shown it offline since %s",
            runner.name,
            runner.scaleset,
            step.since[runner.name],
        )
    since = {name: at for name, at in step.since.items() if name not in {r.name for r in removed}}
    return OfflineReport(True, tuple(removed), offline, since)


@dataclasses.dataclass(frozen=True)
class OfflineCheck(GithubCheck[IdleRunner, tuple[str, object]]):
    """Asks GitHub which idle runners it lists offline; called as `ask` by `reap_offline`.

    Its attributes are `check.GithubCheck`'s; what GitHub confirms is ("offline", name) and
    ("answered", entity key), in time.
    """

    LABEL: ClassVar[str] = "offline runners"
    THREAD: ClassVar[str] = "github-offline-check"
    LATE: ClassVar[str] = "the entities not yet answered are asked at the next check"
    ASKED_ABOUT: ClassVar[str] = "offline runners"

    def __call__(self, runners: Sequence[IdleRunner]) -> Sighting:
        """What GitHub answered; never raises for GitHub.

        Raises:
            GarmUnreachable: GARM did not answer when asked for its endpoint.
        """
        confirmed = self._confirmed(runners)
        return Sighting(
            frozenset(cast(str, item) for kind, item in confirmed if kind == "offline"),
            frozenset(cast(EntityKey, item) for kind, item in confirmed if kind == "answered"),
        )

    def _ask_entity(
        self,
        installation: Installation,
        items: Sequence[IdleRunner],
        found: Findings[tuple[str, object]],
    ) -> None:
        """Add the runners the entity's list shows offline, then the entity as answered."""
        for name in self._offline(installation, items):
            found.add(("offline", name))
        found.add(("answered", items[0].entity))

    def _offline(self, installation: Installation, runners: Sequence[IdleRunner]) -> set[str]:
        """The names of `runners` the entity's runner list shows offline and not busy."""
        http, token = installation.http, installation.token
        path = entity_path(runners[0].entity_kind, runners[0].entity_name)
        wanted = {runner.agent_id: runner.name for runner in runners}
        found: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            query = urlencode({"per_page": RUNNERS_PER_PAGE, "page": page})
            url = f"{http.base}/{path}/actions/runners?{query}"
            answer = http.send(
                "GET",
                url,
                f"Bearer {token}",
                expect=(200,),
                installation=installation.app.installation_id,
            )
            listed = _runners(json_object(answer, "the runner list"))
            found |= {
                wanted[item["id"]]
                for item in listed
                if wanted.get(item["id"]) == item.get("name")
                and item.get("status") == "offline"
                and item.get("busy") is False
            }
            if len(listed) < RUNNERS_PER_PAGE:
                break
        return found


def _runners(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    listed: Any = answer.get("runners")
    if not isinstance(listed, list):
        raise GithubUnavailable("the runner list has no runners")
    items: list[dict[str, Any]] = []
    for item in cast(list[Any], listed):
        if not isinstance(item, dict):
            raise GithubUnavailable("the runner list holds something else")
        items.append(cast(dict[str, Any], item))
    return [item for item in items if isinstance(item.get("id"), int)]
