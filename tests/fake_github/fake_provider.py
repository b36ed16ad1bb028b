#!/usr/bin/python3
"""A tiny GARM external provider (interface v0.1.0) that keeps instances in a JSON file.

GARM runs it with no arguments and a clean environment; `GARM_COMMAND` says what to do and
`GARM_PROVIDER_CONFIG_FILE` names a JSON file `{"state_file": "..."}`. Stdout carries only the
JSON result; exit code 30 means "not found" (GARM's external provider interface v0.1.0).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path
from typing import Any

NOT_FOUND = 30


def main() -> int:
    """Run one provider command."""
    config = json.loads(Path(os.environ["GARM_PROVIDER_CONFIG_FILE"]).read_text())
    state_path = Path(config["state_file"])
    with open(state_path.with_suffix(".lock"), "w") as lock:
        # GARM runs provider commands concurrently.
        fcntl.flock(lock, fcntl.LOCK_EX)
        state: dict[str, Any] = json.loads(state_path.read_text()) if state_path.exists() else {}
        code = run(os.environ.get("GARM_COMMAND", ""), state)
        state_path.write_text(json.dumps(state))
    return code


def run(command: str, state: dict[str, Any]) -> int:
    """Apply one command to the state; return the exit code."""
    pool = os.environ.get("GARM_POOL_ID", "")
    instance_id = os.environ.get("GARM_INSTANCE_ID", "")
    if command == "CreateInstance":
        bootstrap = json.load(sys.stdin)
        name = bootstrap["name"]
        # What a runner on the instance would report with (GARM's callback URL and the
        # instance's token), so a test can act as the runner that boots there.
        state[name] = {
            "pool": pool,
            "callback_url": bootstrap.get("callback-url", ""),
            "instance_token": bootstrap.get("instance-token", ""),
        }
        print(json.dumps(_instance(name)))
        return 0
    if command == "ListInstances":
        print(json.dumps([_instance(n) for n, r in state.items() if r["pool"] == pool]))
        return 0
    if command == "DeleteInstance":
        return 0 if state.pop(instance_id, None) is not None else NOT_FOUND
    if command == "GetInstance":
        if instance_id not in state:
            return NOT_FOUND
        print(json.dumps(_instance(instance_id)))
        return 0
    return 0 if command in ("StartInstance", "StopInstance", "RemoveAllInstances") else 1


def _instance(name: str) -> dict[str, Any]:
    return {
        "provider_id": name,
        "name": name,
        "os_type": "linux",
        "os_name": "ubuntu",
        "os_version": "24.04",
        "os_arch": "amd64",
        "status": "running",
    }


if __name__ == "__main__":
    sys.exit(main())
