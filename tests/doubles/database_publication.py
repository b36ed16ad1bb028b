"""What a PostgreSQL charm publishes on the `database` relation, for charm and e2e tests."""

from __future__ import annotations

import json

from ops import testing


def database_relation(
    secret: testing.Secret, endpoints: str = "10.0.0.5:5432"
) -> testing.Relation:
    """A database relation whose provider has answered (data contract v1)."""
    response = {
        "resource": "garm",
        "endpoints": endpoints,
        "secret-user": secret.id,
        "request-id": "garm-request",
        "salt": "salt",
    }
    return testing.Relation(
        "database",
        remote_app_name="postgresql",
        remote_app_data={"version": "v1", "requests": json.dumps([response])},
    )


def database_secret(
    username: str = "relation_7",
    password: str = "pg-password",  # noqa: S107 - a test value
) -> testing.Secret:
    """The provider's user secret, granted to garm."""
    return testing.Secret(tracked_content={"username": username, "password": password})
