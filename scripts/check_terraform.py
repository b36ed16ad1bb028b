"""Validate the charms' Terraform modules without Terraform (run by `tox -e lint`).

`terraform validate` needs the juju provider from the Terraform registry, which this project's
machines cannot reach; the GitHub workflow runs it. Here every `.tf` file is parsed with
python-hcl2 (a syntax error fails) and the module is checked for what `validate` would catch
and more: the juju provider is required, every `var.` used is declared and every declared
variable is used, outputs name the module's application, the charm is the directory's charm, the
endpoint outputs match the endpoints in charmcraft.yaml, the provider's version has an upper bound
and `constraints` defaults to null (an empty string can fail on apply).
"""

import pathlib
import re
import sys
from typing import Any

import hcl2
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
VAR_USE = re.compile(r"\bvar\.([A-Za-z_][A-Za-z0-9_]*)")


def main() -> int:
    """Print every problem; fail when there is one."""
    problems: list[str] = []
    for module in sorted(ROOT.glob("charms/*/terraform")):
        problems += module_problems(module)
    for problem in problems:
        print(problem)
    print(f"check_terraform: {len(problems)} problem(s)")
    return 1 if problems else 0


def module_problems(module: pathlib.Path) -> list[str]:
    """What is wrong with one charm's module."""
    name = module.relative_to(ROOT).as_posix()
    parsed: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for path in sorted(module.glob("*.tf")):
        try:
            with path.open(encoding="utf-8") as file:
                parsed[path.name] = hcl2.load(file)
        except Exception as error:  # any parse failure is a problem to report
            problems.append(f"{name}/{path.name}: does not parse: {error}")
    if problems:
        return problems
    blocks = {kind: merged(parsed, kind) for kind in ("variable", "resource", "output")}
    declared = {unquote(key) for key in blocks["variable"]}
    text = "\n".join(path.read_text() for path in module.glob("*.tf"))
    used = set(VAR_USE.findall(text))
    problems += [f"{name}: var.{var} is used but not declared" for var in sorted(used - declared)]
    problems += [f"{name}: variable {var!r} is never used" for var in sorted(declared - used)]
    problems += provider_problems(name, parsed)
    problems += constraints_problems(name, blocks["variable"])
    problems += application_problems(name, module.parent, blocks)
    return problems


def provider_problems(name: str, parsed: dict[str, dict[str, Any]]) -> list[str]:
    """The module must require the juju provider."""
    for terraform in merged_list(parsed, "terraform"):
        for providers in terraform.get("required_providers", []):
            juju = providers.get("juju", {})
            if unquote(str(juju.get("source", ""))) == "juju/juju":
                return version_problems(name, unquote(str(juju.get("version", ""))))
    return [f"{name}: versions.tf must require the provider juju/juju"]


def version_problems(name: str, version: str) -> list[str]:
    """The juju provider's version needs an upper bound: a new major may change its schema."""
    if "<" in version:
        return []
    return [f"{name}: the juju provider's version {version!r} needs an upper bound (< 2.0.0)"]


def constraints_problems(name: str, variables: dict[str, Any]) -> list[str]:
    """`constraints` defaults to null: the provider can fail applying an empty string."""
    default = variables.get('"constraints"', {}).get("default")
    if default is not None and unquote(str(default)).strip() == "":
        return [f"{name}: variable constraints must default to null, not an empty string"]
    return []


def application_problems(
    name: str, charm_dir: pathlib.Path, blocks: dict[str, dict[str, Any]]
) -> list[str]:
    """One juju_application of this charm, named by the outputs, with its real endpoints."""
    applications = blocks["resource"].get('"juju_application"', {})
    if len(applications) != 1:
        return [f"{name}: main.tf must declare exactly one juju_application"]
    ((resource, body),) = applications.items()
    problems: list[str] = []
    charm_name = unquote(str(body.get("charm", [{}])[0].get("name", "")))
    if charm_name != charm_dir.name:
        problems.append(f"{name}: deploys charm {charm_name!r}, not {charm_dir.name!r}")
    project = yaml.safe_load((charm_dir / "charmcraft.yaml").read_text())
    for output, body_out in blocks["output"].items():
        value = body_out.get("value")
        if isinstance(value, str) and "juju_application." in value:
            if f"juju_application.{unquote(resource)}." not in value:
                problems.append(f"{name}: output {output} names another application")
        elif isinstance(value, dict):
            section = unquote(output)
            endpoints = {unquote(str(v)) for v in value.values()}
            real = set(project.get(section) or {})
            problems += [
                f"{name}: output {section} names {endpoint!r}, not an endpoint it {section}"
                for endpoint in sorted(endpoints - real)
            ]
    return problems


def merged(parsed: dict[str, dict[str, Any]], kind: str) -> dict[str, Any]:
    """Every block of a kind across the module's files, by label."""
    result: dict[str, Any] = {}
    for block in merged_list(parsed, kind):
        for label, body in block.items():
            if kind == "resource":
                result.setdefault(label, {}).update(body)
            else:
                result[label] = body
    return result


def merged_list(parsed: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The blocks of a kind, in file order."""
    return [block for tree in parsed.values() for block in tree.get(kind, [])]


def unquote(value: str) -> str:
    """A label or string without the quotes python-hcl2 keeps."""
    return value.strip('"')


if __name__ == "__main__":
    sys.exit(main())
