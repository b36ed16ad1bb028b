"""Run a real GARM binary (GARM_BIN) on loopback with SQLite, a fake GitHub and a fake provider.

The layout follows REFERENCE §1.4 (minimal sqlite config) and §9 (what GARM calls at GitHub).
Everything lives in one temporary directory and listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from contract.garm_http import call
from fake_github import FakeGitHub

PROVIDER_SOURCE = Path(__file__).parent.parent / "fake_github" / "fake_provider.py"
START_TIMEOUT = 30.0


class RealGarm:
    """A GARM process plus its fake GitHub, in `workdir`.

    Args:
        garm_bin: path of the GARM server binary.
        workdir: an empty directory for the config, database, logs and provider state.
        provider: the provider name to configure.
    """

    def __init__(self, garm_bin: str, workdir: Path, provider: str) -> None:
        self.garm_bin = garm_bin
        self.workdir = workdir
        self.provider = provider
        self.github = FakeGitHub()
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

    def start(self) -> None:
        """Start the fake GitHub and GARM, and wait until GARM answers HTTP.

        Raises:
            RuntimeError: when GARM exits or does not answer within the start timeout.
        """
        self.github.start()
        config = self.write_config()
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [self.garm_bin, "--config", str(config)], stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_until_serving()

    def stop(self) -> None:
        """Stop GARM (SIGTERM, then SIGKILL after 10 s) and the fake GitHub."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
            self._process = None
        self.github.stop()

    def bootstrap(self, username: str, password: str) -> tuple[str, str]:
        """First-run, login, URLs, a fake-GitHub endpoint, PAT credentials and a repository.

        Returns:
            The admin token and the repository id.
        """
        user = {"username": username, "email": f"{username}@example.com", "password": password}
        call(self.url, "POST", "/first-run", user)
        token = call(self.url, "POST", "/auth/login", user).json["token"]
        urls = {"metadata_url": f"{self.url}/api/v1/metadata", "callback_url": f"{self.url}/cb"}
        call(self.url, "PUT", "/controller", urls, token=token)
        endpoint = {
            "name": "fake-ghes",
            "description": "fake GitHub on loopback",
            "base_url": self.github.url,
            "api_base_url": f"{self.github.url}/api/v3/",
            "upload_base_url": f"{self.github.url}/api/uploads/",
        }
        call(self.url, "POST", "/github/endpoints", endpoint, token=token)
        creds = {
            "name": "fake-pat",
            "description": "PAT for fake GitHub",
            "endpoint": "fake-ghes",
            "auth_type": "pat",
            "pat": {"oauth2_token": self.github.config.token},
        }
        call(self.url, "POST", "/github/credentials", creds, token=token)
        repo = {
            "owner": "fake-org",
            "name": "fake-repo",
            "credentials_name": "fake-pat",
            "webhook_secret": secrets.token_hex(16),
        }
        return token, call(self.url, "POST", "/repositories", repo, token=token).json["id"]

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
                secret=secrets.token_urlsafe(48),
                port=self.port,
                passphrase=secrets.token_urlsafe(24)[:32],
                db=self.workdir / "garm.db",
                provider=self.provider,
                executable=provider,
                provider_config=provider_config,
            )
        )
        return config

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"GARM exited; see {self.log_path}")
            try:
                urllib.request.urlopen(f"{self.url}/api/v1/controller-info", timeout=1)  # noqa: S310
            except urllib.error.HTTPError:
                return  # any HTTP answer (409 before first-run) means it is serving
            except OSError:
                time.sleep(0.1)
            else:
                return
        raise RuntimeError(f"GARM did not answer within {START_TIMEOUT} s; see {self.log_path}")


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
