"""Scale-set names: the live name a spec's scale set has in GARM, within the provider's budget.

A spec's **logical name** is what the operator configured. GARM cannot change a scale set's
labels, provider or entity in place, so a change to any of them is made by creating a new scale
set beside the old one (docs/adr/0031-live-names-within-the-provider-budget.md). The new one's
**live name** is a pure function of the spec:

    live name = <stem> "-" <5 base-36 characters of sha256(logical, generation, attempt)>

- **Budget.** GARM gives every scale-set runner the pool ID `<scale set name>-<entity uuid>`,
  the OpenStack provider tags each server `garm-pool-id=<pool id>`, and Nova refuses a tag over
  60 characters (garm-behaviour B46): a live name has at most `NAME_BUDGET` (10) characters.
- **Stem.** The logical name cut to what the budget leaves (4 characters at 10), trailing
  dashes dropped: the operator recognises the set; it does not make the name unique.
- **Generation.** The fields GARM cannot change in place, normalised: the labels (stripped,
  lower-cased, de-duplicated, sorted), the provider name (stripped; GARM's provider names are
  case-sensitive) and the entity (kind and lower-cased name). `GPU, x64 ` and `x64,gpu` are the
  same. Its 16-hex hash (`generation_key`) is what the marker records, so a pass never trusts
  a 5-character hash to say which generation a scale set is.
- **Attempt.** A further attempt at the same generation (GitHub dropped labels, GitHub dropped
  the set, or the name is held by a scale set that is not this generation's) adds `attempt` to
  the hash: a distinct name of the same shape. Attempt 0 is left out of the hash.
- **Alphabet.** `[a-z0-9-]` only: GARM puts names into query strings unescaped.

The hash is 5 characters of base 36: 36**5, about 60 million names per stem. Two names can
collide; the planner never relies on them not to: a name held by any scale set that is not this
generation's own is skipped for the next attempt (`plan`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable

from garm_api.models import EntityKind, normalise_labels
from scaleset_reconciler.spec import ScalesetSpec

# garm-behaviour B46: the OpenStack provider's pool tag, Nova's tag limit, the entity UUID GARM
# appends to the scale set's name in the pool ID.
NOVA_TAG_LIMIT = 60
POOL_TAG_PREFIX = "garm-pool-id="
ENTITY_ID_LENGTH = 36
NAME_BUDGET = NOVA_TAG_LIMIT - len(POOL_TAG_PREFIX) - len("-") - ENTITY_ID_LENGTH
HASH_LENGTH = 5
# A stem of at least one character, its dash and the hash.
MIN_BUDGET = 1 + 1 + HASH_LENGTH
GENERATION_KEY_LENGTH = 16

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_LOGICAL_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_LIVE_NAME = re.compile(rf"(?P<stem>[a-z0-9-]+)-[a-z0-9]{{{HASH_LENGTH}}}")


def live_name(spec: ScalesetSpec, budget: int = NAME_BUDGET, attempt: int = 0) -> str:
    """Return the name attempt `attempt` at the spec's scale set has in GARM.

    Raises:
        ValueError: the logical name is not a valid name or `budget` leaves no room.
    """
    return name_for(
        spec.name,
        generation_key(spec.labels, spec.provider_name, spec.entity.kind, spec.entity.name),
        budget=budget,
        attempt=attempt,
    )


@functools.lru_cache(maxsize=8192)
def name_for(logical: str, generation: str, *, budget: int = NAME_BUDGET, attempt: int = 0) -> str:
    """Return the live name of a logical name's generation (`generation_key`) at `attempt`.

    Pure and asked several times per spec and pass: remembered (a hook is one process).
    """
    identity: dict[str, object] = {"generation": generation, "logical": logical}
    if attempt:
        identity["attempt"] = attempt
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"{stem(logical, budget)}-{_base36(int.from_bytes(digest, 'big'))}"


def generation_key(
    labels: Iterable[str], provider_name: str, entity_kind: EntityKind, entity_name: str
) -> str:
    """Return 16 hex characters of sha256 over what GARM cannot change in place, normalised."""
    return _generation_key(tuple(labels), provider_name, entity_kind, entity_name)


@functools.lru_cache(maxsize=8192)
def _generation_key(
    labels: tuple[str, ...], provider_name: str, entity_kind: EntityKind, entity_name: str
) -> str:
    generation = {
        "entity": f"{entity_kind.value}:{entity_name.strip().lower()}",
        "labels": sorted(normalise_labels(labels)),
        "provider": provider_name.strip(),
    }
    text = json.dumps(generation, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:GENERATION_KEY_LENGTH]


def spec_generation(spec: ScalesetSpec) -> str:
    """Return the spec's `generation_key`."""
    return generation_key(spec.labels, spec.provider_name, spec.entity.kind, spec.entity.name)


def stem(logical: str, budget: int = NAME_BUDGET) -> str:
    """Return the part of the live name before the hash: the logical name, cut to fit.

    Raises:
        ValueError: the logical name is not a valid name or `budget` leaves no room.
    """
    if not is_valid_logical_name(logical):
        raise ValueError(f"invalid scale set name {logical!r}: use [a-z0-9-]")
    if budget < MIN_BUDGET:
        raise ValueError(f"the name budget must be at least {MIN_BUDGET} characters")
    return logical[: budget - 1 - HASH_LENGTH].rstrip("-")


def is_valid_logical_name(name: str) -> bool:
    """Whether `name` is made of `[a-z0-9-]` and neither starts nor ends with a dash."""
    return _LOGICAL_NAME.fullmatch(name) is not None


def stem_of(name: str) -> str | None:
    """Return the stem of a name shaped like a live name (`<stem>-<5 base 36>`), else None."""
    shaped = _LIVE_NAME.fullmatch(name)
    return shaped.group("stem") if shaped is not None else None


def _base36(number: int) -> str:
    digits: list[str] = []
    for _ in range(HASH_LENGTH):
        number, digit = divmod(number, len(_ALPHABET))
        digits.append(_ALPHABET[digit])
    return "".join(digits)
