"""The simulator's records: what GARM keeps in its database, reduced to what the API shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EntityKind = Literal["repository", "organization", "enterprise"]

# Instance statuses from which GARM lets a client delete a runner (runner/runner.go DeleteRunner).
DELETABLE_STATUSES = ("running", "error", "pending_force_delete", "pending_delete")
DELETING_STATUSES = ("pending_delete", "pending_force_delete", "deleting")


@dataclass
class User:
    """The admin user made by first-run."""

    id: str
    username: str
    email: str
    full_name: str
    password: str
    created_at: str
    generation: int = 0


@dataclass
class Controller:
    """The controller row: exists from start; URLs are set through PUT /controller."""

    controller_id: str
    metadata_url: str = ""
    callback_url: str = ""
    webhook_url: str = ""
    agent_url: str = ""
    minimum_job_age_backoff: int = 30
    ca_cert_bundle: str = ""
    garm_agent_releases_url: str = "https://api.github.com/repos/cloudbase/garm-agent/releases"
    agent_releases_fetched_at: str = ""
    # The newer GARM's cache worker fetches a new releases index after the PUT that set it
    # (sim clock, ns; 0: nothing due). The PUT's own answer never shows the fetch.
    agent_releases_fetch_due_ns: int = 0


@dataclass
class Endpoint:
    """A GitHub endpoint."""

    name: str
    description: str
    api_base_url: str
    upload_base_url: str
    base_url: str
    created_at: str
    updated_at: str
    ca_cert_bundle: str = ""


@dataclass
class Credentials:
    """GitHub credentials (PAT or App); secrets are kept but never serialised."""

    id: int
    name: str
    description: str
    auth_type: str
    endpoint: str
    created_at: str
    updated_at: str
    secret: dict[str, Any] = field(default_factory=lambda: {})
    # When they were created (sim clock); 0: before GARM started (seeded), so already fetched.
    created_ns: int = 0
    # GARM recorded GitHub's rate limit for them (from any GitHub answer's X-RateLimit headers).
    rate_limit_seen: bool = False


@dataclass
class Entity:
    """A repository, organization or enterprise."""

    id: str
    kind: EntityKind
    owner: str
    name: str
    credentials_id: int
    webhook_secret: str
    pool_balancing_type: str
    created_at: str
    updated_at: str
    agent_mode: bool = False
    # GARM's entity pool manager: "starting up" until its first pass (it fetched the tools).
    pool_manager_running: bool = False
    # GARM's entity events (`{"id", "created_at", "event_type", "event_level", "message"}`).
    events: list[dict[str, Any]] = field(default_factory=lambda: [])

    @property
    def display_name(self) -> str:
        """Return `owner/name` for repositories and the name otherwise."""
        return f"{self.owner}/{self.name}" if self.kind == "repository" else self.name


@dataclass
class Template:
    """A runner install template; `data` holds the decoded bytes."""

    id: int
    name: str
    description: str
    os_type: str
    forge_type: str
    data: bytes
    owner_id: str
    created_at: str
    updated_at: str


@dataclass
class Tag:
    """A global tag row, shared by every scale set that uses the label (any letter case)."""

    id: str
    name: str


@dataclass
class Instance:
    """A runner instance of a scale set."""

    id: str
    name: str
    provider_id: str
    provider_name: str
    agent_id: int
    scaleset_id: int
    os_type: str
    os_arch: str
    runner_group: str
    created_at: str
    updated_at: str
    created_ns: int
    status: str = "running"
    # GARM sets `pending` at creation; only the runner itself (or GitHub listing it) moves it on.
    runner_status: str = "pending"
    provider_fault: bytes = b""
    # When GitHub dropped the ephemeral runner after its job while no listener ran (a disabled
    # scale set): GARM notices only at its next agents-list consolidation.
    job_finished_ns: int | None = None
    # What the runner reported through the callback URL (GARM's instance status events).
    status_messages: list[dict[str, str]] = field(default_factory=lambda: [])


@dataclass
class ScaleSet:
    """A scale set row plus the GitHub-side id it is linked to."""

    id: int
    github_id: int
    entity_id: str
    name: str
    provider_name: str
    image: str
    flavor: str
    os_type: str
    os_arch: str
    runner_prefix: str
    runner_group: str
    template_id: int
    tag_ids: list[str]
    created_at: str
    updated_at: str
    max_runners: int = 0
    min_idle_runners: int = 0
    enabled: bool = False
    disable_update: bool = False
    enable_shell: bool = False
    runner_bootstrap_timeout: int = 20
    extra_specs: str = ""
    extended_state: str = ""
    state: str = "pending_create"
    desired_runner_count: int = 0
    generation: int = 0
    proxy_id: int = 0


@dataclass
class Proxy:
    """An outbound proxy definition for runners (newer GARM only); the password never leaves."""

    id: int
    name: str
    created_at: str
    updated_at: str
    description: str = ""
    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy: str = ""
    username: str = ""
    password: str = ""
