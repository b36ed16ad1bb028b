"""GARM's version: asking the installed binary, and what a version string says it can do."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from workload.host import Paths, Runner

VERSION_TIMEOUT_SECONDS: Final = 10
# The last GARM release without the PostgreSQL backend and the [proxy] config section.
LAST_RELEASE_WITHOUT_POSTGRESQL: Final = (0, 2, 1)


def installed_version(paths: Paths, run: Runner) -> str:
    """GARM's version as `garm --version` prints it (e.g. "v0.2.1"); empty when unknown.

    `--version` and not `version`: v0.2.1 parses flags with Go's `flag` package, ignores a
    `version` argument and starts a server (garm-behaviour B5). The timeout keeps any surprise
    from hanging the hook.
    """
    return binary_version(paths.garm_binary, run)


def binary_version(binary: Path, run: Runner) -> str:
    """The version a GARM binary at `binary` prints (see `installed_version`); "" if unknown."""
    if not binary.is_file():
        return ""
    try:
        result = run([str(binary), "--version"], timeout=VERSION_TIMEOUT_SECONDS)
    except OSError:  # not executable here, e.g. a binary for another architecture
        return ""
    return parse_garm_version(result.stdout) if result.returncode == 0 else ""


# What `git describe` appends to a tag for a build some commits past it.
_DESCRIBE_SUFFIX: Final = re.compile(r"-(?P<ahead>\d+)-g[0-9a-f]+$")
_RELEASE: Final = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-(?P<pre>[0-9A-Za-z.-]+))?")
_UNSTAMPED: Final = "unknown"


def parse_garm_version(output: str) -> str:
    """The bare version in what `garm --version` printed; empty when it printed none.

    Both v0.2.1 (Go `flag`) and HEAD (cobra, with a `{{.Version}}` template) print the stamped
    `git describe` string alone on a line, e.g. "v0.2.1" or "v0.2.1-96-gafda4e76", and
    "v0.0.0-unknown" for an unstamped build. The last word of the first line is taken, so a
    "garm version v0.2.1" (cobra's default template) reads the same.
    """
    lines = output.strip().splitlines()
    words = lines[0].split() if lines else []
    if not words or _RELEASE.match(words[-1]) is None:
        return ""
    return words[-1]


def garm_version_supports_postgresql(version: str) -> bool | None:
    """Whether a GARM of this version has the PostgreSQL backend; None when it cannot tell.

    PostgreSQL came after v0.2.1 (docs/reference/garm-behaviour.md); see
    `garm_built_after_v0_2_1` for how a version string is read.

    Args:
        version: what `Workload.version()` returned.
    """
    return garm_built_after_v0_2_1(version)


def garm_version_has_proxy_section(version: str) -> bool | None:
    """Whether a GARM of this version reads a [proxy] section; None when it cannot tell.

    v0.2.1 has none and reaches a proxy only through its environment; the section came after.

    Args:
        version: what `Workload.version()` returned.
    """
    return garm_built_after_v0_2_1(version)


def garm_built_after_v0_2_1(version: str) -> bool | None:
    """Whether a GARM of this version is newer than the v0.2.1 release; None when unknown.

    A release after v0.2.1 is; v0.2.1, its pre-releases and anything older are not; a
    `git describe` build past v0.2.1 (e.g. "v0.2.1-96-gafda4e76") is taken to be, which holds
    for GARM's main branch but not for the first commits after the tag. An unstamped build
    ("v0.0.0-unknown") or an unreadable string gives None.
    """
    order = version_order(version)
    if order is None:
        return None
    # The release itself: final (1), no commit past its tag (0).
    return order > (*LAST_RELEASE_WITHOUT_POSTGRESQL, 1, 0)


# How a version sorts: release numbers, then a pre-release before its release, then how many
# commits a `git describe` build is past its tag.
VersionOrder = tuple[int, int, int, int, int]


def version_order(version: str) -> VersionOrder | None:
    """A key that orders GARM versions; None for an unstamped build or an unreadable string.

    "v0.2.1" < "v0.2.1-96-gafda4e76" < "v0.2.2"; a pre-release sorts before its release. Two
    builds the same number of commits past one tag compare equal: the key cannot tell commits
    on different branches apart.
    """
    text = version.strip().removesuffix("-dirty")
    ahead = 0
    describe = _DESCRIBE_SUFFIX.search(text)
    if describe is not None:
        ahead = int(describe.group("ahead"))
        text = text[: describe.start()]
    release = _RELEASE.fullmatch(text)
    if release is None or release.group("pre") == _UNSTAMPED:
        return None
    final = 0 if release.group("pre") else 1
    major, minor, patch = (int(release.group(n)) for n in (1, 2, 3))
    return (major, minor, patch, final, ahead)
