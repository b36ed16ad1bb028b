"""A `garm-provider-openstack` stand-in: checks the charm's files, then fakes instances.

Packed as the provider resource by `machine.py`, which gives it an absolute shebang and writes
in its settings (GARM runs providers with no arguments and a clean environment): `STATE`
(the instances file), `ENVIRONMENT_LOG` (where each call's proxy variables go) and
`FAKE_PROVIDER_DIR` (the contract suite's fake provider, which does the instance bookkeeping),
or `FAKE_PROVIDER_SOURCE`, that provider's source itself (`container_machine.py`).

Each call first reads the config.toml the charm rendered for the provider and the clouds.yaml it
names, as the real provider needs them, and fails (exit 1) when they are unusable. A created
instance "boots" a runner: a detached process that reports `installing`, then `idle`, to GARM's
callback URL with the instance's token, as GARM's runner install script does on a real VM.
"""

import fcntl
import importlib.util
import io
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

# Written in by machine.py when it packs the script (see `SETTINGS` there).
STATE = Path("instances.json")
ENVIRONMENT_LOG = Path("environment.jsonl")
FAKE_PROVIDER_DIR = "."
# Or the fake provider's source itself, where GARM's sandbox cannot read the checkout.
FAKE_PROVIDER_SOURCE = ""
# The `image_visibility` values garm-provider-openstack's config validation accepts.
IMAGE_VISIBILITIES = ("public", "private", "community", "shared", "all")

# What a runner does once its VM booted: the last steps of GARM's runner install script. It
# trusts only the CA bundle GARM sent (`ca-cert-bundle`, base64), as cloud-init would install it
# on a real VM; without one, only the system's CAs.
RUNNER = """
import base64, json, ssl, sys, time, urllib.request
bootstrap = json.load(sys.stdin)
bundle = bootstrap.get("ca-cert-bundle")
context = ssl.create_default_context(cadata=base64.b64decode(bundle).decode()) if bundle else None
time.sleep(1)
for status in ("installing", "idle"):
    request = urllib.request.Request(
        bootstrap["callback-url"].rstrip("/") + "/status",
        data=json.dumps({"status": status, "message": "e2e runner"}).encode(),
        headers={"Authorization": "Bearer " + bootstrap["instance-token"]},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=10, context=context).close()
"""


def main() -> int:
    """Run one provider command."""
    check_files()
    with ENVIRONMENT_LOG.open("a") as log:
        names = sorted(name for name in os.environ if "proxy" in name.lower())
        log.write(json.dumps({name: os.environ[name] for name in names}) + "\n")
    command = os.environ.get("GARM_COMMAND", "")
    if command == "CreateInstance":
        bootstrap = sys.stdin.read()
        sys.stdin = io.StringIO(bootstrap)
        boot_runner(bootstrap)
    fake_provider = _load_fake_provider()
    with STATE.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state: dict[str, Any] = json.loads(STATE.read_text()) if STATE.exists() else {}
        code = fake_provider.run(command, state)
        STATE.write_text(json.dumps(state))
    return code


def check_files() -> None:
    """Exit 1 unless the provider's config and clouds.yaml hold what the provider needs."""
    config = tomllib.loads(Path(os.environ["GARM_PROVIDER_CONFIG_FILE"]).read_text())
    clouds = yaml.safe_load(Path(config["credentials"]["clouds"]).read_text())["clouds"]
    auth = clouds[config["cloud"]]["auth"]
    missing = [key for key in ("auth_url", "username", "password") if not auth.get(key)]
    if missing or not config.get("network_id"):
        sys.exit(f"unusable provider config: missing {missing or 'network_id'}")
    if config.get("image_visibility", "") not in ("", *IMAGE_VISIBILITIES):
        sys.exit(
            f"error validating config: invalid image_visibility: {config['image_visibility']}"
        )


def boot_runner(bootstrap: str) -> None:
    """Start the runner's callbacks in the background; its output goes to `runners.log`."""
    with STATE.with_name("runners.log").open("ab") as log:
        runner = subprocess.Popen(
            [sys.executable, "-c", RUNNER],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    assert runner.stdin is not None
    runner.stdin.write(bootstrap.encode())
    runner.stdin.close()


def _load_fake_provider() -> ModuleType:
    """The contract suite's fake provider, loaded from its file (GARM gives no import path)."""
    if FAKE_PROVIDER_SOURCE:
        module = ModuleType("fake_provider")
        exec(compile(FAKE_PROVIDER_SOURCE, "fake_provider.py", "exec"), module.__dict__)  # noqa: S102
        return module
    spec = importlib.util.spec_from_file_location(
        "fake_provider", Path(FAKE_PROVIDER_DIR) / "fake_provider.py"
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no fake provider in {FAKE_PROVIDER_DIR}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
