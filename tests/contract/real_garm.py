"""Run a real GARM binary on loopback with SQLite, a fake GitHub, a fake provider and no egress.

Everything lives in one temporary directory and listens on 127.0.0.1 only. GARM gets
`HTTP_PROXY`/`HTTPS_PROXY` (and, for versions that read it, a `[proxy]` config section) pointing
at a `ProxySink`, so whatever it tries to reach beyond loopback (the default garm-agent releases
index on api.github.com, for one) is refused there without a DNS lookup; `dns_lookups()` reads
GARM's log for the proof. Other test packages import this module as `contract.real_garm` with
`tests/` on `sys.path`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from contract.garm_http import call
from fake_github import FakeGitHub
from fake_github.proxy_sink import ProxySink

PROVIDER_SOURCE = Path(__file__).parent.parent / "fake_github" / "fake_provider.py"
START_TIMEOUT = 30.0
START_ATTEMPTS = 3
# The GARM release the charm installs; every other build is treated as the newer main branch.
V021 = "v0.2.1"
NEWER = "newer"
GARM_VERSIONS = (V021, NEWER)
# Go's resolver errors ("dial tcp: lookup api.github.com on 127.0.0.53:53: no such host").
_DNS_LOOKUP = re.compile(r"dial tcp: lookup |no such host|\blookup [\w.-]+(?: on |: )")
NO_PROXY = "127.0.0.1,localhost,::1"


class RealGarm:
    """A GARM process plus its fake GitHub, in `workdir`.

    Args:
        garm_bin: path of the GARM server binary.
        workdir: an empty directory for the config, database, logs and provider state.
        provider: the provider name to configure.
        github: the fake GitHub to use (default: a new one); one not yet running is started and
            stopped with GARM, one already running is left to its owner.
        version: `v0.2.1` or `newer` (default: asked from the binary's `--version`).
    """

    def __init__(
        self,
        garm_bin: str,
        workdir: Path,
        provider: str = "fake",
        *,
        github: FakeGitHub | None = None,
        version: str | None = None,
        metrics_period: str | None = None,
    ) -> None:
        self.garm_bin = garm_bin
        # GARM's /metrics, without auth, refreshed this often (e.g. "1s"); None: no metrics.
        self.metrics_period = metrics_period
        self.workdir = workdir
        self.provider = provider
        self.github = github or FakeGitHub()
        self._version = version
        self.proxy = ProxySink()
        self._own_github = False
        self._secrets: dict[str, str] = {}
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Return GARM's base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """Return the file GARM logs to (read it when a test fails)."""
        return self.workdir / "garm.log"

    @property
    def version(self) -> str:
        """Return `v0.2.1` or `newer` (asked from the binary once, unless given)."""
        if self._version is None:
            self._version = garm_version(self.garm_bin)
        return self._version

    @property
    def proxy_url(self) -> str:
        """Return the loopback proxy sink's URL (GARM's HTTP_PROXY and HTTPS_PROXY)."""
        return self.proxy.url

    def environment(self) -> dict[str, str]:
        """Return GARM's process environment: a minimal one plus the proxy settings.

        Only the proxy variables reach v0.2.1 (it has no `[proxy]` section); Go reads them once,
        at the first outbound request, and never proxies loopback addresses.
        """
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.workdir),
        } | proxy_environment(self.proxy_url)

    def start(self) -> None:
        """Start the fake GitHub, the proxy sink and GARM; wait until GARM answers HTTP.

        Raises:
            RuntimeError: when GARM keeps exiting at start or does not answer in time.
        """
        self._own_github = not self.github.running
        if self._own_github:
            self.github.start()
        self.proxy.start()
        for _ in range(START_ATTEMPTS):
            # Picked once the fake GitHub and the sink hold their ports, so neither can have it;
            # another process may still take it before GARM binds: GARM then exits, pick again.
            self.port = _free_port()
            self._launch()
            if self._wait_until_serving():
                return
        raise RuntimeError(f"GARM exited at start {START_ATTEMPTS} times; see {self.log_path}")

    def stop(self) -> None:
        """Stop GARM (SIGTERM, then SIGKILL after 10 s), the proxy sink and our fake GitHub."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
            self._process = None
        self.proxy.stop()
        if self._own_github:
            self.github.stop()

    def restart(self) -> None:
        """Stop GARM alone and start it again on the same port (state and fake GitHub kept).

        Raises:
            RuntimeError: when GARM does not serve again.
        """
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None
        self._launch(same_config=True)
        process = self._process
        assert process is not None
        deadline = time.monotonic() + START_TIMEOUT
        # Once initialised, GARM answers controller-info 401 without a token: that is serving.
        while not self._serves_again():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(
                    f"GARM did not serve again after a restart; see {self.log_path}"
                )
            time.sleep(0.1)

    def _serves_again(self) -> bool:
        try:
            return call(self.url, "GET", "/controller-info").status in (200, 401)
        except OSError:
            return False

    def log_text(self) -> str:
        """Return everything GARM printed so far (standard output and error)."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def dns_lookups(self) -> list[str]:
        """Return the lines of GARM's log that show a DNS lookup (should be none)."""
        return dns_lookups(self.log_text())

    def assert_no_dns_lookup(self) -> None:
        """Fail with the offending lines when GARM's log shows a DNS lookup."""
        lookups = self.dns_lookups()
        assert not lookups, f"GARM resolved a name (see {self.log_path}): {lookups[:5]}"

    def secrets(self) -> dict[str, str]:
        """Return every secret GARM was given or got, by what it is.

        The config's JWT secret and database passphrase, the admin password and webhook
        secret from `bootstrap`, and every token the fake GitHub issued or received.
        """
        tokens = {f"fake GitHub token {i}": t for i, t in enumerate(self.github.issued_tokens())}
        return self._secrets | tokens

    def leaked_secrets(self) -> list[str]:
        """Return what `secrets()` names that appears in GARM's output (should be nothing)."""
        log = self.log_text()
        return [what for what, value in self.secrets().items() if value and value in log]

    def bootstrap(self, username: str, password: str) -> tuple[str, str]:
        """First-run, login, URLs, a fake-GitHub endpoint, PAT credentials and a repository.

        The controller's `garm_agent_releases_url` is pointed at the fake GitHub (the default
        is api.github.com; newer GARMs fetch and validate it synchronously).

        Returns:
            The admin token and the repository id.

        Raises:
            RuntimeError: when GARM refuses a step (the message has GARM's answer).
        """
        user = {"username": username, "email": f"{username}@example.com", "password": password}
        self._secrets["admin password"] = password
        self.expect("POST", "/first-run", user)
        token = self.expect("POST", "/auth/login", user)["token"]
        self.expect("PUT", "/controller", self.controller_settings(), token=token)
        endpoint = {
            "name": "fake-ghes",
            "description": "fake GitHub on loopback",
            "base_url": self.github.url,
            "api_base_url": f"{self.github.url}/api/v3/",
            "upload_base_url": f"{self.github.url}/api/uploads/",
        }
        self.expect("POST", "/github/endpoints", endpoint, token=token)
        creds = {
            "name": "fake-pat",
            "description": "PAT for fake GitHub",
            "endpoint": "fake-ghes",
            "auth_type": "pat",
            "pat": {"oauth2_token": self.github.config.token},
        }
        self.expect("POST", "/github/credentials", creds, token=token)
        repo = {
            "owner": "fake-org",
            "name": "fake-repo",
            "credentials_name": "fake-pat",
            "webhook_secret": self.remember_secret("webhook secret", secrets.token_hex(16)),
        }
        return token, self.expect("POST", "/repositories", repo, token=token)["id"]

    def instance_token(self, runner: str) -> str:
        """Return the token GARM gave the fake provider for a runner (`instance-token`).

        With it a test reports as the runner would, through GARM's callback URL.

        Raises:
            LookupError: when the provider never created that runner.
        """
        instances = json.loads((self.workdir / "instances.json").read_text())
        if runner not in instances:
            raise LookupError(f"the fake provider has no instance {runner!r}")
        return str(instances[runner]["instance_token"])

    def reset_admin_password(self, username: str, password: str) -> None:
        """Run `garm admin password-reset` (builds after v0.2.1) on this GARM's database.

        Raises:
            RuntimeError: when the command fails (its output is in the message).
        """
        self.remember_secret("new admin password", password)
        command = [self.garm_bin, "admin", "password-reset", username, "--new-password", password]
        result = subprocess.run(
            [*command, "--config", str(self.workdir / "config.toml")],
            capture_output=True,
            text=True,
            env=self.environment(),
            cwd=self.workdir,
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"garm admin password-reset failed: {result.stdout}{result.stderr}")

    def controller_settings(self) -> dict[str, str]:
        """Return the `PUT /controller` body: URLs on GARM, agent releases on the fake GitHub."""
        return {
            "metadata_url": f"{self.url}/api/v1/metadata",
            "callback_url": f"{self.url}/cb",
            "garm_agent_releases_url": self.github.releases_url,
        }

    def expect(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """Call GARM; return the decoded answer, or raise RuntimeError unless it is 2xx."""
        reply = call(self.url, method, path, body, **kwargs)
        if not 200 <= reply.status < 300:
            raise RuntimeError(f"GARM answered {method} {path} with {reply.status}: {reply.raw}")
        return reply.json

    def write_config(self) -> Path:
        """Write the fake provider and GARM's config.toml; return the config's path."""
        provider = self.workdir / "fake-provider"
        source = PROVIDER_SOURCE.read_text().split("\n", 1)[1]
        # GARM runs providers with an empty environment: the shebang must be absolute.
        provider.write_text(f"#!{sys.executable}\n{source}")
        provider.chmod(0o755)
        provider_config = self.workdir / "provider.json"
        provider_config.write_text(
            json.dumps({"state_file": str(self.workdir / "instances.json")})
        )
        config = self.workdir / "config.toml"
        config.write_text(
            _CONFIG.format(
                secret=self.remember_secret("JWT secret", secrets.token_urlsafe(48)),
                port=self.port,
                passphrase=self.remember_secret(
                    "database passphrase", secrets.token_urlsafe(24)[:32]
                ),
                db=self.workdir / "garm.db",
                provider=self.provider,
                executable=provider,
                provider_config=provider_config,
            )
            + self._proxy_section()
            + self._metrics_section()
        )
        return config

    def _metrics_section(self) -> str:
        if self.metrics_period is None:
            return ""
        period = self.metrics_period
        return f'\n[metrics]\nenable = true\ndisable_auth = true\nperiod = "{period}"\n'

    def remember_secret(self, what: str, value: str) -> str:
        """Add a secret GARM was given to `secrets()` (its log is searched for it); return it."""
        self._secrets[what] = value
        return value

    def _proxy_section(self) -> str:
        # v0.2.1 has no [proxy] section (it would ignore it): its proxies come from the env.
        if self.version == V021:
            return ""
        return _PROXY.format(proxy=self.proxy_url, no_proxy=NO_PROXY)

    def _launch(self, *, same_config: bool = False) -> None:
        # A restart keeps the config: new secrets would not open the database GARM sealed.
        config = self.workdir / "config.toml" if same_config else self.write_config()
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [self.garm_bin, "--config", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                cwd=self.workdir,
            )

    def _wait_until_serving(self) -> bool:
        """Return True once GARM answers, False when it exited first."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                self._process = None
                return False
            if answers_as_garm(self.url):
                return True
            time.sleep(0.1)
        raise RuntimeError(f"GARM did not answer within {START_TIMEOUT} s; see {self.log_path}")


def answers_as_garm(url: str) -> bool:
    """Return whether GARM answers on `url`: its 409 gates before first-run and URLs, or 200.

    Anything else on the port (another server that took it) does not count.
    """
    try:
        urllib.request.urlopen(f"{url}/api/v1/controller-info", timeout=1)  # noqa: S310
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        return error.code == 409 and ("init_required" in body or "urls_required" in body)
    except OSError:
        return False
    return True


_CONFIG = """\
[logging]
log_level = "debug"
log_format = "text"

[jwt_auth]
secret = "{secret}"
time_to_live = "8760h"

[apiserver]
bind = "127.0.0.1"
port = {port}
use_tls = false

[database]
backend = "sqlite3"
passphrase = "{passphrase}"
  [database.sqlite3]
  db_file = "{db}"

[[provider]]
name = "{provider}"
provider_type = "external"
description = "contract-suite fake provider"
  [provider.external]
  provider_executable = "{executable}"
  config_file = "{provider_config}"
"""


_PROXY = """
[proxy]
http_proxy = "{proxy}"
https_proxy = "{proxy}"
no_proxy = "{no_proxy}"
"""


def garm_version(garm_bin: str) -> str:
    """Return `v0.2.1` when the binary's `--version` says exactly that, else `newer`.

    Both flag parsers (v0.2.1's `flag`, the newer cobra) print the version for `--version`.
    """
    printed = subprocess.run(
        [garm_bin, "--version"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()
    return V021 if printed == V021 else NEWER


def proxy_environment(proxy_url: str, no_proxy: str = NO_PROXY) -> dict[str, str]:
    """Return HTTP(S)_PROXY and NO_PROXY, both spellings, for a Go process."""
    values = {"http_proxy": proxy_url, "https_proxy": proxy_url, "no_proxy": no_proxy}
    return values | {key.upper(): value for key, value in values.items()}


def dns_lookups(log: str) -> list[str]:
    """Return the lines of a GARM log that show a DNS lookup (Go's resolver errors)."""
    return [line for line in log.splitlines() if _DNS_LOOKUP.search(line)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
