"""What a garm-configurator `small` publishes, for the charm tests and the demo."""

from __future__ import annotations

import dataclasses

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from ops import testing

from charms.garm_configurator.v0 import garm_configurator as interface

CONFIGURATOR_ENDPOINT = "garm-configurator"


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


def small_databag(labels: tuple[str, ...], state: testing.State) -> dict[str, str]:
    """What `small` publishes in `state`: its databag, naming its own secrets by id.

    Only secrets naming `small` as publisher count: garm's admin secret also has `password`.
    """
    password, key = (
        next(
            secret
            for secret in state.secrets
            if field in secret.tracked_content and secret.tracked_content.get("app") == "small"
        )
        for field in ("password", "private-key")
    )
    return published_databag(labels, password_secret_id=password.id, private_key_secret_id=key.id)


def republished(
    state: testing.State, labels: tuple[str, ...]
) -> tuple[testing.State, testing.Relation]:
    """`state` after `small` published `labels`, and its relation (created when absent)."""
    relation = next(
        (
            r
            for r in state.relations
            if isinstance(r, testing.Relation) and r.endpoint == CONFIGURATOR_ENDPOINT
        ),
        testing.Relation(CONFIGURATOR_ENDPOINT, remote_app_name="small"),
    )
    changed = dataclasses.replace(relation, remote_app_data=small_databag(labels, state))
    others = {r for r in state.relations if r.endpoint != CONFIGURATOR_ENDPOINT}
    return dataclasses.replace(state, relations=others | {changed}), changed
