"""The marker the charm keeps in a scale set's `extended_state` (ADR 0002).

GARM stores `extended_state` as a free string, lets clients write it on update and returns it in
list responses (garm-behaviour B16). The charm writes a small JSON object there:

    {"application":"cfg-small","config":"<16 hex>","enabled-at":"<RFC 3339>",
     "generation":"<16 hex>","logical":"small","managed-by":"garm-charm",
     "retired-at":"<RFC 3339>","delete-failures":2,"delete-retry-at":"<RFC 3339>"}

- `managed-by` and `logical` prove the charm made the scale set and say for which spec; a scale
  set without them is hand-made and never touched.
- `application` is the garm-configurator application whose spec made (or adopted) the scale
  set: a spec never adopts, retires or deletes a scale set whose marker names another
  application. A marker without it was written by an earlier charm version; it is adopted by
  the one spec of the same name and entity, and stamped (docs/adr/0018-scale-set-ownership.md).
- `config` is a hash of the fields list responses omit (`extra_specs`, the template), so a pass
  can tell whether they changed without one GET per scale set.
- `retired-at` starts the drain clock; it is written in the same PUT that retires, so the clock
  survives charm, hook and GARM restarts. `enabled-at` is set when a retired generation is
  re-enabled (its `created_at` is old, so the hand-over grace counts from here).
- `delete-failures` counts deletes GARM answered 200 to but kept (garm-behaviour B15), and
  `delete-retry-at` is when the next delete is sent: the wait doubles with each kept delete.
- `generation` is the `naming.generation_key` of the labels, provider and entity the scale set
  was created for, and `attempt` (when above 0) which attempt at them it is: its name was made
  from both (`naming`). A pass knows a scale set's generation from these, never from its
  5-character name hash alone. Markers of charm versions before short names have no
  `generation`: their scale sets are predecessors, replaced by the changeover (ADR 0031).
- `refresh-from` (while a rolling refresh runs, ADR 0022): runners GARM made before this moment
  are outdated. GARM gives every scale-set runner generation 0 (garm-behaviour, "Runners carry
  no generation"), so the charm keeps the moment of the change itself.
- `queued-at` (on a serving scale set whose replacement waits for the surge budget, ADR 0038):
  when the charm first saw the change it queued; the queue is served oldest first.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
from collections.abc import Mapping
from typing import Any, cast

from garm_api.models import ScaleSet
from scaleset_reconciler.spec import ScalesetSpec

MANAGED_BY = "garm-charm"


@dataclasses.dataclass(frozen=True)
class Marker:
    """What the charm knows about one of its scale sets, stored in GARM itself."""

    logical: str
    config: str = ""
    application: str = ""
    retired_at: datetime.datetime | None = None
    enabled_at: datetime.datetime | None = None
    delete_failures: int = 0
    delete_retry_at: datetime.datetime | None = None
    attempt: int = 0
    refresh_from: datetime.datetime | None = None
    generation: str = ""
    queued_at: datetime.datetime | None = None

    @property
    def retired(self) -> bool:
        """Whether the charm has retired this scale set (its drain clock is running)."""
        return self.retired_at is not None

    def render(self) -> str:
        """Return the compact JSON written to `extended_state`."""
        body: dict[str, Any] = {
            "managed-by": MANAGED_BY,
            "logical": self.logical,
            "config": self.config,
        }
        if self.application:
            body["application"] = self.application
        if self.retired_at is not None:
            body["retired-at"] = _format_time(self.retired_at)
        if self.enabled_at is not None:
            body["enabled-at"] = _format_time(self.enabled_at)
        if self.delete_failures:
            body["delete-failures"] = self.delete_failures
        if self.delete_retry_at is not None:
            body["delete-retry-at"] = _format_time(self.delete_retry_at)
        if self.attempt:
            body["attempt"] = self.attempt
        if self.generation:
            body["generation"] = self.generation
        if self.refresh_from is not None:
            body["refresh-from"] = _format_time(self.refresh_from)
        if self.queued_at is not None:
            body["queued-at"] = _format_time(self.queued_at)
        return json.dumps(body, sort_keys=True, separators=(",", ":"))


def parse_marker(extended_state: str) -> Marker | None:
    """Return the charm's marker in `extended_state`, or None if this charm did not write it."""
    if not extended_state.strip().startswith("{"):
        return None
    try:
        body = json.loads(extended_state)
    except ValueError:
        return None
    # Text that starts with "{" and parses is a JSON object: no other shape reaches here.
    fields = cast("Mapping[str, Any]", body)
    logical = fields.get("logical")
    if fields.get("managed-by") != MANAGED_BY or not isinstance(logical, str) or not logical:
        return None
    config = fields.get("config")
    application = fields.get("application")
    generation = fields.get("generation")
    return Marker(
        logical=logical,
        config=config if isinstance(config, str) else "",
        application=application if isinstance(application, str) else "",
        retired_at=_parse_time(fields.get("retired-at")),
        enabled_at=_parse_time(fields.get("enabled-at")),
        delete_failures=_count(fields.get("delete-failures")),
        delete_retry_at=_parse_time(fields.get("delete-retry-at")),
        attempt=_count(fields.get("attempt")),
        refresh_from=_parse_time(fields.get("refresh-from")),
        generation=generation if isinstance(generation, str) else "",
        queued_at=_parse_time(fields.get("queued-at")),
    )


def serves(scaleset: ScaleSet, marker: Marker | None) -> bool:
    """Whether the scale set serves: enabled and not retired by the charm (`marker`)."""
    return scaleset.enabled and (marker is None or not marker.retired)


def config_hash(spec: ScalesetSpec) -> str:
    """Return 16 hex characters of sha256 over the fields GARM's list responses omit.

    A pass asks for each spec's hash several times; specs are frozen, so it is taken once per
    spec object (the cache holds the spec itself, so its id is never reused while cached).
    """
    cached = _HASHES.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    hidden = {"extra_specs": dict(spec.extra_specs), "template": spec.template_name}
    text = json.dumps(hidden, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    if len(_HASHES) >= _HASHES_KEPT:
        _HASHES.clear()
    _HASHES[id(spec)] = (spec, digest)
    return digest


# Well above a fleet's specs: a hook builds them once, so the cache never grows past them.
_HASHES_KEPT = 20_000
_HASHES: dict[int, tuple[ScalesetSpec, str]] = {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _format_time(moment: datetime.datetime) -> str:
    utc = moment.astimezone(datetime.UTC)
    return utc.isoformat().replace("+00:00", "Z")


def _parse_time(value: object) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
