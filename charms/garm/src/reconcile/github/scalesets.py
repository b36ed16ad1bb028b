"""Asks GitHub which of GARM's scale sets it no longer has (ADR 0029).

GitHub deletes a scale set whose listener stayed offline for days; GARM's API shows nothing of
it, and GARM looks again only when its worker starts (garm-behaviour B33). The charm asks the
question GARM's worker asks, the same way: the entity's registration token opens the Actions
service (`POST /actions/runner-registration`), where the scale set is looked up by name in its
runner group. A scale set is named missing only when GitHub answered that lookup with none of
that name; every other answer, or none within the pass's budget, names nothing (`check`).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast
from urllib.parse import urlencode, urlsplit, urlunsplit

from garm_api.models import EntityKind, GithubEndpoint
from reconcile.github.check import GithubCheck, Installation
from reconcile.github.http import (
    Findings,
    GithubUnavailable,
    Http,
    entity_path,
    json_object,
    string_field,
)
from reconcile.github.view import ScaleSetStats
from reconcile.github_objects import GithubApp
from scaleset_reconciler import GithubScaleSetRef

logger = logging.getLogger(__name__)

# GitHub's default runner group: every repository's runners are in it (GARM asks no further).
DEFAULT_GROUP_ID = 1
DEFAULT_GROUP = "default"
# GARM's worker sends this API version to the Actions service.
API_VERSION = "6.0-preview"
RUNNER_GROUPS_PER_PAGE = 100
# A runner group list longer than this many pages is not read to its end (nothing is named).
MAX_RUNNER_GROUP_PAGES = 10
# GitHub deletes a scale set only after days offline: asking every quarter hour finds one soon
# enough at a few calls per entity, where asking at every tick would cost them each minute.
CHECK_EVERY = datetime.timedelta(minutes=15)
# A restart of GARM for the sets GitHub dropped stops every listener for seconds: once an hour
# at most, whatever the answers say.
RESTART_EVERY = datetime.timedelta(hours=1)
_FORGE_PATHS = {
    EntityKind.REPOSITORY: "",
    EntityKind.ORGANIZATION: "",
    EntityKind.ENTERPRISE: "enterprises/",
}


def is_due(last: str, now: datetime.datetime, every: datetime.timedelta) -> bool:
    """Whether `every` has passed since `last` (ISO 8601, as kept; "" or unreadable: never).

    A `last` in the future (the clock was set back) is due too, so a wrong clock cannot hold
    the check off.
    """
    try:
        then = datetime.datetime.fromisoformat(last)
    except ValueError:
        return True
    if then.tzinfo is None:
        return True
    return not then <= now < then + every


@dataclasses.dataclass(frozen=True)
class ScaleSetCheck(GithubCheck[GithubScaleSetRef, int]):
    """Asks GitHub about scale sets; called as `missing_at_github` by the reconciler.

    Its attributes are `check.GithubCheck`'s (a scale set not looked up within the budget is
    not named), and:

    Attributes:
        statistics: filled with GitHub's statistics of each scale set it answered for, by
            GARM's id (ADR 0041), within the budget.
    """

    statistics: dict[int, ScaleSetStats] = dataclasses.field(
        default_factory=dict[int, ScaleSetStats]
    )

    LABEL: ClassVar[str] = "GitHub scale sets"
    THREAD: ClassVar[str] = "github-scaleset-check"
    LATE: ClassVar[str] = "the scale sets not yet looked up are asked about at the next check"
    ASKED_ABOUT: ClassVar[str] = "scale sets"
    # The Actions service is registered with the entity's web URL (`_Entity.forge_url`).
    NEEDS_BASE_URL: ClassVar[bool] = True

    def __call__(self, scalesets: Sequence[GithubScaleSetRef]) -> frozenset[int]:
        """Return GARM's ids of `scalesets` GitHub no longer has; never raises for GitHub.

        Raises:
            GarmUnreachable: GARM did not answer when asked for its endpoint.
        """
        missing = self._confirmed(scalesets)
        for ref in scalesets:
            if ref.scaleset_id in missing:
                logger.warning(
                    "GitHub scale sets: GitHub no longer has %r (GitHub id %d)",
                    ref.name,
                    ref.github_id,
                )
        return missing

    def _ask_entity(
        self,
        installation: Installation,
        items: Sequence[GithubScaleSetRef],
        found: Findings[int],
    ) -> None:
        entity = _Entity(installation.http, installation.endpoint, installation.app, items[0])
        token = installation.token
        actions = entity.actions_service(token)
        groups: dict[str, int | None] = {}
        for ref in items:
            group = ref.runner_group.strip()
            if group not in groups:
                groups[group] = entity.runner_group_id(group, token)
            group_id = groups[group]
            if group_id is None:
                logger.warning(
                    "GitHub scale sets: no runner group %r for %r; not asked", group, ref.name
                )
                continue
            lacks, stats = actions.look_up(ref, group_id)
            if lacks:
                found.add(ref.scaleset_id)
            elif stats is not None and not found.closed:
                self.statistics[ref.scaleset_id] = stats


@dataclasses.dataclass(frozen=True)
class _Entity:
    """One entity's calls: its registration, its runner groups."""

    http: Http
    endpoint: GithubEndpoint
    app: GithubApp
    ref: GithubScaleSetRef

    def actions_service(self, token: str) -> _ActionsService:
        """Open the Actions service as GARM does: a registration token, then its admin URL."""
        path = entity_path(self.ref.entity_kind, self.ref.entity_name)
        url = f"{self.http.base}/{path}/actions/runners/registration-token"
        registration = self.http.send(
            "POST", url, f"Bearer {token}", expect=(201,), installation=self.app.installation_id
        )
        registration_token = string_field(registration, "token", "the registration token answer")
        body = {"url": self.forge_url(), "runner_event": "register"}
        admin = self.http.send(
            "POST",
            _root(self.http.base) + "/actions/runner-registration",
            f"RemoteAuth {registration_token}",
            expect=(200, 201),
            body=body,
        )
        return _ActionsService(
            self.http,
            string_field(admin, "url", "the Actions service answer"),
            string_field(admin, "token", "the Actions service answer"),
        )

    def forge_url(self) -> str:
        """The entity's web URL, as GARM sends it to register (`https://github.com/acme`)."""
        prefix = _FORGE_PATHS[self.ref.entity_kind]
        return f"{self.endpoint.base_url.rstrip('/')}/{prefix}{self.ref.entity_name}"

    def runner_group_id(self, group: str, token: str) -> int | None:
        """The runner group's id: 1 for the default one and for a repository, else looked up.

        None: the entity lists no group of that name.
        """
        if self.ref.entity_kind is EntityKind.REPOSITORY or group.lower() in ("", DEFAULT_GROUP):
            return DEFAULT_GROUP_ID
        path = entity_path(self.ref.entity_kind, self.ref.entity_name)
        for page in range(1, MAX_RUNNER_GROUP_PAGES + 1):
            query = urlencode({"per_page": RUNNER_GROUPS_PER_PAGE, "page": page})
            url = f"{self.http.base}/{path}/actions/runner-groups?{query}"
            sent = self.http.send(
                "GET", url, f"Bearer {token}", expect=(200,), installation=self.app.installation_id
            )
            answer = json_object(sent, "runner groups")
            listed = _groups(answer)
            for name, group_id in listed:
                if name == group:
                    return group_id
            if len(listed) < RUNNER_GROUPS_PER_PAGE:
                return None
        raise GithubUnavailable("too many runner groups to read")


def _groups(answer: Mapping[str, Any]) -> list[tuple[str, int]]:
    listed: Any = answer.get("runner_groups")
    if not isinstance(listed, list):
        raise GithubUnavailable("the runner groups answer has no list")
    return [
        (item["name"], item["id"])
        for item in _objects(cast(list[Any], listed))
        if isinstance(item.get("name"), str) and _is_int(item.get("id"))
    ]


def _objects(items: list[Any]) -> list[dict[str, Any]]:
    return [cast(dict[str, Any], item) for item in items if isinstance(item, dict)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class _ActionsService:
    """The entity's Actions service, where GitHub keeps its scale sets."""

    http: Http
    url: str
    token: str

    def look_up(self, ref: GithubScaleSetRef, group_id: int) -> tuple[bool, ScaleSetStats | None]:
        """Whether GitHub answered that it has no scale set of the name in the group.

        A scale set of that name under another id is not GARM's, but GitHub has one of the
        name: GARM's worker refuses it too, so it is logged and not named missing. With GARM's
        scale set found, also its statistics (None when the answer has none readable).
        """
        query = {"runnerGroupId": group_id, "name": ref.name, "api-version": API_VERSION}
        answer = json_object(
            self.http.send("GET", self._url(query), f"Bearer {self.token}", expect=(200,)),
            "the scale set lookup",
        )
        count = answer.get("count")
        if not _is_int(count):
            raise GithubUnavailable("the scale set lookup has no count")
        if count == 0:
            return True, None
        listed: Any = answer.get("value")
        items = _objects(cast(list[Any], listed)) if isinstance(listed, list) else []
        mine = next((item for item in items if item.get("id") == ref.github_id), None)
        if mine is None:
            logger.warning(
                "GitHub scale sets: GitHub has a scale set named %r that is not GARM's (id %d)",
                ref.name,
                ref.github_id,
            )
            return False, None
        return False, ScaleSetStats.from_wire(mine.get("statistics"))

    def _url(self, query: Mapping[str, object]) -> str:
        """The lookup's URL: the service's URL, its path joined, its own query kept first."""
        parts = urlsplit(self.url)
        path = parts.path.rstrip("/") + "/_apis/runtime/runnerscalesets"
        own = parts.query
        extra = urlencode({k: v for k, v in query.items() if f"{k}=" not in own})
        joined = "&".join(q for q in (own, extra) if q)
        return urlunsplit((parts.scheme, parts.netloc, path, joined, ""))


def _root(api_base: str) -> str:
    """The API base URL's scheme and host: GARM resolves `/actions/runner-registration` there."""
    parts = urlsplit(api_base)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))
