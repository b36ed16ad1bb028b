"""What a garm-configurator `small` publishes, for the charm tests and the demo."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from charms.garm_configurator.v0 import garm_configurator as interface


def pkcs1_app_key() -> str:
    """A PKCS#1 key, as GitHub issues App keys."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def published_databag(
    labels: tuple[str, ...], *, password_secret_id: str, private_key_secret_id: str
) -> dict[str, str]:
    """The databag of configurator `small`: one scale set for org `acme`, secrets as ids."""
    data = interface.GarmConfiguratorData.model_validate(
        {
            "scaleset": {
                "name": "small",
                "labels": labels,
                "flavor": "m1.small",
                "image": "ubuntu-24.04",
                "os_arch": "amd64",
                "min_idle_runners": 1,
                "max_runners": 4,
                "runner_group": "Default",
                "entity": {"kind": "org", "owner": "acme"},
            },
            "openstack": {
                "auth_url": "https://keystone.example.com:5000/v3",
                "username": "runners",
                "password_secret_id": password_secret_id,
                "project_name": "ci",
                "user_domain_name": "Default",
                "project_domain_name": "Default",
                "network": "runners-net",
            },
            "github_app": {
                "app_id": 123,
                "installation_id": 456,
                "private_key_secret_id": private_key_secret_id,
            },
        }
    )
    return data.to_databag()
