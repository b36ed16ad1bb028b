"""The GitHub side of scale sets, as GARM experiences it, with switches for GitHub's quirks.

GARM creates, renames and deletes each scale set at GitHub (the Actions service) and maps
GitHub's refusals onto its own answers. The switches here reproduce what the charm must survive:
a name-length limit, labels silently dropped by older GHES, bad credentials, and deletes that
GitHub does not confirm with 204 (GARM then answers 200 but keeps the scale set).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from garm_sim.errors import ApiError, bad_request, conflict, not_authorized, not_found

_ACTIONS_URL = "http://127.0.0.1:19998/_services/pipelines/sim/_apis/runtime/runnerscalesets"


@dataclass
class GitHubScaleSet:
    """A scale set as GitHub knows it."""

    id: int
    entity_id: str
    name: str
    runner_group: str
    labels: list[str]


@dataclass
class GitHubBehaviour:
    """Switches that tests flip to make GitHub misbehave.

    Attributes:
        max_name_length: GitHub refuses longer scale-set names (400); None = no limit.
        max_labels: older GHES keeps only this many labels besides the name; None = all.
        dropped_labels: labels GitHub silently drops (compared case-insensitively).
        delete_status: GitHub's answer to a scale-set DELETE; anything but 204 makes GARM
            answer 200 and keep the scale set.
        bad_credentials: GitHub refuses the credentials GARM holds.
        runner_groups: runner groups that exist at GitHub (org/enterprise lookups, renames).
        runners_report: booted runners report to GARM (`installing`, then `idle`), as GARM's
            install script makes them do; False stands for a broken image or flavor: they stay
            `pending` and never take a job.
    """

    max_name_length: int | None = None
    max_labels: int | None = None
    dropped_labels: set[str] = field(default_factory=set[str])
    delete_status: int = 204
    bad_credentials: bool = False
    runner_groups: set[str] = field(default_factory=lambda: {"Default"})
    runners_report: bool = True


class GitHubSide:
    """What GitHub holds: scale sets by GitHub id, plus the behaviour switches."""

    def __init__(self) -> None:
        self.behaviour = GitHubBehaviour()
        self.scale_sets: dict[int, GitHubScaleSet] = {}
        self._next_id = 1

    def check_credentials(self) -> None:
        """Fail the way GARM does when GitHub refuses its credentials during a create.

        Raises:
            ApiError: 500 with empty details (go-github REST errors are untyped in GARM).
        """
        if self.behaviour.bad_credentials:
            raise ApiError(500, "Server error", "")

    def resolve_group(self, entity_id: str, group: str, *, is_repo: bool) -> None:
        """Look a runner group up the way GARM does at create.

        Args:
            entity_id: the GARM entity id (for the message).
            group: the requested group name.
            is_repo: repositories always use group 1 without asking GitHub.

        Raises:
            ApiError: 404 when an org/enterprise group does not exist at GitHub.
        """
        if is_repo or group.lower() in ("", "default") or group in self.behaviour.runner_groups:
            return
        raise not_found(
            f"failed to get github runner group for entity {entity_id}: "
            f"getting runner group ID: runner group {group} not found"
        )

    def create(self, entity_id: str, name: str, group: str, labels: list[str]) -> GitHubScaleSet:
        """Create a scale set at GitHub.

        Args:
            entity_id: the owning GARM entity.
            name: the scale-set name.
            group: the runner group name.
            labels: the labels asked for.

        Returns:
            The GitHub-side record (its labels are what GitHub kept).

        Raises:
            ApiError: 400 for a refused name, 409 for a duplicate in the runner group.
        """
        self._check_name(
            name, "error creating runner scale set: failed to create runner scale set"
        )
        for existing in self.scale_sets.values():
            if (existing.entity_id, existing.name, existing.runner_group) == (
                entity_id,
                name,
                group,
            ):
                raise conflict(
                    "error creating runner scale set: failed to create runner scale set: "
                    f"conflict while calling {_ACTIONS_URL}: "
                    f'"{{\\"message\\": \\"scale set {name} already exists in runner group\\"}}"'
                )
        record = GitHubScaleSet(self._next_id, entity_id, name, group, self._kept_labels(labels))
        self._next_id += 1
        self.scale_sets[record.id] = record
        return record

    def rename(self, github_id: int, name: str) -> None:
        """Rename a scale set at GitHub (GARM's update PATCH).

        Raises:
            ApiError: 400 when GitHub refuses the name.
        """
        self._check_name(
            name,
            "error updating pool: error executing update callback: "
            "failed to update scaleset in github: failed to make request",
        )
        record = self.scale_sets.get(github_id)
        if record is not None:
            record.name = name

    def change_group(self, github_id: int, group: str) -> None:
        """Move a scale set to another runner group at GitHub.

        Raises:
            ApiError: 404 when the group does not exist at GitHub.
        """
        if group.lower() != "default" and group not in self.behaviour.runner_groups:
            raise not_found(
                "error updating pool: error executing update callback: error fetching runner "
                f"group from github: runner group {group} does not exist"
            )
        record = self.scale_sets.get(github_id)
        if record is not None:
            record.runner_group = group

    def delete(self, github_id: int) -> bool:
        """Delete a scale set at GitHub.

        Returns:
            True only when GitHub confirmed with 204 (the only answer GARM accepts).
        """
        if self.behaviour.bad_credentials or self.behaviour.delete_status != 204:
            return False
        # GitHub answers 404 for a scale set it no longer has, and GARM wants 204 (B15, B33).
        return self.scale_sets.pop(github_id, None) is not None

    def drop(self, github_id: int) -> None:
        """Forget a scale set, as GitHub does with one whose listener stayed offline for days."""
        self.scale_sets.pop(github_id, None)

    def check_unauthorized(self) -> None:
        """Fail like GARM does when GitHub answers 401/403 during a scale-set operation.

        Raises:
            ApiError: 401 `Not Authorized` with empty details.
        """
        if self.behaviour.bad_credentials:
            raise not_authorized()

    def _check_name(self, name: str, prefix: str) -> None:
        limit = self.behaviour.max_name_length
        if limit is None or len(name) <= limit:
            return
        github_body = json.dumps(
            {
                "$id": "1",
                "message": f"runner scale set name longer than {limit} characters",
                "typeName": "GitHub.Actions.WebApi.ValidationException",
                "typeKey": "ValidationException",
                "errorCode": 0,
                "eventId": 3000,
            }
        )
        raise bad_request(
            f"{prefix}: bad request while calling {_ACTIONS_URL}: {json.dumps(github_body)}"
        )

    def _kept_labels(self, labels: list[str]) -> list[str]:
        dropped = {label.lower() for label in self.behaviour.dropped_labels}
        kept = [label for label in labels if label.lower() not in dropped]
        if self.behaviour.max_labels is not None:
            kept = kept[: self.behaviour.max_labels]
        return kept
