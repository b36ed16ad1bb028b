"""One rule for configurators that share a GitHub App installation or an entity (ADR 0018).

Credentials in GARM are per App installation (`garm-app-<app id>-<installation id>`) and an
entity points at one credentials object, so configurators sharing either must agree:

- Configurators publishing the same installation with different settings (another key), or
  the same entity with different installations, are all refused, each problem naming every
  application involved; nothing is written for that installation or entity, and the GitHub
  check asks GitHub about that entity as no App (it removes nothing without an answer).
- While any configurator's publication is unreadable or missing, what exists is not changed:
  credentials are not re-keyed and entities not re-pointed (the unreadable one may own them);
  what is missing is still created. Deletes wait for every publication too (`github_cleanup`).

This replaces "first wins" for GARM's credentials and entities and "last wins" for the GitHub
check, which disagreed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from garm_api.models import EntityKind
from scaleset_reconciler.needs import entity_key

if TYPE_CHECKING:
    # Types only: github_objects applies this rule, so it imports this module.
    from reconcile.github_objects import EntityBinding, GithubApp

_Key = TypeVar("_Key", bound=Hashable)


def agreed_bindings(
    bindings: Sequence[EntityBinding],
) -> tuple[list[EntityBinding], dict[str, str]]:
    """Split the bindings into those every configurator agrees on and the conflicts.

    Returns:
        The agreed bindings, in order, and one problem per contested installation (keyed by
        its credentials name) or entity (keyed by its name), naming the applications.
    """
    problems: dict[str, str] = {}
    contested_apps = _contested(
        _group(bindings, lambda b: b.app.credentials_name), lambda b: b.app.description
    )
    for name, involved in contested_apps.items():
        problems[name] = f"{_names(involved)} publish different keys: publish one key"
    contested_entities = _contested(
        _group(bindings, lambda b: entity_key(b.entity.kind, b.entity.name)),
        lambda b: b.app.credentials_name,
    )
    for involved in contested_entities.values():
        problems[involved[0].entity.name] = (
            f"{_names(involved)} serve it with different GitHub Apps: use one App"
        )
    agreed = [
        binding
        for binding in bindings
        if binding.app.credentials_name not in contested_apps
        and entity_key(binding.entity.kind, binding.entity.name) not in contested_entities
    ]
    return agreed, problems


def apps_by_entity(
    bindings: Sequence[EntityBinding],
) -> dict[tuple[EntityKind, str], GithubApp]:
    """The App each agreed entity is served through, keyed as `entity_key` (for the check)."""
    agreed, _ = agreed_bindings(bindings)
    return {entity_key(b.entity.kind, b.entity.name): b.app for b in agreed}


def _group(
    bindings: Iterable[EntityBinding], key: Callable[[EntityBinding], _Key]
) -> dict[_Key, list[EntityBinding]]:
    groups: dict[_Key, list[EntityBinding]] = {}
    for binding in bindings:
        groups.setdefault(key(binding), []).append(binding)
    return groups


def _contested(
    groups: Mapping[_Key, list[EntityBinding]], setting: Callable[[EntityBinding], str]
) -> dict[_Key, list[EntityBinding]]:
    return {
        key: members
        for key, members in groups.items()
        if len({setting(binding) for binding in members}) > 1
    }


def _names(bindings: Iterable[EntityBinding]) -> str:
    return " and ".join(sorted({binding.application or "?" for binding in bindings}))
