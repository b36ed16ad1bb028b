"""The simulator's database: every record, the id counters and the seeded rows."""

from __future__ import annotations

import base64
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from garm_sim.clock import SimClock
from garm_sim.errors import invalid_request, not_found
from garm_sim.github import GitHubSide
from garm_sim.model import (
    Controller,
    Credentials,
    Endpoint,
    Entity,
    Instance,
    Proxy,
    ScaleSet,
    Tag,
    Template,
    User,
)
from garm_sim.versions import NEWER, V021, GarmVersion

DEFAULT_PROVIDERS = ({"name": "openstack", "type": "external", "description": "simulated"},)

# Seeding order fixes the ids: GARM's recordings show `github_linux` as template 2.
SYSTEM_TEMPLATES = (
    ("github_windows", "windows", "github"),
    ("github_linux", "linux", "github"),
    ("gitea_linux", "linux", "gitea"),
    ("gitea_windows", "windows", "gitea"),
)
# `github_linux` as each version seeds it (the charm's golden files; the newer build is
# afda4e76). The other system templates keep a placeholder body: nothing here reads them.
_GOLDEN = Path(__file__).resolve().parents[2] / "charms/garm/tests/unit/runner_templates"
_GITHUB_LINUX_FILES: dict[GarmVersion, str] = {
    V021: "github_linux-v0.2.1.tmpl",
    NEWER: "github_linux-afda4e76.tmpl",
}


def system_template_description(forge: str, os_type: str) -> str:
    """Return the description GARM gives a system template (`Default Linux ... for GitHub`)."""
    forge_name = {"github": "GitHub", "gitea": "Gitea"}[forge]
    return f"Default {os_type.capitalize()} runner install template for {forge_name}"


def system_template_body(name: str, version: GarmVersion) -> bytes:
    """Return a system template's body: `github_linux` is the version's real text."""
    if name == "github_linux":
        return (_GOLDEN / _GITHUB_LINUX_FILES[version]).read_bytes()
    return b""


@dataclass
class Counters:
    """Next ids of numeric-keyed tables."""

    credentials: int = 1
    template: int = 1
    scaleset: int = 1
    agent: int = 100
    proxy: int = 1


@dataclass
class SimState:
    """Everything GARM would keep in its database, guarded by one lock."""

    clock: SimClock
    providers: list[dict[str, str]]
    garm_version: GarmVersion = V021
    github: GitHubSide = field(default_factory=GitHubSide)
    lock: threading.RLock = field(default_factory=threading.RLock)
    controller: Controller = field(default_factory=lambda: Controller(str(uuid.uuid4())))
    admin: User | None = None
    endpoints: dict[str, Endpoint] = field(default_factory=lambda: {})
    credentials: dict[int, Credentials] = field(default_factory=lambda: {})
    entities: dict[str, Entity] = field(default_factory=lambda: {})
    templates: dict[int, Template] = field(default_factory=lambda: {})
    tags: dict[str, Tag] = field(default_factory=lambda: {})
    scalesets: dict[int, ScaleSet] = field(default_factory=lambda: {})
    instances: dict[str, Instance] = field(default_factory=lambda: {})
    proxies: dict[int, Proxy] = field(default_factory=lambda: {})
    ids: Counters = field(default_factory=Counters)
    # When GARM started (sim clock, ns): its periodic workers count from here.
    started_ns: int = 0

    def __post_init__(self) -> None:
        """Seed what GARM creates at first start: the github.com endpoint and system templates."""
        self.started_ns = self.clock.now_ns()
        now = self.clock.stamp()
        self.endpoints["github.com"] = Endpoint(
            name="github.com",
            description="The github.com endpoint",
            api_base_url="https://api.github.com/",
            upload_base_url="https://uploads.github.com/",
            base_url="https://github.com",
            created_at=now,
            updated_at=now,
        )
        self.seed_system_templates()

    def seed_system_templates(self) -> None:
        """Add the system templates that are missing (at start, and `template restore`)."""
        present = {t.name for t in self.templates.values() if t.owner_id == "system"}
        for name, os_type, forge in SYSTEM_TEMPLATES:
            if name not in present:
                description = system_template_description(forge, os_type)
                body = system_template_body(name, self.garm_version)
                self.add_template(name, description, os_type, forge, "system", body)

    def add_template(
        self, name: str, description: str, os_type: str, forge: str, owner: str, data: bytes = b""
    ) -> Template:
        """Insert a template and return it."""
        now = self.clock.stamp()
        body = data or f"#!/bin/sh\n# {name} install template\n".encode()
        template = Template(
            self.ids.template, name, description, os_type, forge, body, owner, now, now
        )
        self.templates[template.id] = template
        self.ids.template += 1
        return template

    def provider_names(self) -> set[str]:
        """Return the names of the configured providers."""
        return {provider["name"] for provider in self.providers}

    def tag_for(self, label: str) -> Tag:
        """Return the global tag for a label, matching case-insensitively, creating it if new."""
        for tag in self.tags.values():
            if tag.name.lower() == label.lower():
                return tag
        tag = Tag(str(uuid.uuid4()), label)
        self.tags[tag.id] = tag
        return tag

    def start_scaleset_workers(self) -> None:
        """GARM's worker start (`ensureScaleSetInGitHub`): a set GitHub lost is created again.

        The new GitHub id is stored and `updated_at` moves, as on both real builds (B33).
        """
        for scaleset in self.scalesets.values():
            if scaleset.github_id in self.github.scale_sets:
                continue
            labels = [self.tags[tag_id].name for tag_id in scaleset.tag_ids]
            record = self.github.create(
                scaleset.entity_id, scaleset.name, scaleset.runner_group, labels
            )
            scaleset.github_id = record.id
            scaleset.updated_at = self.clock.stamp()

    def scaleset(self, raw_id: str) -> ScaleSet:
        """Return a scale set by its path id.

        Raises:
            ApiError: 400 for a non-numeric id, 404 for an unknown one.
        """
        found = self.scalesets.get(parse_numeric_id(raw_id))
        if found is None:
            raise not_found("error fetching scale set: error fetching scale set by ID: not found")
        return found

    def scaleset_instances(self, scaleset_id: int) -> list[Instance]:
        """Return a scale set's instances, oldest first."""
        found = [i for i in self.instances.values() if i.scaleset_id == scaleset_id]
        return sorted(found, key=lambda instance: instance.created_ns)

    def entity_endpoint(self, entity: Entity) -> Endpoint:
        """Return the endpoint an entity's credentials point at."""
        return self.endpoints[self.credentials[entity.credentials_id].endpoint]


def parse_numeric_id(raw_id: str) -> int:
    """Parse a numeric path id.

    Raises:
        ApiError: 400 `invalid request` when it is not a number.
    """
    if not raw_id.isdigit():
        raise invalid_request()
    return int(raw_id)


def b64encode(data: bytes) -> str:
    """Encode bytes the way Go marshals `[]byte`."""
    return base64.b64encode(data).decode("ascii")
