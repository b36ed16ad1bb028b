"""Which Glance images the real `garm-provider-openstack` finds by name with the charm's config.

The provider looks an image name up with `GET /v2/images?name=…&visibility=<image_visibility>`
(`public` when its config.toml says nothing): a project's own image, which an image builder
uploads `private` or `shared`, is found only with the visibility the charm renders (`all`).
Each test runs the provider binary's CreateInstance against the fake OpenStack, whose Glance
lists images as Glance v2 does for a project's user.
"""

from __future__ import annotations

import base64
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from charms.garm_configurator.v0 import garm_configurator as interface
from doubles.configurator_publication import pkcs1_app_key
from e2e.real_provider import publication, require_provider_binary, run_provider
from fake_openstack import Cloud, FakeOpenStack, GlanceImage, Request
from relations.configurators import desired_from
from workload.host import Paths
from workload.rendering import render_clouds_yaml, render_provider_config

PASSWORD = "image-visibility-Pa55word"
CONTROLLER = "3f0c5b8e-6a2d-4c1e-9b7a-0d4e2f6a8c1b"
POOL = "7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
OTHER_PROJECT = "0f1e2d3c4b5a49788796a5b4c3d2e1f0"
# The image names the configurator's publication asks for (`publication`: "ubuntu-24.04").
IMAGE = "ubuntu-24.04"
WRAPPER = '#!/bin/bash\nCALLBACK_URL="{{ .CallbackURL }}"\n'


def create_runner(
    tmp_path: Path, image: GlanceImage, *, without_visibility: bool = False
) -> tuple[Any, FakeOpenStack]:
    """CreateInstance with the charm's rendered files, the cloud holding only `image`.

    `without_visibility` drops `image_visibility` from the rendered config.toml: the config
    the charm rendered before it set one.
    """
    binary = require_provider_binary()
    with FakeOpenStack(Cloud("runners", PASSWORD, images=(image,))) as cloud:
        data = publication(("linux", "x64"), auth_url=cloud.auth_url)
        secrets = interface.ConfiguratorSecrets(PASSWORD, pkcs1_app_key())
        spec, openstack, _ = desired_from("small", data, secrets)
        assert spec.image == IMAGE
        paths = Paths(tmp_path)
        paths.provider_dir(openstack.name).mkdir(parents=True)
        paths.provider_clouds(openstack.name).write_text(render_clouds_yaml(openstack))
        rendered = tomllib.loads(render_provider_config(openstack, paths))
        if without_visibility:
            del rendered["image_visibility"]
        config_file = paths.provider_config(openstack.name)
        config_file.write_text(tomli_w.dumps(rendered))
        result = run_provider(
            binary,
            "CreateInstance",
            config_file,
            controller_id=CONTROLLER,
            pool_id=POOL,
            bootstrap=_bootstrap(spec.image, spec.flavor, dict(spec.extra_specs)),
        )
        return result, cloud


@pytest.mark.parametrize(
    "image",
    [
        GlanceImage(IMAGE, visibility="private"),
        GlanceImage(IMAGE, visibility="shared"),
        GlanceImage(IMAGE, visibility="public"),
        GlanceImage(IMAGE, visibility="shared", owner=OTHER_PROJECT, member_status="accepted"),
    ],
    ids=["own-private", "own-shared", "public", "shared-with-the-project"],
)
def test_the_provider_finds_an_image_the_project_sees_by_name(tmp_path: Path, image: GlanceImage):
    """Arrange: the charm's provider config; the scale set's image is only `image`.

    Act: CreateInstance.
    Assert: the provider asked Glance with `visibility=all` and booted the server from that
    image, whether the image is the project's own (private or shared), public, or shared with
    the project by another one.
    """
    result, cloud = create_runner(tmp_path, image)

    assert result.returncode == 0, result.stderr
    (server,) = cloud.created_servers()
    assert server.request["imageRef"] == cloud.images[IMAGE]["id"]
    (lookup,) = cloud.requests_to("GET", r"^/image/v2/images$")
    assert lookup.query["visibility"] == ["all"]
    assert lookup.query["name"] == [IMAGE]


def test_the_old_config_misses_the_projects_private_image(tmp_path: Path):
    """Arrange: the config the charm rendered before (no `image_visibility`); an own image.

    Act: CreateInstance of a scale set whose image is the project's own private image.
    Assert: the provider fails naming the image and the visibility it searched (`public`), and
    Nova is asked for no server: the production failure the rendered visibility fixes.
    """
    result, cloud = create_runner(
        tmp_path, GlanceImage(IMAGE, visibility="private"), without_visibility=True
    )

    assert result.returncode != 0
    assert f"failed to find image with name or id {IMAGE} and visibility 'public'" in (
        result.stderr
    )
    assert cloud.created_servers() == []


def test_an_image_of_another_project_not_shared_with_this_one_is_not_found(tmp_path: Path):
    """Arrange: the charm's provider config; the image is another project's, private.

    Act: CreateInstance (no image of that name is shared with this project).
    Assert: the provider fails to find it and no server is created (`all` is what the project
    sees, not every image in the cloud).
    """
    result, cloud = create_runner(
        tmp_path, GlanceImage(IMAGE, visibility="private", owner=OTHER_PROJECT)
    )

    assert result.returncode != 0
    assert f"failed to find image with name or id {IMAGE} and visibility 'all'" in result.stderr
    assert cloud.created_servers() == []


def _bootstrap(image: str, flavor: str, extra_specs: dict[str, Any]) -> dict[str, Any]:
    """The bootstrap GARM sends to create one runner (as in `test_openstack_provider`)."""
    return {
        "name": "garm-Im4geRunner1",
        "tools": [
            {
                "os": "linux",
                "architecture": "x64",
                "filename": "actions-runner.tar.gz",
                "download_url": "https://github.com/actions/runner/releases/actions-runner.tgz",
            }
        ],
        "repo_url": "https://github.com/acme",
        "callback-url": "http://127.0.0.1:9/api/v1/callbacks",
        "metadata-url": "http://127.0.0.1:9/api/v1/metadata",
        "instance-token": "instance-token-of-this-runner",
        "ssh-keys": [],
        "extra_specs": {"runner_install_template": _b64(WRAPPER), **extra_specs},
        "ca-cert-bundle": None,
        "github-runner-group": "",
        "arch": "amd64",
        "os_type": "linux",
        "flavor": flavor,
        "image": image,
        "labels": ["small"],
        "pool_id": POOL,
        "user_data_options": {},
        "jit_config_enabled": True,
    }


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_fake_glance_lists_what_glance_v2_lists_to_a_project():
    """Arrange: the fake cloud with one image of each kind a project can meet.

    Act: list the images with each visibility filter, and with none.
    Assert: the names Glance v2 lists a regular user: `all` = public, community, the project's
    own and what is shared with it (accepted membership); no filter leaves out other projects'
    community images; a pending membership or another project's private image never shows.
    """
    images = (
        GlanceImage("public"),
        GlanceImage("own-private", visibility="private"),
        GlanceImage("own-shared", visibility="shared"),
        GlanceImage("own-community", visibility="community"),
        GlanceImage("their-community", visibility="community", owner=OTHER_PROJECT),
        GlanceImage("their-private", visibility="private", owner=OTHER_PROJECT),
        GlanceImage("shared-accepted", "shared", OTHER_PROJECT, member_status="accepted"),
        GlanceImage("shared-pending", "shared", OTHER_PROJECT, member_status="pending"),
    )
    cloud = FakeOpenStack(Cloud("runners", PASSWORD, images=images))
    cloud.tokens.add("token")

    def listed(**query: str) -> set[str]:
        request = Request("GET", "/image/v2/images", {k: [v] for k, v in query.items()}, None)
        _, body, _ = cloud.answer(request, "token")
        return {image["name"] for image in body["images"]}

    seen = {"public", "own-private", "own-shared", "own-community", "their-community"}
    assert listed(visibility="all") == seen | {"shared-accepted"}
    assert listed() == seen - {"their-community"} | {"shared-accepted"}
    assert listed(visibility="private") == {"own-private"}
    assert listed(visibility="shared") == {"own-shared", "shared-accepted"}
    assert listed(visibility="community") == {"own-community", "their-community"}
    assert listed(visibility="shared", member_status="all") == {
        "own-shared",
        "shared-accepted",
        "shared-pending",
    }
