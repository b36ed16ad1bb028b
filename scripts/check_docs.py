"""Guard the documentation: links, citations, published URLs and the charm references.

Fails (exit 1, one line per problem) on:
- a relative link in a Markdown file whose target does not exist, or that leaves the repository;
- a code span naming a repository path (`docs/...`, `charms/...`, ...) that does not exist;
- a citation of a document outside the repository (`../shared`, `REFERENCE §`, `DESIGN §`, a
  developer's `/tmp/` path in Markdown) in Markdown or Python;
- a published docs URL (`DOCS_URL` below) whose page does not exist under `docs/`;
- a status text quoted in the docs (Blocked `...`, Waiting `...`) that the charm's code does not
  have (`scripts/check_status_texts.py`);
- a config option, action, resource or relation endpoint of a `charmcraft.yaml` that the
  charm's reference page does not name as `` `name` ``;
- a `juju deploy/config/run/integrate/attach-resource` command in a shell block of the
  README or docs that names an option, action, resource or endpoint the charm does not have, or
  a first `juju config` of a garm-configurator (the one setting `name=`) that leaves out a
  required option;
- what `scripts/check_doc_facts.py` checks against the code: option limits in the config help,
  changeover phases, sample statuses, quoted placeholders, https before TLS, `juju refresh`,
  garm-cli.

Run from anywhere: `python scripts/check_docs.py`.
"""

from __future__ import annotations

import pathlib
import re
import shlex
import sys
from collections.abc import Callable, Iterator

import yaml
from check_doc_facts import check_doc_facts
from check_status_texts import check_status_texts

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS_URL = "https://github.com/canonical/garm-operator/blob/main/docs/"
SKIP_DIRS = {".git", ".tox", ".venv", "venv", "node_modules", "garm_client", "build", ".terraform"}
REFERENCES = {
    "charms/garm/charmcraft.yaml": "docs/reference/garm-charm.md",
    "charms/garm-configurator/charmcraft.yaml": "docs/reference/garm-configurator.md",
}
# Files other engineers own and are changing now; each still cites a document outside the
# repository. Whoever edits one of them states the fact instead and removes its entry here.
CITATIONS_PENDING: tuple[str, ...] = ()

INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"^(?:docs|charms|tests|scripts|\.github|\.ci)/[\w./-]*[\w/]$")
FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.M | re.S)
CITATION = re.compile(r"\.\./shared|\bREFERENCE(?:\.md|\s*§|\s+C\d+)|\bDESIGN(?:\.md|\s*§)")
TMP_PATH = re.compile(r"(?<![\w.])/tmp/\w")
PUBLISHED = re.compile(re.escape(DOCS_URL) + r"([\w./-]*[\w/])")


def main() -> int:
    """Run every check and print each problem as `path:line: problem`."""
    problems = [
        *check_markdown_links(),
        *check_citations(),
        *check_published_urls(),
        *check_references(),
        *check_commands(),
        *check_status_texts(),
        *check_doc_facts(),
    ]
    for problem in problems:
        print(problem)
    print(f"check_docs: {len(problems)} problem(s)")
    return 1 if problems else 0


def check_markdown_links() -> Iterator[str]:
    """Relative links and path code spans in Markdown must point at files in the repository."""
    for path in repo_files(".md"):
        text = path.read_text(encoding="utf-8")
        for match in [*INLINE_LINK.finditer(text), *REFERENCE_LINK.finditer(text)]:
            problem = link_problem(path, match.group(1))
            if problem:
                yield f"{where(path, text, match.start())}: {problem}"
        prose = FENCE.sub(lambda fence: "\n" * fence.group(0).count("\n"), text)
        for match in CODE_SPAN.finditer(prose):
            span = match.group(1).strip()
            if REPO_PATH.match(span) and not (ROOT / span).exists():
                yield f"{where(path, prose, match.start())}: `{span}` does not exist"


def link_problem(source: pathlib.Path, target: str) -> str | None:
    """Why a link target is wrong, or None for a good link or an absolute URL."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
        return None
    relative = target.split("#", 1)[0].split("?", 1)[0]
    if not relative:
        return None
    base = ROOT if relative.startswith("/") else source.parent
    resolved = (base / relative.lstrip("/")).resolve()
    if not resolved.is_relative_to(ROOT):
        return f"link {target!r} leaves the repository"
    if not resolved.exists():
        return f"broken link {target!r}"
    return None


def check_citations() -> Iterator[str]:
    """No Markdown or Python file may cite a document outside the repository."""
    for path in [*repo_files(".md"), *repo_files(".py")]:
        name = path.relative_to(ROOT).as_posix()
        if name.startswith(CITATIONS_PENDING) or name == "scripts/check_docs.py":
            continue
        text = path.read_text(encoding="utf-8")
        for match in CITATION.finditer(text):
            yield (
                f"{where(path, text, match.start())}: cites {match.group(0)!r}, a document "
                "outside the repository: state the fact (facts about GARM go in docs/reference/)"
            )
        if path.suffix == ".md":
            for match in TMP_PATH.finditer(text):
                yield f"{where(path, text, match.start())}: names a path under /tmp/"


def check_published_urls() -> Iterator[str]:
    """Every published docs URL in the repository must name a page that exists in docs/."""
    for path in [*repo_files(".md"), *repo_files(".py"), *repo_files(".yaml")]:
        if path.name == "check_docs.py":
            continue
        text = path.read_text(encoding="utf-8")
        for match in PUBLISHED.finditer(text):
            page = match.group(1).split("#", 1)[0]
            if not (ROOT / "docs" / page).exists():
                yield f"{where(path, text, match.start())}: docs/{page} does not exist"


def check_references() -> Iterator[str]:
    """Every option, action, resource and endpoint must be named in the charm's reference."""
    for charmcraft, reference in REFERENCES.items():
        project = yaml.safe_load((ROOT / charmcraft).read_text(encoding="utf-8"))
        documented = set(CODE_SPAN.findall((ROOT / reference).read_text(encoding="utf-8")))
        for kind, names in declared_names(project).items():
            for name in names:
                if name not in documented:
                    yield f"{reference}: {kind} `{name}` of {charmcraft} is not documented"


def declared_names(project: dict[str, object]) -> dict[str, list[str]]:
    """The names a reference page must document, by kind."""

    def keys(section: object) -> list[str]:
        return sorted(section) if isinstance(section, dict) else []

    config = project.get("config")
    options = config.get("options") if isinstance(config, dict) else None
    return {
        "config option": keys(options),
        "action": keys(project.get("actions")),
        "resource": keys(project.get("resources")),
        "relation endpoint": [
            *keys(project.get("requires")),
            *keys(project.get("provides")),
            *keys(project.get("peers")),
        ],
    }


SHELL_BLOCK = re.compile(r"^```(?:shell|bash|sh)\n(.*?)^```", re.M | re.S)
JUJU_COMMAND = re.compile(r"\bjuju\s+(deploy|config|run|integrate|attach-resource)\s+([^;&|)\n]*)")
# Application names the docs use without deploying them on the same page.
KNOWN_APPS = {
    "garm": "garm",
    "small": "garm-configurator",
    "garm-configurator": "garm-configurator",
}
DEPLOY_OPTIONS_WITH_VALUE = {"--resource", "--config", "--channel", "-n", "--to", "--base"}


def check_commands() -> Iterator[str]:
    """Juju commands in the user docs must use what the charms declare."""
    declared = Declared(
        {
            pathlib.Path(charmcraft).parent.name: yaml.safe_load((ROOT / charmcraft).read_text())
            for charmcraft in REFERENCES
        }
    )
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "charms").glob("*/README.md"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        apps = dict(KNOWN_APPS)
        for block in SHELL_BLOCK.finditer(text):
            commands = block.group(1).replace("\\\n", " ")
            for match in JUJU_COMMAND.finditer(commands):
                verb, args = match.group(1), split_args(match.group(2))
                check = COMMAND_CHECKS[verb]
                for problem in check(args, apps, declared):
                    yield f"{where(page, text, block.start())}: juju {verb}: {problem}"


class Declared:
    """What each charm's charmcraft.yaml declares, by section."""

    def __init__(self, projects: dict[str, dict[str, object]]):
        self.projects = projects

    def names(self, charm: str, section: str) -> set[str]:
        """Names in a top-level section, or `options` for config options."""
        project = self.projects[charm]
        found = project.get(section)
        if section == "options":
            config = project.get("config")
            found = config.get("options") if isinstance(config, dict) else None
        return set(found) if isinstance(found, dict) else set()

    def required_options(self, charm: str) -> list[str]:
        """Options whose description starts with "Required."."""
        config = self.projects[charm].get("config")
        options = config.get("options") if isinstance(config, dict) else None
        return [
            option
            for option, spec in (options or {}).items()
            if isinstance(spec, dict) and str(spec.get("description", "")).startswith("Required.")
        ]


def split_args(text: str) -> list[str]:
    """Shell words of a command line, without a trailing comment."""
    text = re.sub(r"\s#\s.*$", "", text)
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def deploy_problems(args: list[str], apps: dict[str, str], declared: Declared) -> Iterator[str]:
    """Record the deployed application and check its resources."""
    positional: list[str] = []
    resources: list[str] = []
    words = iter(args)
    for word in words:
        if word in DEPLOY_OPTIONS_WITH_VALUE:
            value = next(words, "")
            if word == "--resource":
                resources.append(value.split("=", 1)[0])
        elif not word.startswith("-"):
            positional.append(word)
    if not positional:
        return
    source = pathlib.Path(positional[0]).name
    charm = next((name for name in ("garm-configurator", "garm") if name in source), None)
    if charm is None:
        return
    apps[positional[1] if len(positional) > 1 else charm] = charm
    for resource in resources:
        if resource not in declared.names(charm, "resources"):
            yield f"{charm} has no resource {resource!r}"


def config_problems(args: list[str], apps: dict[str, str], declared: Declared) -> Iterator[str]:
    """Options must exist; a configurator's first config (it sets `name`) sets every required."""
    if not args or args[0] not in apps:
        return
    charm = apps[args[0]]
    keys = [arg.split("=", 1)[0] for arg in args[1:] if "=" in arg]
    for key in keys:
        if key not in declared.names(charm, "options"):
            yield f"{charm} has no option {key!r}"
    if charm != "garm-configurator" or "name" not in keys:
        return
    for option in declared.required_options(charm):
        if option not in keys:
            yield f"leaves out the required option {option!r}"
    if "org" not in keys and "repo" not in keys:
        yield "sets neither 'org' nor 'repo'"


def run_problems(args: list[str], apps: dict[str, str], declared: Declared) -> Iterator[str]:
    """The action must exist."""
    app = args[0].split("/")[0] if args else ""
    if len(args) >= 2 and app in apps and args[1] not in declared.names(apps[app], "actions"):
        yield f"{apps[app]} has no action {args[1]!r}"


def integrate_problems(args: list[str], apps: dict[str, str], declared: Declared) -> Iterator[str]:
    """Named endpoints must exist."""
    for arg in args[:2]:
        app, _, endpoint = arg.partition(":")
        if endpoint and app in apps:
            charm = apps[app]
            endpoints = declared.names(charm, "requires") | declared.names(charm, "provides")
            if endpoint not in endpoints:
                yield f"{charm} has no endpoint {endpoint!r}"


def attach_problems(args: list[str], apps: dict[str, str], declared: Declared) -> Iterator[str]:
    """The resource must exist."""
    if len(args) >= 2 and args[0] in apps:
        resource = args[1].split("=", 1)[0]
        if resource not in declared.names(apps[args[0]], "resources"):
            yield f"{apps[args[0]]} has no resource {resource!r}"


COMMAND_CHECKS: dict[str, Callable[[list[str], dict[str, str], Declared], Iterator[str]]] = {
    "deploy": deploy_problems,
    "config": config_problems,
    "run": run_problems,
    "integrate": integrate_problems,
    "attach-resource": attach_problems,
}


def repo_files(suffix: str) -> Iterator[pathlib.Path]:
    """The repository's files with this suffix, outside tool and generated directories."""
    for path in sorted(ROOT.rglob(f"*{suffix}")):
        parts = path.relative_to(ROOT).parts
        if path.is_file() and not SKIP_DIRS.intersection(parts):
            yield path


def where(path: pathlib.Path, text: str, offset: int) -> str:
    """`path:line` of an offset into a file's text."""
    line = text.count("\n", 0, offset) + 1
    return f"{path.relative_to(ROOT).as_posix()}:{line}"


if __name__ == "__main__":
    sys.exit(main())
