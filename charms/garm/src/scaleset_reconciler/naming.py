"""Scale-set names: the live name a spec should have, and which family an observed name is in.

A spec's **logical name** is what the operator configured. GARM cannot change a scale set's
labels, provider or entity in place, so a change to any of them is made by creating a new scale
set beside the old one. The new one's **live name** is a pure function of the spec:

    live name = <stem> "-" <8 hex characters of sha256(identity)>

Normalisation rules:

- Labels: each label is stripped and lower-cased; empty labels are dropped; the set is
  de-duplicated and sorted. `GPU, x64 ` and `x64,gpu` are the same label set.
- Provider: the provider name, stripped (GARM's provider names are case-sensitive).
- Entity: the kind (`repositories`, `organizations`, `enterprises`) and the name (`owner/repo`
  or `org`), lower-cased (GitHub names are case-insensitive).
- Identity: the canonical JSON (sorted keys, no spaces) of those three, hashed with sha256.
- Attempt: a further attempt at the same identity (GitHub dropped labels and may accept them
  now, or still holds a scale set of the first name) adds `"attempt": n` to the identity, so
  its name is distinct and still `<stem>-<8 hex>`; the marker records the attempt.
- Names: a logical name must match `[a-z0-9]([a-z0-9-]*[a-z0-9])?` (GARM puts names into query
  strings unescaped, so nothing else is safe).
- Length: the live name is at most `max_length` characters (default 64). When
  `logical + "-" + 8 hex` would be longer, the stem is the logical name cut to fit, then `-` and
  6 hex characters of sha256(logical name): two long names that share a prefix never collide.
  Otherwise the stem is the logical name itself.

A spec's **family** is every observed scale set named `<stem>-<8 hex>`, `<stem>` or `<logical>`.
When one name could belong to several specs (spec `a` and spec `a-1234abcd`), the order is:
a spec's exact live name first, then an exact `<stem>`/`<logical>` match, then the generation
pattern `<stem>-<8 hex>`. So the longer, more specific logical name wins, deterministically.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping

from garm_api.models import EntityKind, normalise_labels
from scaleset_reconciler.spec import ScalesetSpec

DEFAULT_MAX_LENGTH = 64
HASH_LENGTH = 8
STEM_HASH_LENGTH = 6
# Room for the cut stem's own hash and the generation hash, with their dashes.
MIN_MAX_LENGTH = 1 + 1 + STEM_HASH_LENGTH + 1 + HASH_LENGTH

_LOGICAL_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_GENERATION_SUFFIX = re.compile(r"-[0-9a-f]{8}")


def live_name(spec: ScalesetSpec, max_length: int = DEFAULT_MAX_LENGTH, attempt: int = 0) -> str:
    """Return the name the scale set for `spec` has in GARM (see the module docstring).

    Raises:
        ValueError: the logical name is not a valid name or `max_length` leaves no room.
    """
    return name_for(
        spec.name,
        labels=spec.labels,
        provider_name=spec.provider_name,
        entity_kind=spec.entity.kind,
        entity_name=spec.entity.name,
        max_length=max_length,
        attempt=attempt,
    )


def name_for(
    logical: str,
    *,
    labels: Iterable[str],
    provider_name: str,
    entity_kind: EntityKind,
    entity_name: str,
    max_length: int = DEFAULT_MAX_LENGTH,
    attempt: int = 0,
) -> str:
    """Return the live name for a logical name and the fields GARM cannot change in place."""
    identity = identity_hash(labels, provider_name, entity_kind, entity_name, attempt)
    return f"{stem(logical, max_length)}-{identity}"


def identity_hash(
    labels: Iterable[str],
    provider_name: str,
    entity_kind: EntityKind,
    entity_name: str,
    attempt: int = 0,
) -> str:
    """Return 8 hex characters of sha256 over the normalised labels, provider and entity.

    `attempt` > 0 names a further attempt at the same scale set, when the first name cannot be
    used (GitHub dropped labels, or still holds a scale set of that name); attempt 0 is not in
    the hash, so the first name stays what it always was.
    """
    identity: dict[str, object] = {
        "entity": f"{entity_kind.value}:{entity_name.strip().lower()}",
        "labels": sorted(normalise_labels(labels)),
        "provider": provider_name.strip(),
    }
    if attempt:
        identity["attempt"] = attempt
    return _sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")))[:HASH_LENGTH]


def stem(logical: str, max_length: int = DEFAULT_MAX_LENGTH) -> str:
    """Return the part of the live name before the generation hash.

    Raises:
        ValueError: the logical name is not a valid name or `max_length` leaves no room.
    """
    if not is_valid_logical_name(logical):
        raise ValueError(f"invalid scale set name {logical!r}: use [a-z0-9-]")
    if max_length < MIN_MAX_LENGTH:
        raise ValueError(f"the maximum name length must be at least {MIN_MAX_LENGTH}")
    room = max_length - 1 - HASH_LENGTH
    if len(logical) <= room:
        return logical
    cut = logical[: room - 1 - STEM_HASH_LENGTH].rstrip("-")
    return f"{cut}-{_sha256(logical)[:STEM_HASH_LENGTH]}"


def is_valid_logical_name(name: str) -> bool:
    """Whether `name` is made of `[a-z0-9-]` and neither starts nor ends with a dash."""
    return _LOGICAL_NAME.fullmatch(name) is not None


class FamilyIndex:
    """Maps observed scale-set names to the logical name of the spec whose family they are in.

    Built once per pass from the specs' stems and live names; each lookup is O(1), so grouping
    N scale sets costs O(N) however many specs there are.
    """

    def __init__(self, live_names: Mapping[str, str], stems: Mapping[str, str]) -> None:
        """Build the index.

        Args:
            live_names: live name -> logical name, one entry per spec.
            stems: logical name -> its stem, one entry per spec.
        """
        self._live = dict(live_names)
        bare: dict[str, str] = {}
        for logical, spec_stem in stems.items():
            bare.setdefault(spec_stem, logical)
        # An exact logical name beats another spec's cut stem that happens to spell it.
        for logical in stems:
            bare[logical] = logical
        self._bare = bare
        self._stems = {spec_stem: logical for logical, spec_stem in stems.items()}

    def live_owner(self, name: str) -> str | None:
        """Return the logical name whose live name is `name`, or None."""
        return self._live.get(name)

    def owner(self, name: str) -> str | None:
        """Return the logical name whose family `name` is in, or None."""
        by_live = self._live.get(name)
        if by_live is not None:
            return by_live
        by_bare = self._bare.get(name)
        if by_bare is not None:
            return by_bare
        if len(name) > HASH_LENGTH + 1 and _GENERATION_SUFFIX.fullmatch(name[-HASH_LENGTH - 1 :]):
            return self._stems.get(name[: -HASH_LENGTH - 1])
        return None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
