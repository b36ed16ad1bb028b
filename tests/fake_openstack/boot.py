"""What cloud-init would make of a server's user data, for the parts a test needs.

`CloudInit` is the fake Nova's boot hook. It decodes the cloud-config the provider built, runs
nothing, and does what the runner's install script does last on a real VM: it reports
`installing`, then `idle`, to GARM's callback URL with the instance token the user data carries
(the same two calls as `tests/e2e/provider_standin.py`'s runner). GARM's user data holds only
its wrapper (`/install_runner.sh`: the metadata URL and the instance token), so the install
script comes, as on a VM, from GARM's metadata API (`install-script/`); its callback URL is
where the runner reports. It trusts only the CA bundle the user data installs
(`ca_certs.trusted`), as cloud-init would install it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import ssl
import threading
import time
import urllib.request
from typing import Any

import yaml

from fake_openstack.server import Server

INSTALL_SCRIPT = "/install_runner.sh"
PRE_INSTALL_DIR = "/garm-pre-install/"
# A runner reports once its VM booted; a real one takes minutes, this one a second.
BOOT_SECONDS = 1.0


@dataclasses.dataclass(frozen=True)
class UserData:
    """A server's cloud-config, read as cloud-init reads it.

    Attributes:
        document: the cloud-config, parsed.
        files: every `write_files` entry's content (decoded) by path.
    """

    document: dict[str, Any]
    files: dict[str, str]

    @classmethod
    def parse(cls, text: str) -> UserData:
        """Parse the user data the provider built (a `#cloud-config` document)."""
        if not text.startswith("#cloud-config\n"):
            raise ValueError("the user data is not a cloud-config document")
        document: dict[str, Any] = yaml.safe_load(text)
        files: dict[str, str] = {}
        for entry in document.get("write_files") or []:
            content = entry.get("content", "")
            if entry.get("encoding") in ("b64", "base64"):
                content = base64.b64decode(content).decode()
            files[entry["path"]] = content
        return cls(document, files)

    @property
    def runcmd(self) -> list[str]:
        """The commands cloud-init runs, in order."""
        return [str(command) for command in self.document.get("runcmd") or []]

    @property
    def pre_install_scripts(self) -> list[str]:
        """The pre-install scripts' names, in the order cloud-init runs them."""
        return [
            command.removeprefix(PRE_INSTALL_DIR)
            for command in self.runcmd
            if command.startswith(PRE_INSTALL_DIR)
        ]

    def install_variable(self, name: str) -> str:
        """A `NAME="value"` assignment of the runner install script (metadata URL, token)."""
        return script_variable(self.files.get(INSTALL_SCRIPT, ""), name)

    @property
    def ca_bundle(self) -> str | None:
        """The CA certificates cloud-init would trust, PEM; None for the system's."""
        trusted = (self.document.get("ca_certs") or {}).get("trusted") or []
        return "\n".join(trusted) or None


@dataclasses.dataclass
class Boot:
    """What one server's boot did: the user data read, each callback's HTTP status."""

    server: str
    user_data: UserData | None = None
    install_script: str = ""
    callbacks: list[tuple[str, int]] = dataclasses.field(default_factory=list[tuple[str, int]])
    error: str = ""


class CloudInit:
    """The boot hook of the fake Nova: reports each server's runner to GARM."""

    def __init__(self) -> None:
        self.boots: dict[str, Boot] = {}
        self.lock = threading.Lock()

    def __call__(self, server: Server) -> None:
        """Read the server's user data and report `installing`, then `idle`."""
        boot = Boot(server.name)
        with self.lock:
            self.boots[server.id] = boot
        try:
            boot.user_data = UserData.parse(server.user_data)
            token = boot.user_data.install_variable("BEARER_TOKEN")
            context = ssl.create_default_context(cadata=boot.user_data.ca_bundle or None)
            time.sleep(BOOT_SECONDS)
            metadata = boot.user_data.install_variable("METADATA_URL")
            boot.install_script = _get(f"{metadata.rstrip('/')}/install-script/", token, context)
            callback = script_variable(boot.install_script, "CALLBACK_URL")
            for status in ("installing", "idle"):
                code = _post_status(callback, token, status, context)
                boot.callbacks.append((status, code))
        except (OSError, ValueError, KeyError, yaml.YAMLError) as error:
            boot.error = f"{type(error).__name__}: {error}"


def script_variable(script: str, name: str) -> str:
    """The value of a `NAME="value"` line of a shell script (how GARM's scripts set them)."""
    found = re.search(rf'^{name}="([^"]*)"', script, re.MULTILINE)
    if found is None:
        raise ValueError(f"the install script sets no {name}")
    return found[1]


def _get(url: str, token: str, context: ssl.SSLContext) -> str:
    request = urllib.request.Request(  # noqa: S310 - the user data's http(s) metadata URL
        url, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as answer:  # noqa: S310
        return answer.read().decode()


def _post_status(callback: str, token: str, status: str, context: ssl.SSLContext) -> int:
    url = callback.rstrip("/")
    url = url if url.endswith("/status") else f"{url}/status"
    request = urllib.request.Request(  # noqa: S310 - the user data's http(s) callback URL
        url,
        data=json.dumps({"status": status, "message": "fake OpenStack runner"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as answer:  # noqa: S310
        return answer.status
