"""What a kept provider's files on disk feed into what GARM runs with, and its config entry.

Written from the survivors of a mutation run of `workload.rendering`
(docs/reference/testing.md): a kept provider's clouds.yaml is read back from disk, where a hand
edit may have left an auth URL with no host.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from unit.walks.workload import config, provider
from workload.config import ProxyConfig
from workload.host import Paths
from workload.rendering import render_config, render_files

PROXY = ProxyConfig(https_proxy="http://squid:3128")


@pytest.mark.parametrize(
    "auth_url",
    ["https://[::1", "not a url", "XXXX", None],
    ids=["unparsable", "no-host", "a-word", "no-clouds-yaml"],
)
def test_a_kept_provider_without_a_readable_host_adds_nothing_to_no_proxy(
    auth_url: str | None, tmp_path: Path
):
    """Arrange: a model proxy; kept provider `z`'s clouds.yaml has an auth URL with no host.

    (Or there is no clouds.yaml at all.) Act: render the files.
    Assert: NO_PROXY in the EnvironmentFile is exactly the loopback names: no made-up host.
    """
    paths = Paths(tmp_path)
    clouds = paths.provider_clouds("z")
    clouds.parent.mkdir(parents=True)
    if auth_url is not None:
        clouds.write_text(f'clouds:\n  z:\n    auth:\n      auth_url: "{auth_url}"\n')

    files = render_files(config(providers=(), kept_providers=("z",), proxy=PROXY), paths)

    environment = files[paths.environment][0].decode().splitlines()
    assert 'NO_PROXY="127.0.0.1,localhost,::1"' in environment


def test_a_providers_entry_in_garms_config_is_exactly_as_rendered(tmp_path: Path):
    """Arrange: one provider. Act: render config.toml.

    Assert: its `[[provider]]` entry is the external provider, its binary, its config file, the
    proxy variables it inherits, and the description `garm-cli provider list` shows.
    """
    paths = Paths(tmp_path)

    document = tomllib.loads(render_config(config(providers=(provider("a"),)), paths, {}))

    assert document["provider"] == [
        {
            "name": "a",
            "provider_type": "external",
            "description": "OpenStack provider a",
            "external": {
                "provider_executable": str(paths.provider_binary),
                "config_file": str(paths.provider_config("a")),
                "environment_variables": [
                    "HTTP_PROXY",
                    "HTTPS_PROXY",
                    "NO_PROXY",
                    "http_proxy",
                    "https_proxy",
                    "no_proxy",
                ],
            },
        }
    ]
