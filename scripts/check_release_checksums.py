"""Check the pinned release hashes against each release's own `<asset>.sha256` (needs egress).

`workload/releases.py` pins a sha256 per architecture for the downloads the charm may make; a
pin must match what the release itself publishes next to the asset. The integration workflow
runs this before packing (the repository's own CI machines have no egress). A release whose
hash is not pinned yet (empty) is reported and skipped: the charm refuses to download it.

Run: `PYTHONPATH=charms/garm/src python3 scripts/check_release_checksums.py`
"""

from __future__ import annotations

import re
import sys
import urllib.request
from collections.abc import Callable, Iterable

from workload.releases import GARM_RELEASE, PROVIDER_RELEASE, Release

SHA256 = re.compile(r"\b[0-9a-fA-F]{64}\b")
TIMEOUT_SECONDS = 60

Fetch = Callable[[str], str]


def main() -> int:
    """Print each asset's verdict; fail on a mismatch or a published hash that cannot be read."""
    problems = release_problems((GARM_RELEASE, PROVIDER_RELEASE), fetch_text)
    for problem in problems:
        print(problem)
    print(f"check_release_checksums: {len(problems)} problem(s)")
    return 1 if problems else 0


def release_problems(releases: Iterable[Release], fetch: Fetch) -> list[str]:
    """What does not match: one line per asset whose pin differs from its `.sha256`."""
    problems: list[str] = []
    for release in releases:
        for arch, pinned in sorted(release.sha256.items()):
            url = release.asset_url(arch)
            if not pinned:
                print(f"{url}: no pinned hash (the charm refuses to download it)")
                continue
            try:
                published = published_sha256(fetch(f"{url}.sha256"))
            except (OSError, ValueError) as error:
                problems.append(f"{url}.sha256: cannot read the published hash: {error}")
                continue
            if published != pinned.lower():
                problems.append(f"{url}: pinned {pinned}, the release publishes {published}")
            else:
                print(f"{url}: pinned hash matches the release's")
    return problems


def published_sha256(text: str) -> str:
    """The hash in a `.sha256` file (`<hex>  <file name>`, or the bare hex), lower case.

    Raises:
        ValueError: the text holds no sha256.
    """
    found = SHA256.search(text)
    if found is None:
        raise ValueError("no sha256 in the file")
    return found.group(0).lower()


def fetch_text(url: str) -> str:
    """GET `url` (GitHub's release download, following its redirect); the body as text."""
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310 (https)
        return answer.read(4096).decode("utf-8", "replace")


if __name__ == "__main__":
    sys.exit(main())
