"""`GarmSim`: start, stop and steer the simulator from tests."""

from __future__ import annotations

import secrets
import ssl
import threading
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType

from garm_sim import scaling, versions
from garm_sim.auth import TOKEN_TTL_SECONDS, TokenSigner, check_gate
from garm_sim.clock import SimClock
from garm_sim.errors import ApiError
from garm_sim.faults import Fault, FaultKind, FaultTable
from garm_sim.github import GitHubBehaviour
from garm_sim.handlers import all_routes
from garm_sim.model import Credentials, Entity, EntityKind, Instance, ScaleSet, User
from garm_sim.requestlog import WRITE_METHODS, LoggedRequest, RequestLog
from garm_sim.routing import Match, Request, Response, Router
from garm_sim.server import SimHTTPServer, not_routed
from garm_sim.state import DEFAULT_PROVIDERS, SimState
from garm_sim.versions import V021

DEFAULT_USERNAME = "admin"


class GarmSim:
    """A GARM API server on 127.0.0.1 with GARM's wire behaviour.

    Runner scaling is deterministic: GARM's worker pass (`tick()`) runs before and after every
    request when `auto_tick` is true (the default), so runners appear and disappear between
    calls (an answer shows the state before its own pass, like GARM's asynchronous worker);
    with `auto_tick=False` only `tick()` and `advance()` move runners.

    Args:
        providers: provider names (or `{"name", "type", "description"}` dicts) GARM is
            configured with; default one external provider named `openstack`.
        port: the port to listen on; 0 picks a free one.
        auto_tick: run a worker pass before each request.
        boot_seconds: how long (sim clock) new runners stay `pending_create`.
        frozen_clock: only `clock.advance()` moves time.
        garm_version: answer as `v0.2.1` (the release the charm installs) or `newer` (GARM's
            main branch at the commit of the generated client); see `garm_sim.versions`.
        jwt_secret: GARM's `[jwt_auth] secret`, which signs every token (random by default).
        token_ttl: GARM's `[jwt_auth] time_to_live`, in seconds.
        tls: serve HTTPS with this context (GARM's `[apiserver] use_tls`); None: plain HTTP.
    """

    def __init__(
        self,
        providers: Sequence[str | dict[str, str]] | None = None,
        *,
        port: int = 0,
        auto_tick: bool = True,
        boot_seconds: float = 0.0,
        frozen_clock: bool = False,
        garm_version: str = V021,
        jwt_secret: str | None = None,
        token_ttl: float = TOKEN_TTL_SECONDS,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.garm_version = versions.garm_version(garm_version)
        self.clock = SimClock(frozen=frozen_clock)
        self.state = SimState(self.clock, _provider_list(providers), self.garm_version)
        self.faults = FaultTable()
        self.log = RequestLog()
        self.auto_tick = auto_tick
        self.boot_seconds = boot_seconds
        self.signer = TokenSigner(jwt_secret, token_ttl)
        self.router = Router(all_routes(self.signer, self.garm_version))
        self.port = port
        self.tls = tls
        self._server: SimHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> GarmSim:
        """Start serving."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop serving."""
        self.stop()

    @property
    def url(self) -> str:
        """Return the base URL, e.g. `http://127.0.0.1:41234` (the API is under /api/v1)."""
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen and serve in a background thread."""
        self._server = SimHTTPServer(self.port, self, self.tls)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the listening socket (clients then get refused)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def restart(
        self,
        *,
        tls: ssl.SSLContext | None = None,
        jwt_secret: str | None = None,
        token_ttl: float | None = None,
    ) -> None:
        """Restart GARM on the same port with another config; keep all state.

        Args:
            tls: serve HTTPS with this context from now on; None: plain HTTP.
            jwt_secret: a new `[jwt_auth] secret` (tokens signed with the old one stop
                working); None keeps the current one.
            token_ttl: a new `[jwt_auth] time_to_live` in seconds; None keeps the current one.
        """
        self.stop()
        self.tls = tls
        if jwt_secret is not None:
            self.signer.rekey(jwt_secret)
        if token_ttl is not None:
            self.signer.time_to_live = token_ttl
        with self.state.lock:
            self.state.start_scaleset_workers()
        self.start()

    @contextmanager
    def refusing_connections(self) -> Generator[None]:
        """Refuse connections (as if GARM were down) inside the block; keep all state."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    # -- request handling (called by the HTTP handler) -----------------------------------------

    def dispatch(
        self, match: Match | None, request: Request, authorization: str | None
    ) -> Response:
        """Run GARM's middlewares and the route's handler for one request."""
        early = not_routed(match, request)
        if early is not None or match is None or match.route is None:
            return early or Response(405)
        route = match.route
        request.params = match.params
        request.headers_authorization = authorization
        with self.state.lock:
            if self.auto_tick:
                scaling.tick(self.state, self.boot_seconds)
            check_gate(self.state, route.gate)
            if route.gate in ("controller", "full"):
                request.username = self.signer.user_of(self.state, authorization)
            response = route.handler(request)
            if self.auto_tick:
                scaling.tick(self.state, self.boot_seconds)
            return response

    # -- bootstrap and seeding shortcuts -------------------------------------------------------

    def bootstrap(
        self,
        username: str = DEFAULT_USERNAME,
        password: str | None = None,
        *,
        set_urls: bool = True,
        urls: Mapping[str, str] | None = None,
    ) -> str:
        """Do what first-run, login and PUT /controller would do; return an admin token.

        Args:
            username: the admin username.
            password: the admin password (random when not given; see `admin_password`).
            set_urls: also set the controller's metadata and callback URLs.
            urls: the controller URLs to set (`metadata_url`, `callback_url`, `webhook_url`,
                `agent_url`) instead of the simulator's own.
        """
        with self.state.lock:
            if self.state.admin is None:
                now = self.clock.stamp()
                secret = password or f"Sim-{secrets.token_urlsafe(18)}-9"
                self.state.admin = User(
                    str(uuid.uuid4()), username, f"{username}@example.com", "", secret, now
                )
            if set_urls:
                controller = self.state.controller
                own = {
                    "metadata_url": f"{self.url}/api/v1/metadata",
                    "callback_url": f"{self.url}/api/v1/callbacks",
                    "webhook_url": f"{self.url}/webhooks",
                }
                for key, value in (own if urls is None else urls).items():
                    setattr(controller, key, value)
            return self.token()

    @property
    def admin_credentials(self) -> tuple[str, str] | None:
        """Return the admin's (username, password), or None before first-run."""
        admin = self.state.admin
        return None if admin is None else (admin.username, admin.password)

    def reset_admin_password(self, username: str, password: str) -> None:
        """Do what `garm admin password-reset` does in GARM's database: a new password.

        The admin's generation moves on, so every token issued before stops working (as on
        real GARM: garm-behaviour B30).

        Raises:
            LookupError: when there is no such admin.
        """
        with self.state.lock:
            admin = self.state.admin
            if admin is None or admin.username != username:
                raise LookupError(f"no admin {username!r}")
            admin.password = password
            admin.generation += 1

    def controller_urls(self) -> dict[str, str]:
        """Return the controller URLs set so far (`metadata_url`, `callback_url`, ...)."""
        controller = self.state.controller
        keys = ("metadata_url", "callback_url", "webhook_url", "agent_url")
        return {key: getattr(controller, key) for key in keys if getattr(controller, key)}

    @property
    def admin_password(self) -> str:
        """Return the admin's password (after bootstrap or first-run)."""
        if self.state.admin is None:
            raise LookupError("GARM is not initialised")
        return self.state.admin.password

    def token(self) -> str:
        """Return a fresh admin token."""
        admin = self.state.admin
        if admin is None:
            raise LookupError("GARM is not initialised")
        return self.signer.issue(self.state, user=admin.username)

    def authenticates(self, token: str) -> bool:
        """Return whether GARM accepts this token for the admin's API calls now."""
        try:
            self.signer.user_of(self.state, f"Bearer {token}")
        except ApiError:
            return False
        return True

    def seed_entity(
        self, kind: EntityKind = "repository", name: str = "repo", owner: str = "org"
    ) -> str:
        """Create PAT credentials (once) and an entity directly; return the entity id."""
        with self.state.lock:
            state = self.state
            now = self.clock.stamp()
            if not state.credentials:
                state.credentials[1] = Credentials(
                    1, "sim-pat", "", "pat", "github.com", now, now, {"oauth2_token": "x"}
                )
                state.ids.credentials = 2
            entity = Entity(
                id=str(uuid.uuid4()),
                kind=kind,
                owner=owner if kind == "repository" else "",
                name=name,
                credentials_id=next(iter(state.credentials)),
                webhook_secret=secrets.token_hex(16),
                pool_balancing_type="roundrobin",
                created_at=now,
                updated_at=now,
            )
            state.entities[entity.id] = entity
            return entity.id

    # -- runners, jobs and time ----------------------------------------------------------------

    def tick(self) -> None:
        """Run one pass of GARM's scale-set worker."""
        scaling.tick(self.state, self.boot_seconds)

    def advance(self, seconds: float) -> None:
        """Move the clock forward, then run a worker pass."""
        self.clock.advance(seconds)
        self.tick()

    def scaleset(self, name_or_id: str | int) -> ScaleSet:
        """Return a scale set by GARM id or name.

        Raises:
            LookupError: when there is none.
        """
        with self.state.lock:
            for scaleset in self.state.scalesets.values():
                if name_or_id in (scaleset.id, scaleset.name, str(scaleset.id)):
                    return scaleset
        raise LookupError(f"no scale set {name_or_id!r}")

    def instances(self, scaleset: str | int | None = None) -> list[Instance]:
        """Return the instances of one scale set (or of all)."""
        with self.state.lock:
            if scaleset is None:
                return list(self.state.instances.values())
            return self.state.scaleset_instances(self.scaleset(scaleset).id)

    def instance_token(self, name: str) -> str:
        """Return the token GARM gives a runner's provider (`instance-token`) to call back with.

        A test posts `{"status": ..., "message": ...}` to `/api/v1/callbacks/status` with it,
        as GARM's runner install script does on the instance.

        Raises:
            LookupError: when there is no such instance.
        """
        with self.state.lock:
            instance = self.state.instances.get(name)
            if instance is None:
                raise LookupError(f"no instance {name!r}")
            return self.signer.issue_instance(self.state, instance)

    def start_job(self, scaleset: str | int) -> str:
        """Give an idle runner of the scale set a job; return the runner's name.

        GitHub counts the running job as assigned: an enabled set's `desired_runner_count`
        goes up by one (and down when the job ends), so GARM boots an idle runner beside it.
        """
        return scaling.start_job(self.state, self.scaleset(scaleset)).name

    def finish_job(self, runner_or_scaleset: str | int) -> str:
        """Finish a job: the runner terminates and goes away at the next tick.

        Args:
            runner_or_scaleset: a runner name, or a scale set (name or id) whose oldest active
                runner finishes.

        Returns:
            The name of the runner that finished.

        Raises:
            LookupError: when there is no such runner or the scale set has no active runner.
        """
        with self.state.lock:
            instance = self.state.instances.get(str(runner_or_scaleset))
            if instance is None:
                active = [
                    i for i in self.instances(runner_or_scaleset) if i.runner_status == "active"
                ]
                if not active:
                    raise LookupError(f"no active runner for {runner_or_scaleset!r}")
                instance = active[0]
            scaling.finish_job(self.state, instance)
            return instance.name

    def set_desired(self, scaleset: str | int, count: int) -> None:
        """Set `desired_runner_count` as if GitHub's job queue had reported `count` jobs."""
        with self.state.lock:
            found = self.scaleset(scaleset)
            if found.desired_runner_count != count:
                found.desired_runner_count = count
                found.updated_at = self.clock.stamp()

    def set_provider_fault(self, instance_name: str, fault: bytes) -> None:
        """Put the instance in `error` with a provider fault (sent base64 on the wire)."""
        with self.state.lock:
            instance = self.state.instances[instance_name]
            instance.status = "error"
            instance.provider_fault = fault

    # -- GitHub switches, faults and the request log -------------------------------------------

    @property
    def github(self) -> GitHubBehaviour:
        """Return the switches for GitHub-side behaviour (name limit, dropped labels, C9)."""
        return self.state.github.behaviour

    def fault(
        self,
        kind: FaultKind = "status",
        *,
        method: str = "*",
        path: str = "*",
        status: int = 500,
        delay: float = 0.0,
        times: int | None = None,
        body: str | None = None,
        action: Callable[[], object] | None = None,
    ) -> Fault:
        """Inject a fault on matching requests (see `Fault`); return it for `remove_fault`."""
        return self.faults.add(
            Fault(kind, method, path, status, delay, times, body=body, action=action)
        )

    def remove_fault(self, fault: Fault) -> None:
        """Remove one fault."""
        self.faults.remove(fault)

    def clear_faults(self) -> None:
        """Remove every fault."""
        self.faults.clear()

    @property
    def requests(self) -> list[LoggedRequest]:
        """Return every request served so far."""
        return self.log.entries()

    def count(self, method: str | None = None, path: str | None = None) -> int:
        """Count requests by method and path (template like `/api/v1/scalesets/{id}` or path)."""
        return self.log.count(method, path)

    def calls(self) -> list[str]:
        """Return every request served so far as `METHOD /path`, in order."""
        return [entry.call for entry in self.log.entries()]

    def write_calls(self) -> list[str]:
        """Return the POST/PUT/PATCH/DELETE requests as `METHOD /path` (logins included)."""
        return [entry.call for entry in self.log.entries() if entry.method in WRITE_METHODS]

    def write_count(self) -> int:
        """Count POST/PUT/PATCH/DELETE requests (login excluded)."""
        return self.log.write_count()

    def reset_log(self) -> None:
        """Forget the requests served so far."""
        self.log.clear()


def _provider_list(providers: Sequence[str | dict[str, str]] | None) -> list[dict[str, str]]:
    if providers is None:
        return [dict(p) for p in DEFAULT_PROVIDERS]
    return [
        {"name": p, "type": "external", "description": p} if isinstance(p, str) else dict(p)
        for p in providers
    ]
