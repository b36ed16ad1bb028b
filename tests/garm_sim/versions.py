"""The GARM versions the simulator can answer as, and what a client sees differ between them.

`v0.2.1` is the release the charm installs; `newer` is GARM's main branch at the commit the
generated client and the recordings come from (96 commits later). Differences a client sees:

- proxies (`/api/v1/proxies`, `proxy_id`/`proxy_name` on scale sets): newer only; v0.2.1
  answers 404 `Resource not found` on those routes.
- `disable_update` on a scale-set update: newer applies it, v0.2.1 ignores it (200, unchanged).
- controller info: `garm_agent_version` and `allow_insecure_garm_agent` only on newer.
- a repository or organization without a webhook secret: 500 `Server error` on v0.2.1, 400
  `missing secret` on newer.
"""

from __future__ import annotations

from typing import Literal

GarmVersion = Literal["v0.2.1", "newer"]
V021: GarmVersion = "v0.2.1"
NEWER: GarmVersion = "newer"
GARM_VERSIONS: tuple[GarmVersion, ...] = (V021, NEWER)
# What each prints for `--version` and reports as the controller's `version`.
VERSION_STRINGS: dict[GarmVersion, str] = {V021: "v0.2.1", NEWER: "v0.2.1-96-gafda4e76"}


def garm_version(value: str) -> GarmVersion:
    """Return `value` as a GarmVersion.

    Raises:
        ValueError: for anything but `v0.2.1` and `newer`.
    """
    for version in GARM_VERSIONS:
        if value == version:
            return version
    raise ValueError(f"unknown GARM version {value!r}; expected one of {GARM_VERSIONS}")
