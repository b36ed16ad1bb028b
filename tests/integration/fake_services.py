"""Test-host services the garm machine reaches: a fake GitHub (with App auth) and a fake provider.

The fake GitHub (`tests/fake_github`) serves on the test host's loopback and answers with URLs on
`127.0.0.1:<port>`, so the garm machine reaches it through an SSH remote forward of that port
(`juju ssh -R`): GARM then sees GitHub at the same address the fake names. GARM authenticates as
a GitHub App, so `FakeGitHubApp` adds the installation-token call to the fake (the token it
hands out is the fake's accepted token).

The fake provider (`tests/fake_github/fake_provider.py`) is shipped as the
`garm-provider-openstack` resource: a wrapper that points it at a JSON config and state under
`/var/lib/garm` (the only directory the garm service may write) and runs it.
"""

from __future__ import annotations

import datetime
import io
import pathlib
import re
import subprocess
import tarfile
import time
from typing import Any

from fake_github import FakeGitHub
from fake_github import server as fake_server

FAKE_PROVIDER = pathlib.Path(__file__).parent.parent / "fake_github" / "fake_provider.py"
PROVIDER_WRAPPER = '''#!/usr/bin/python3
"""Stands in for garm-provider-openstack in integration tests; state in /var/lib/garm."""
import json, os, pathlib, sys, types

config = pathlib.Path("/var/lib/garm/fake-provider.json")
if not config.exists():
    config.write_text(json.dumps({"state_file": "/var/lib/garm/fake-provider-state.json"}))
os.environ["GARM_PROVIDER_CONFIG_FILE"] = str(config)
module = types.ModuleType("fake_provider")
exec(compile(SOURCE, "fake_provider.py", "exec"), module.__dict__)
sys.exit(module.main())
'''


class FakeGitHubApp(FakeGitHub):
    """The fake GitHub, also accepting a GitHub App's JWT for the installation-token call."""

    def authorised(self, header: str) -> bool:
        """Accept the fake's token, and an App JWT (`Bearer <jwt>`) for the token exchange."""
        return super().authorised(header) or header.startswith("Bearer ey")


def _installation_token(
    gh: FakeGitHub, params: dict[str, str], body: Any, query: dict[str, list[str]]
) -> fake_server.Answer:
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    return fake_server.Answer(
        201, {"token": gh.config.token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
    )


_TOKEN_ROUTE = (
    "POST",
    re.compile(r"^/api/v3/app/installations/(?P<installation>\d+)/access_tokens/?$"),
    _installation_token,
)
if _TOKEN_ROUTE not in fake_server.ROUTES:
    fake_server.ROUTES.append(_TOKEN_ROUTE)


def tarball(directory: pathlib.Path, name: str, executable: bytes) -> pathlib.Path:
    """A release-style tarball holding one executable `name` at its top level."""
    path = directory / f"{name}.tgz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(name)
        info.size = len(executable)
        info.mode = 0o755
        info.mtime = int(time.time())
        archive.addfile(info, io.BytesIO(executable))
    return path


def fake_provider_executable() -> bytes:
    """The wrapper script, with the fake provider's source embedded."""
    source = FAKE_PROVIDER.read_text()
    return PROVIDER_WRAPPER.replace("SOURCE,", f"{source!r},", 1).encode()


class RemoteForward:
    """`juju ssh <unit> -N -R port:127.0.0.1:port`: the unit's loopback port reaches ours."""

    def __init__(self, model: str, unit: str, port: int):
        self.command = [
            "juju", "ssh", "--model", model, unit, "-N",
            "-o", "ExitOnForwardFailure=yes", "-o", "StrictHostKeyChecking=no",
            "-R", f"{port}:127.0.0.1:{port}",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RemoteForward:
        """Open the tunnel and give it a moment to listen."""
        self.process = subprocess.Popen(self.command)
        time.sleep(5)
        if self.process.poll() is not None:
            raise RuntimeError(f"remote forward failed: {' '.join(self.command)}")
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the tunnel."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
