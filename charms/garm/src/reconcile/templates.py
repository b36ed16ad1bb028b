"""Keep each scale set's runner template in GARM, and delete those no scale set uses any more.

Two steps around the scale-set pass (ADR 0008):

- `sync_templates`, before it: every template a spec names exists with exactly the bytes
  `runner_template.render_template` gives for the current `github_linux`; an existing one is
  updated in place, and only when its bytes differ. A scale set refers to its template by id,
  so a content change never touches the scale set.
- `remove_unused_templates`, after it: a template the charm made that no spec names is deleted
  once no scale set in GARM refers to it, so a retired generation that is still draining keeps
  its template. GARM refuses (400) to delete a template in use; the next pass tries again.

Only templates `runner_template.is_charm_template` recognises are ever changed or deleted; one
an operator made under the same name is reported, never overwritten.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Protocol

from garm_api import GarmApiError
from garm_api.models import ScaleSet, Template
from reconcile.runner_template import (
    SYSTEM_TEMPLATE,
    TEMPLATE_DESCRIPTION,
    RunnerConfig,
    TemplateError,
    is_charm_template,
    render_template,
)

logger = logging.getLogger(__name__)


class TemplateApi(Protocol):
    """The `GarmClient` calls the template reconciler makes."""

    def list_templates(self, os_type: str | None = None) -> list[Template]:
        """Return templates (without bodies)."""
        ...

    def get_template(self, template_id: int) -> Template:
        """Return one template with its body."""
        ...

    def create_template(
        self, name: str, *, data: bytes, os_type: str = "linux", description: str = ""
    ) -> Template:
        """Create a template."""
        ...

    def update_template(
        self, template_id: int, *, data: bytes, description: str | None = None
    ) -> Template:
        """Replace a template's body."""
        ...

    def delete_template(self, template_id: int) -> None:
        """Delete a template."""
        ...

    def list_scalesets(self) -> list[ScaleSet]:
        """Return every scale set."""
        ...


@dataclasses.dataclass(frozen=True)
class TemplateReport:
    """What a template step did and what it could not do.

    Attributes:
        problems: template name -> why it is not as wanted; the operator must act.
        written: templates created or updated.
        deleted: templates deleted.
        in_use: unwanted templates kept because a scale set still refers to them.
    """

    problems: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    in_use: tuple[str, ...] = ()


def sync_templates(api: TemplateApi, wanted: Mapping[str, RunnerConfig]) -> TemplateReport:
    """Create or update the template of every name in `wanted`, from the current base.

    Args:
        api: the GARM client.
        wanted: template name -> the runner options it carries.

    Returns:
        The templates written and the problems, by template name.
    """
    if not wanted:
        return TemplateReport()
    templates = {template.name: template for template in api.list_templates(os_type="linux")}
    base = _system_base(api, templates)
    if base is None:
        problem = f"GARM has no system template {SYSTEM_TEMPLATE}: garm-cli template restore"
        return TemplateReport(problems=dict.fromkeys(wanted, problem))
    problems: dict[str, str] = {}
    written: list[str] = []
    for name, config in sorted(wanted.items()):
        try:
            if _sync_one(api, templates.get(name), name, render_template(base, config).encode()):
                written.append(name)
        except (TemplateError, GarmApiError) as error:
            problems[name] = str(error)
    return TemplateReport(problems=problems, written=tuple(written))


def _system_base(api: TemplateApi, templates: Mapping[str, Template]) -> str | None:
    listed = templates.get(SYSTEM_TEMPLATE)
    if listed is None or listed.owner_id != "system":
        return None
    return (api.get_template(listed.id).data or b"").decode()


def _sync_one(api: TemplateApi, existing: Template | None, name: str, data: bytes) -> bool:
    """Make template `name` hold `data`; return whether anything was written."""
    if existing is None:
        api.create_template(name, data=data, os_type="linux", description=TEMPLATE_DESCRIPTION)
        logger.info("created runner template %s", name)
        return True
    if not is_charm_template(existing.name, existing.description, existing.owner_id):
        raise TemplateError("exists but was not made by the charm: rename or delete it")
    if api.get_template(existing.id).data == data:
        return False
    api.update_template(existing.id, data=data)
    logger.info("updated runner template %s in place", name)
    return True


def remove_unused_templates(api: TemplateApi, wanted: frozenset[str]) -> TemplateReport:
    """Delete the charm's templates that no spec wants and no scale set refers to.

    Call it only after a complete scale-set pass, when the absence of a spec means removal.

    Args:
        api: the GARM client.
        wanted: the template names the specs name.

    Returns:
        The templates deleted, those kept because a scale set uses them, and the problems.
    """
    unwanted = [
        template
        for template in api.list_templates()
        if is_charm_template(template.name, template.description, template.owner_id)
        and template.name not in wanted
    ]
    if not unwanted:
        return TemplateReport()
    used = {scaleset.template_id for scaleset in api.list_scalesets()}
    deleted: list[str] = []
    in_use: list[str] = []
    problems: dict[str, str] = {}
    for template in sorted(unwanted, key=lambda template: template.name):
        if template.id in used:
            in_use.append(template.name)
            continue
        try:
            api.delete_template(template.id)
        except GarmApiError as error:
            if error.status != 400:
                problems[template.name] = str(error)
            in_use.append(template.name)  # 400: a scale set took it since the list
            continue
        logger.info("deleted runner template %s: no scale set uses it", template.name)
        deleted.append(template.name)
    return TemplateReport(problems=problems, deleted=tuple(deleted), in_use=tuple(in_use))
