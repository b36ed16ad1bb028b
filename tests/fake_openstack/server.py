"""A fake OpenStack on 127.0.0.1: what `garm-provider-openstack` calls, and nothing more.

One port serves every service under its own prefix, as a cloud behind one proxy does:
`/identity` (Keystone v3: password tokens with a service catalog),
`/compute/v2.1` (Nova: flavors, servers with user data, config drive, metadata and tags,
force-delete, start and stop), `/image` (Glance v2 images), `/network` (Neutron v2.0 networks)
and `/volume/v3` (Cinder: in the catalog only; the provider builds its client and, without
boot-from-volume, never calls it). State is in memory; every request is recorded.

The answers carry the fields and types OpenStack sends (the provider's gophercloud client must
parse them). A created server is `ACTIVE` at once and "boots" in the background: `boot.py`
reads the user data the provider built and reports to GARM as cloud-init would make a runner do.

Every request to Nova and Keystone is checked with the service's own request schema (`schemas`:
Nova's at the microversion the request names, so its tag, name, metadata and user-data limits),
and refused as the service refuses it: 400 with the service's own message. Every answer the fake
gives Nova's calls is checked with Nova's response schema; a fault there is the fake's, kept in
`schema_faults` and raised when the fake stops, so no test passes on an answer Nova never gives.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import secrets
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fake_github.loopback import LoopbackServer
from fake_openstack.schemas import SchemaChecker

CREATED = "2026-01-01T00:00:00Z"
TOKEN_EXPIRES = "2099-01-01T00:00:00.000000Z"
REGION = "RegionOne"
PROJECT_ID = "9c1b3e4f6a7d4e2b8f0a1c2d3e4f5a6b"
USER_ID = "5d2f1e0c9b8a47f6a3e2d1c0b9a8f7e6"
DOMAIN = {"id": "default", "name": "Default"}
# How much of a response-schema fault the failure shows (Nova's message quotes the document).
FAULT_SHOWN = 600


@dataclasses.dataclass(frozen=True)
class GlanceImage:
    """One Glance image and who sees it.

    Attributes:
        name: the image's name.
        visibility: `public`, `private`, `shared` or `community` (Glance v2's four).
        owner: the owning project's id; another id than `PROJECT_ID` is another project's.
        member_status: this project's membership of another project's `shared` image
            (`accepted`, `pending`, `rejected`), None when it is no member.
    """

    name: str
    visibility: str = "public"
    owner: str = PROJECT_ID
    member_status: str | None = None


@dataclasses.dataclass(frozen=True)
class Cloud:
    """What the fake cloud holds before any server: the account and the resources by name.

    Attributes:
        username: the only user Keystone knows.
        password: that user's password; anything else is 401.
        project_name: the only project.
        flavors: flavor names (ids are generated).
        images: the images, unique by name: a plain name is public and the project's own (ids
            are generated; active, Ubuntu 24.04 properties).
        networks: network names (ids are generated).
    """

    username: str
    password: str
    project_name: str = "ci"
    flavors: tuple[str, ...] = ("m1.small",)
    images: tuple[str | GlanceImage, ...] = ("ubuntu-24.04",)
    networks: tuple[str, ...] = ("runners-net",)


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as the fake received it; `microversion` is the compute one it names."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    microversion: str = ""


@dataclasses.dataclass
class Server:
    """A Nova server as the provider asked for it.

    Attributes:
        id: the server's UUID.
        name: the name the provider gave (GARM's instance name).
        request: the `server` object of the create request, as sent.
        user_data: the user data, base64-decoded.
        status: `ACTIVE` or `SHUTOFF`.
        deleted: whether it was deleted (kept, so a test sees what existed).
    """

    id: str
    name: str
    request: dict[str, Any]
    user_data: str
    status: str = "ACTIVE"
    deleted: bool = False

    @property
    def tags(self) -> list[str]:
        """The server's tags."""
        return list(self.request.get("tags") or [])

    @property
    def metadata(self) -> dict[str, str]:
        """The server's metadata."""
        return dict(self.request.get("metadata") or {})


Booter = Callable[[Server], None]


class FakeOpenStack(LoopbackServer):
    """Keystone, Nova, Glance and Neutron on one loopback port.

    Args:
        cloud: the account and the resources.
        boot: called in a thread with each created server (None: servers boot nothing).
    """

    def __init__(self, cloud: Cloud, boot: Booter | None = None) -> None:
        super().__init__()
        self.schemas = SchemaChecker.shared()
        self.cloud = cloud
        self.boot = boot
        self.requests: list[Request] = []
        self.schema_faults: list[str] = []
        self.servers: dict[str, Server] = {}
        self.tokens: set[str] = set()
        self.flavors = {name: _flavor(index, name) for index, name in enumerate(cloud.flavors)}
        self.glance_images = {
            image.name: image
            for image in (GlanceImage(i) if isinstance(i, str) else i for i in cloud.images)
        }
        self.images = {name: _image(image) for name, image in self.glance_images.items()}
        self.networks = {name: _network(name) for name in cloud.networks}
        self.lock = threading.RLock()

    def stop(self) -> None:
        """Stop serving; an answer Nova's response schemas refused fails the test here."""
        super().stop()
        if self.schema_faults:
            faults = "; ".join(self.schema_faults)
            raise AssertionError(f"the fake OpenStack answered as Nova never does: {faults}")

    @property
    def auth_url(self) -> str:
        """Keystone's versioned URL, as a clouds.yaml names it."""
        return f"{self.url}/identity/v3"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this fake."""
        return type("Handler", (_Handler,), {"cloud": self})

    def live_servers(self) -> list[Server]:
        """The servers not deleted, oldest first."""
        with self.lock:
            return [server for server in self.servers.values() if not server.deleted]

    def created_servers(self) -> list[Server]:
        """Every server ever created, oldest first."""
        with self.lock:
            return list(self.servers.values())

    def requests_to(self, method: str, pattern: str) -> list[Request]:
        """The recorded requests with `method` whose path matches `pattern` (a regex)."""
        with self.lock:
            return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    # Routing ---------------------------------------------------------------------------------

    def answer(self, request: Request, token: str) -> tuple[int, Any, dict[str, str]]:
        """Status, JSON body (None = empty) and extra headers for one request.

        Past authentication, a request the service's schema refuses is answered as the service
        answers it; a successful answer is checked with Nova's response schema.
        """
        with self.lock:
            self.requests.append(request)
        path = request.path.rstrip("/")
        if not path.startswith("/identity") and token not in self.tokens:
            return (
                401,
                {
                    "error": {
                        "code": 401,
                        "message": "The request you have made requires authentication.",
                        "title": "Unauthorized",
                    }
                },
                {},
            )
        operation = _operation(request)
        if operation is None:
            return self._route(request, path)
        refusal = self._refusal(operation, request)
        if refusal is not None:
            return refusal
        status, document, headers = self._route(request, path)
        if operation[1] != "identity.tokens" and status < 300:
            self._check_answer(operation[1], document, request.microversion)
        return status, document, headers

    def _refusal(
        self, operation: tuple[bool, str], request: Request
    ) -> tuple[int, Any, dict[str, str]] | None:
        """The service's 400 for a request its own schema refuses, or None."""
        is_body, name = operation
        document = request.body if is_body else request.query
        refusal = self.schemas.request(
            name, document, microversion=request.microversion, query=not is_body
        )
        if refusal is None:
            return None
        if name == "identity.tokens":
            return 400, {"error": {"code": 400, "message": refusal, "title": "Bad Request"}}, {}
        return 400, {"badRequest": {"code": 400, "message": refusal}}, {}

    def _check_answer(self, operation: str, document: Any, microversion: str) -> None:
        fault = self.schemas.response(operation, document, microversion=microversion)
        if fault is not None:
            with self.lock:
                self.schema_faults.append(f"{operation}: {fault[:FAULT_SHOWN]}")

    def _route(self, request: Request, path: str) -> tuple[int, Any, dict[str, str]]:
        if path.startswith("/identity"):
            return self._identity(request, path.removeprefix("/identity"))
        for prefix, route in (
            ("/compute/v2.1", self._compute),
            ("/image/v2", self._image),
            ("/network/v2.0", self._network),
        ):
            if path.startswith(prefix):
                return route(request, path.removeprefix(prefix))
        return _not_found(request.path)

    def _identity(self, request: Request, path: str) -> tuple[int, Any, dict[str, str]]:
        if request.method == "POST" and path == "/v3/auth/tokens":
            return self._issue_token(request.body)
        return _not_found(request.path)

    def _issue_token(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        identity = (body or {}).get("auth", {}).get("identity", {})
        user = identity.get("password", {}).get("user", {})
        project = (body or {}).get("auth", {}).get("scope", {}).get("project", {})
        if (
            identity.get("methods") != ["password"]
            or user.get("name") != self.cloud.username
            or user.get("password") != self.cloud.password
            or project.get("name") != self.cloud.project_name
        ):
            return (
                401,
                {
                    "error": {
                        "code": 401,
                        "message": "The request you have made requires authentication.",
                        "title": "Unauthorized",
                    }
                },
                {},
            )
        token = f"gAAAAA{secrets.token_urlsafe(48)}"
        with self.lock:
            self.tokens.add(token)
        document = {
            "token": {
                "methods": ["password"],
                "user": {
                    "id": USER_ID,
                    "name": self.cloud.username,
                    "domain": DOMAIN,
                    "password_expires_at": None,
                },
                "audit_ids": [secrets.token_urlsafe(16)],
                "expires_at": TOKEN_EXPIRES,
                "issued_at": "2026-01-01T00:00:00.000000Z",
                "project": {"id": PROJECT_ID, "name": self.cloud.project_name, "domain": DOMAIN},
                "is_domain": False,
                "roles": [{"id": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "name": "member"}],
                "catalog": self._catalog(),
            }
        }
        return 201, document, {"X-Subject-Token": token}

    def _catalog(self) -> list[dict[str, Any]]:
        services = (
            ("identity", "keystone", f"{self.url}/identity"),
            ("compute", "nova", f"{self.url}/compute/v2.1"),
            ("image", "glance", f"{self.url}/image"),
            ("network", "neutron", f"{self.url}/network"),
            ("volumev3", "cinderv3", f"{self.url}/volume/v3/{PROJECT_ID}"),
            ("block-storage", "cinder", f"{self.url}/volume/v3/{PROJECT_ID}"),
        )
        return [
            {
                "id": uuid.uuid5(uuid.NAMESPACE_URL, kind).hex,
                "type": kind,
                "name": name,
                "endpoints": [
                    {
                        "id": uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{interface}").hex,
                        "interface": interface,
                        "region": REGION,
                        "region_id": REGION,
                        "url": url,
                    }
                    for interface in ("public", "internal", "admin")
                ],
            }
            for kind, name, url in services
        ]

    # Nova --------------------------------------------------------------------------------------

    def _compute(self, request: Request, path: str) -> tuple[int, Any, dict[str, str]]:
        if path.startswith("/flavors"):
            return self._flavor(request, path)
        if request.method == "POST" and path == "/servers":
            return self._create_server(request.body)
        if request.method == "GET" and path == "/servers/detail":
            return 200, {"servers": self._list_servers(request.query)}, {}
        if found := re.fullmatch(r"/servers/([0-9a-f-]{36})(/action)?", path):
            return self._one_server(request, found[1], action=bool(found[2]))
        return _not_found(request.path)

    def _one_server(
        self, request: Request, server_id: str, *, action: bool
    ) -> tuple[int, Any, dict[str, str]]:
        server = self.servers.get(server_id)
        if server is None or server.deleted:
            return _item_not_found("Instance", server_id)
        if request.method == "GET" and not action:
            return 200, {"server": self._server_document(server)}, {}
        if request.method == "POST" and action:
            return self._server_action(server, request.body)
        return _not_found(request.path)

    def _flavor(self, request: Request, path: str) -> tuple[int, Any, dict[str, str]]:
        if request.method == "GET" and path == "/flavors/detail":
            return 200, {"flavors": list(self.flavors.values())}, {}
        if request.method == "GET" and (found := re.fullmatch(r"/flavors/([^/]+)", path)):
            # Nova looks flavors up by id only: a name is 404 (the provider then lists them).
            flavor = next((f for f in self.flavors.values() if f["id"] == found[1]), None)
            if flavor is None:
                return _item_not_found("Flavor", found[1])
            return 200, {"flavor": flavor}, {}
        return _not_found(request.path)

    def _create_server(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        wanted: dict[str, Any] = (body or {}).get("server", {})
        flavor_ids = {flavor["id"] for flavor in self.flavors.values()}
        image_ids = {image["id"] for image in self.images.values()}
        network_ids = {network["id"] for network in self.networks.values()}
        asked_networks = {network.get("uuid") for network in wanted.get("networks", [])}
        if (
            wanted.get("flavorRef") not in flavor_ids
            or wanted.get("imageRef") not in image_ids
            or not asked_networks <= network_ids
        ):
            return (
                400,
                {
                    "badRequest": {
                        "code": 400,
                        "message": "Invalid flavorRef, imageRef or network provided.",
                    }
                },
                {},
            )
        user_data = base64.b64decode(wanted.get("user_data", "")).decode()
        server = Server(str(uuid.uuid4()), wanted.get("name", ""), wanted, user_data)
        with self.lock:
            self.servers[server.id] = server
        if self.boot is not None:
            threading.Thread(target=self.boot, args=(server,), daemon=True).start()
        document = {
            "id": server.id,
            "links": self._server_links(server),
            "OS-DCF:diskConfig": "MANUAL",
            "security_groups": [{"name": "default"}],
            "adminPass": secrets.token_urlsafe(9),
        }
        return 202, {"server": document}, {}

    def _list_servers(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        # `tags` is a comma-separated list; a server matches when it has all of them (Nova).
        wanted = {tag for value in query.get("tags", []) for tag in value.split(",") if tag}
        return [
            self._server_document(server)
            for server in self.live_servers()
            if wanted <= set(server.tags)
        ]

    def _server_action(self, server: Server, body: Any) -> tuple[int, Any, dict[str, str]]:
        action = next(iter(body or {}), "")
        with self.lock:
            if action == "forceDelete":
                server.deleted = True
            elif action == "os-stop":
                server.status = "SHUTOFF"
            elif action == "os-start":
                server.status = "ACTIVE"
            else:
                return 400, {"badRequest": {"code": 400, "message": f"no action {action}"}}, {}
        return 202, None, {}

    def _server_document(self, server: Server) -> dict[str, Any]:
        flavor = next(f for f in self.flavors.values() if f["id"] == server.request["flavorRef"])
        networks = [
            n
            for n in self.networks.values()
            if n["id"] in {w.get("uuid") for w in server.request.get("networks", [])}
        ]
        address = f"10.0.0.{list(self.servers).index(server.id) % 250 + 2}"
        return {
            "id": server.id,
            "name": server.name,
            "status": server.status,
            "tenant_id": PROJECT_ID,
            "user_id": USER_ID,
            "metadata": server.metadata,
            "hostId": "a" * 56,
            "image": {"id": server.request["imageRef"], "links": []},
            "flavor": {
                "vcpus": flavor["vcpus"],
                "ram": flavor["ram"],
                "disk": flavor["disk"],
                "ephemeral": 0,
                "swap": 0,
                "original_name": flavor["name"],
                "extra_specs": {},
            },
            "created": CREATED,
            "updated": CREATED,
            "addresses": {
                network["name"]: [
                    {
                        "version": 4,
                        "addr": address,
                        "OS-EXT-IPS:type": "fixed",
                        "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01",
                    }
                ]
                for network in networks
            },
            "accessIPv4": "",
            "accessIPv6": "",
            "links": self._server_links(server),
            "OS-DCF:diskConfig": "MANUAL",
            "progress": 0,
            "OS-EXT-AZ:availability_zone": "nova",
            "config_drive": "True" if server.request.get("config_drive") else "",
            "key_name": None,
            "OS-SRV-USG:launched_at": "2026-01-01T00:00:00.000000",
            "OS-SRV-USG:terminated_at": None,
            "security_groups": [{"name": "default"}],
            "OS-EXT-STS:task_state": None,
            "OS-EXT-STS:vm_state": "active" if server.status == "ACTIVE" else "stopped",
            "OS-EXT-STS:power_state": 1 if server.status == "ACTIVE" else 4,
            "os-extended-volumes:volumes_attached": [],
            "locked": False,
            "description": None,
            "tags": server.tags,
            "trusted_image_certificates": None,
            # `server_groups` is in the answer from microversion 2.71 only; the provider asks
            # for 2.67, and Nova's response schema for 2.67 refuses it.
        }

    def _server_links(self, server: Server) -> list[dict[str, str]]:
        href = f"{self.url}/compute/v2.1/servers/{server.id}"
        return [{"rel": "self", "href": href}, {"rel": "bookmark", "href": href}]

    # Glance and Neutron -------------------------------------------------------------------------

    def _image(self, request: Request, path: str) -> tuple[int, Any, dict[str, str]]:
        if request.method == "GET" and path == "/images":
            query = {key: values[-1] for key, values in request.query.items()}
            found = [
                image
                for name, image in self.images.items()
                if _listed(self.glance_images[name], query)
                and all(
                    image.get(key) == value
                    for key, value in query.items()
                    if key in ("name", "status")
                )
            ]
            return (
                200,
                {"images": found, "schema": "/v2/schemas/images", "first": "/v2/images"},
                {},
            )
        if request.method == "GET" and (found_id := re.fullmatch(r"/images/([^/]+)", path)):
            # By id Glance shows any image the project sees, whatever its membership's status.
            seen = {"visibility": "all", "member_status": "all"}
            image = next(
                (
                    image
                    for name, image in self.images.items()
                    if image["id"] == found_id[1] and _listed(self.glance_images[name], seen)
                ),
                None,
            )
            if image is None:
                return _not_found(request.path)
            return 200, image, {}
        return _not_found(request.path)

    def _network(self, request: Request, path: str) -> tuple[int, Any, dict[str, str]]:
        if request.method == "GET" and path == "/networks":
            return 200, {"networks": list(self.networks.values())}, {}
        if request.method == "GET" and (found := re.fullmatch(r"/networks/([^/]+)", path)):
            network = next((n for n in self.networks.values() if n["id"] == found[1]), None)
            if network is None:
                return (
                    404,
                    {
                        "NeutronError": {
                            "type": "NetworkNotFound",
                            "message": f"Network {found[1]} could not be found.",
                            "detail": "",
                        }
                    },
                    {},
                )
            return 200, {"network": network}, {}
        return _not_found(request.path)


def _flavor(index: int, name: str) -> dict[str, Any]:
    return {
        "id": str(index + 1),
        "name": name,
        "ram": 2048,
        "vcpus": 1,
        "disk": 20,
        "swap": "",
        "OS-FLV-EXT-DATA:ephemeral": 0,
        "OS-FLV-DISABLED:disabled": False,
        "os-flavor-access:is_public": True,
        "rxtx_factor": 1.0,
        "description": None,
        "extra_specs": {},
        "links": [],
    }


def _listed(image: GlanceImage, query: dict[str, str]) -> bool:
    """Whether Glance v2 lists `image` to this project (a regular user) for `query`.

    What the project sees: public and community images, its own whatever their visibility,
    and others' shared images it is a member of with `member_status` (`accepted` unless the
    query says; `all` for any). `visibility=all` keeps all of them; another visibility keeps
    those with exactly that one; no visibility drops community images of other projects.
    """
    member_status = query.get("member_status", "accepted")
    own = image.owner == PROJECT_ID
    member = image.member_status is not None and member_status in ("all", image.member_status)
    if not (image.visibility in ("public", "community") or own or member):
        return False
    visibility = query.get("visibility")
    if visibility is None:
        return own or image.visibility != "community"
    return visibility in ("all", image.visibility)


def _image(image: GlanceImage) -> dict[str, Any]:
    name = image.name
    image_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"image/{name}"))
    return {
        "id": image_id,
        "name": name,
        "status": "active",
        "visibility": image.visibility,
        "owner": image.owner,
        "protected": False,
        "os_hidden": False,
        "checksum": "0" * 32,
        "os_hash_algo": "sha512",
        "os_hash_value": "0" * 128,
        "min_disk": 0,
        "min_ram": 0,
        "size": 2361393152,
        "virtual_size": None,
        "disk_format": "qcow2",
        "container_format": "bare",
        "created_at": CREATED,
        "updated_at": CREATED,
        "tags": [],
        "self": f"/v2/images/{image_id}",
        "file": f"/v2/images/{image_id}/file",
        "schema": "/v2/schemas/image",
        "os_distro": "ubuntu",
        "os_version": "24.04",
        "architecture": "x86_64",
    }


def _network(name: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"network/{name}")),
        "name": name,
        "status": "ACTIVE",
        "subnets": [],
        "admin_state_up": True,
        "tenant_id": PROJECT_ID,
        "project_id": PROJECT_ID,
        "shared": False,
        "external": False,
        "mtu": 1450,
        "availability_zone_hints": [],
        "availability_zones": ["nova"],
        "tags": [],
        "revision_number": 1,
        "created_at": CREATED,
        "updated_at": CREATED,
        "description": "",
    }


# Nova's and Keystone's controller methods (`schemas`) by request: (checks the body, name).
_OPERATIONS: tuple[tuple[str, str, tuple[bool, str]], ...] = (
    ("POST", r"/identity/v3/auth/tokens", (True, "identity.tokens")),
    ("POST", r"/compute/v2\.1/servers", (True, "servers.create")),
    ("GET", r"/compute/v2\.1/servers/detail", (False, "servers.detail")),
    ("GET", r"/compute/v2\.1/servers/[0-9a-f-]{36}", (False, "servers.show")),
    ("GET", r"/compute/v2\.1/flavors/detail", (False, "flavors.detail")),
    ("GET", r"/compute/v2\.1/flavors/[^/]+", (False, "flavors.show")),
)
_ACTIONS = {"os-start": "servers.os-start", "os-stop": "servers.os-stop"}


def _operation(request: Request) -> tuple[bool, str] | None:
    """Which service operation `request` is, to check it with that operation's schema."""
    path = request.path.rstrip("/")
    if request.method == "POST" and re.fullmatch(
        r"/compute/v2\.1/servers/[0-9a-f-]{36}/action", path
    ):
        action = next(iter(request.body or {}), "")
        return (True, _ACTIONS.get(action, "servers.forceDelete"))
    for method, pattern, operation in _OPERATIONS:
        if request.method == method and re.fullmatch(pattern, path):
            return operation
    return None


def _microversion(headers: Any) -> str:
    """The compute microversion a request names (gophercloud sends both headers)."""
    legacy = headers.get("X-OpenStack-Nova-API-Version", "")
    if legacy:
        return legacy.strip()
    current = headers.get("OpenStack-API-Version", "")
    service, _, version = current.strip().partition(" ")
    return version.strip() if service == "compute" else ""


def _not_found(path: str) -> tuple[int, Any, dict[str, str]]:
    return (
        404,
        {"error": {"code": 404, "message": f"no such resource: {path}", "title": "Not Found"}},
        {},
    )


def _item_not_found(kind: str, item: str) -> tuple[int, Any, dict[str, str]]:
    return (
        404,
        {"itemNotFound": {"code": 404, "message": f"{kind} {item} could not be found."}},
        {},
    )


class _Handler(BaseHTTPRequestHandler):
    cloud: FakeOpenStack
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake records requests itself."""

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        request = Request(
            self.command,
            parts.path,
            parse_qs(parts.query),
            body,
            _microversion(self.headers),
        )
        status, document, headers = self.cloud.answer(
            request, self.headers.get("X-Auth-Token", "")
        )
        payload = b"" if document is None else json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
