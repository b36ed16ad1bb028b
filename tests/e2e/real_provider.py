"""The real `garm-provider-openstack` binary: found, packed as the charm's resource, or run.

Found as `GARM_PROVIDER_OPENSTACK_BIN`, else as `garm-provider-openstack-*` in the binaries
directory (`GARM_BIN_DIR`, by default `shared/garm/bin/` beside the checkout). Without it the
tests using it cannot run (`must_run.cannot_run`): they skip and say where they looked, except
in CI (`CI=true`), where they fail, so CI never goes green by skipping.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from charms.garm_configurator.v0 import garm_configurator as interface
from contract.conftest import BIN_DIR_ENV, DEFAULT_BIN_DIR
from doubles.configurator_publication import published_databag
from must_run import cannot_run

PROVIDER_BIN_ENV = "GARM_PROVIDER_OPENSTACK_BIN"
PROVIDER_GLOB = "garm-provider-openstack-*"
# GARM runs providers with the interface version it speaks to them (see workload.rendering).
INTERFACE_VERSION = "v0.1.0"
CALL_TIMEOUT_SECONDS = 60
# Every runner option set, so the provider sees every key the charm can put in extra_specs.
RUNNER_OPTIONS: Mapping[str, Any] = {
    "http_proxy": "http://squid.internal:3128",
    "aproxy_exclude_addresses": ["10.0.0.0/8"],
    "dockerhub_mirror": "https://mirror.internal:5000",
    "otel_collector_endpoint": "http://otel.internal:4318",
    "pre_job_script": "echo pre-job",
    "pre_install_scripts": {"zz-last": "echo last", "aa-first": "echo first"},
}


def provider_binary() -> tuple[Path | None, str]:
    """The real provider binary, or None and where it was looked for."""
    explicit = os.environ.get(PROVIDER_BIN_ENV)
    if explicit:
        path = Path(explicit)
        if path.is_file() and os.access(path, os.X_OK):
            return path, ""
        return None, f"{PROVIDER_BIN_ENV}={explicit} is not an executable file"
    directory = binaries_directory()
    found = sorted(directory.glob(PROVIDER_GLOB)) if directory.is_dir() else []
    executables = [path for path in found if os.access(path, os.X_OK)]
    if executables:
        return executables[-1], ""
    return None, (
        f"the real provider needs {PROVIDER_GLOB} in {directory} (or {PROVIDER_BIN_ENV})"
    )


def binaries_directory() -> Path:
    """Where the real binaries are laid out."""
    return Path(os.environ.get(BIN_DIR_ENV) or DEFAULT_BIN_DIR)


def require_provider_binary() -> Path:
    """The provider binary; without it the case cannot run (skipped here, failed in CI)."""
    binary, reason = provider_binary()
    if binary is None:
        cannot_run(reason)
    return binary


def run_provider(
    binary: Path,
    command: str,
    config_file: Path,
    *,
    controller_id: str,
    pool_id: str = "",
    instance: str = "",
    bootstrap: Mapping[str, Any] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one provider command as GARM does: a clean environment, the bootstrap on stdin."""
    environment = {
        "GARM_COMMAND": command,
        "GARM_CONTROLLER_ID": controller_id,
        "GARM_POOL_ID": pool_id,
        "GARM_INSTANCE_ID": instance,
        "GARM_PROVIDER_CONFIG_FILE": str(config_file),
        "GARM_INTERFACE_VERSION": INTERFACE_VERSION,
    }
    return subprocess.run(
        [str(binary)],
        input=json.dumps(bootstrap) if bootstrap is not None else "",
        env=environment,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_SECONDS,
        check=False,
    )


def publication(
    labels: tuple[str, ...],
    *,
    auth_url: str,
    password_secret_id: str = "secret:password",  # noqa: S107 - a secret's id, not a value
    private_key_secret_id: str = "secret:key",  # noqa: S107 - a secret's id, not a value
    runner: Mapping[str, Any] = RUNNER_OPTIONS,
) -> interface.GarmConfiguratorData:
    """Configurator `small`'s publication with Keystone at `auth_url` and its runner options.

    `runner` defaults to every runner option set.
    """
    databag = published_databag(
        labels, password_secret_id=password_secret_id, private_key_secret_id=private_key_secret_id
    )
    parts = {key: json.loads(value) for key, value in databag.items() if key != "version"}
    parts["openstack"]["auth_url"] = auth_url
    parts["runner"] = dict(runner)
    document = {
        "scaleset": parts["scaleset"],
        "openstack": parts["openstack"],
        "github_app": parts["github-app"],
        "runner": parts["runner"],
    }
    # JSON, as a databag arrives: the strict models take arrays for tuples only from JSON.
    return interface.GarmConfiguratorData.model_validate_json(json.dumps(document))
