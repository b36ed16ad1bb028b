"""Shared fixtures: RSA keys in both PEM forms, a valid config and its user secrets."""

from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from configurator_config import SecretReadError

PASSWORD_SECRET_ID = "secret:d1n3kb7mp25c78a8ob30"
PRIVATE_KEY_SECRET_ID = "secret:d1n3kb7mp25c78a8ob3g"
OPENSTACK_PASSWORD = "s3cr3t-openstack-password"


@pytest.fixture(scope="session")
def rsa_key() -> rsa.RSAPrivateKey:
    """One RSA key for the whole session: generating keys is slow."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="session")
def pkcs1_pem(rsa_key: rsa.RSAPrivateKey) -> str:
    """The key as GitHub issues App keys: PKCS#1, BEGIN RSA PRIVATE KEY."""
    return rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture(scope="session")
def pkcs8_pem(rsa_key: rsa.RSAPrivateKey) -> str:
    """The same key as PKCS#8, BEGIN PRIVATE KEY, which GARM refuses."""
    return rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def valid_config() -> dict[str, Any]:
    """A complete, valid config as Juju hands it to the charm."""
    return {
        "name": "small",
        "labels": "noble, x64,large",
        "flavor": "m1.small",
        "image": "",
        "os-arch": "amd64",
        "min-idle-runners": 0,
        "max-runners": 10,
        "runner-group": "Default",
        "org": "canonical",
        "repo": "",
        "openstack-auth-url": "https://keystone.example:5000/v3",
        "openstack-username": "runner-bot",
        "openstack-password": PASSWORD_SECRET_ID,
        "openstack-project-name": "runners",
        "openstack-user-domain-name": "Default",
        "openstack-project-domain-name": "Default",
        "openstack-region-name": "RegionOne",
        "openstack-network": "runners-net",
        "github-app-id": 123456,
        "github-app-installation-id": 7890123,
        "github-app-private-key": PRIVATE_KEY_SECRET_ID,
    }


@pytest.fixture
def user_secrets(pkcs1_pem: str) -> dict[str, dict[str, str]]:
    """The operator's user secrets, by id, with the documented keys."""
    return {
        PASSWORD_SECRET_ID: {"password": OPENSTACK_PASSWORD},
        PRIVATE_KEY_SECRET_ID: {"private-key": pkcs1_pem},
    }


@pytest.fixture
def secret_reader(
    user_secrets: dict[str, dict[str, str]],
) -> Callable[[str, str], str]:
    """A SecretReader over `user_secrets` that fails like the charm's reader does."""

    def read(secret_id: str, key: str) -> str:
        if secret_id not in user_secrets:
            raise SecretReadError(f"names secret {secret_id}, which this application cannot read")
        content = user_secrets[secret_id]
        if key not in content:
            raise SecretReadError(f"names secret {secret_id}, which has no key '{key}'")
        return content[key]

    return read
