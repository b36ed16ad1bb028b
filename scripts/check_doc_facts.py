"""Facts the docs state that the code decides, checked against it (run by `check_docs.py`).

Each check reads the code (by its syntax tree: the lint environment has no ops) or the
charms' `charmcraft.yaml`, so a change in either is seen without a list to update:

- the upper limit each duration option's parser enforces (`charm_config._OPTIONS`) is in that
  option's description, as `at most <N>h`, so `juju config garm` help states it;
- every phase text a changeover status can show (`scaleset_reconciler/report.py`) is named in
  the garm reference's status table and in the changeover how-to's table;
- a sample `juju status` shows on a leader unit (`*`) and its application no text the charm
  sets only off the leader, and on another unit none it sets only on the leader;
- a shell block's `<placeholder>` is quoted: unquoted, a shell reads `<` as a redirection;
- a `juju config garm external-url=https://...` in a page's shell blocks comes after the page
  relates `garm:certificates` (GARM serves plain HTTP without it), unless its comment names a
  proxy in front of GARM;
- a `juju refresh --channel` of a charm the docs deploy from a local `.charm` comes with the
  `--path` form in the same block;
- a page that tells the operator to run `garm-cli` links to the how-to that installs it.
"""

from __future__ import annotations

import ast
import pathlib
import re
import shlex
from collections.abc import Iterator

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
GARM_SRC = ROOT / "charms" / "garm" / "src"
CHARM_CONFIG = GARM_SRC / "charm_config.py"
REPORT = GARM_SRC / "scaleset_reconciler" / "report.py"
GARM_CHARMCRAFT = ROOT / "charms" / "garm" / "charmcraft.yaml"
CHARMS = {
    "garm": ROOT / "charms" / "garm",
    "garm-configurator": ROOT / "charms" / "garm-configurator",
}
PHASE_FUNCTIONS = ("_phase_text", "_creating_text", "_refreshing_text")
PHASE_PAGES = ("docs/reference/garm-charm.md", "docs/how-to/follow-a-changeover.md")
GARM_CLI_HOW_TO = "use-garm-cli.md"
# Pages about the project's own history or tests, not instructions to an operator.
NOT_INSTRUCTIONS = ("docs/adr/", "docs/changelog.md", "docs/reference/testing.md")
# Shell blocks, and blocks without a language that start with a juju command.
SHELL_BLOCK = re.compile(r"^```(?:(?:shell|bash|sh)\n|\n(?=juju ))(.*?)^```", re.M | re.S)
STATUS_BLOCK = re.compile(r"^```text\n(App .*?)^```", re.M | re.S)
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")
QUOTED = re.compile(r"'[^'\n]*'|\"(?:\\.|[^\"\\\n])*\"")
MIN_PIECE = 8


def check_doc_facts() -> Iterator[str]:
    """Every problem, as `path[:line]: problem`."""
    yield from check_option_limits()
    yield from check_changeover_phases()
    yield from check_sample_statuses()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "charms").glob("*/README.md"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        yield from check_placeholders(page, text)
        yield from check_https_without_tls(page, text)
        yield from check_refresh(page, text)
        yield from check_garm_cli(page, text)


# The limits `juju config` help must state ---------------------------------------------------


def check_option_limits() -> Iterator[str]:
    """Each duration option's description names the longest value its parser accepts."""
    options = yaml.safe_load(GARM_CHARMCRAFT.read_text())["config"]["options"]
    for option, hours in duration_limits(CHARM_CONFIG).items():
        description = " ".join(str(options.get(option, {}).get("description", "")).split())
        if f"at most {hours}h" not in description:
            yield (
                f"{rel(GARM_CHARMCRAFT)}: option {option!r} is refused above {hours}h "
                f"(charm_config.py), which its description does not say (`at most {hours}h`)"
            )


def duration_limits(source: pathlib.Path) -> dict[str, int]:
    """Option -> the hours of the `parse_duration` maximum its check passes."""
    tree = ast.parse(source.read_text())
    constants = _constant_hours(tree)
    checks = _check_maxima(tree)
    limits: dict[str, int] = {}
    for key, entry in _options_entries(tree):
        check = entry.elts[1] if len(entry.elts) > 1 else None
        constant = checks.get(check.id, "") if isinstance(check, ast.Name) else ""
        hours = constants.get(constant)
        if hours is not None:
            limits[key] = hours
    return limits


def _constant_hours(tree: ast.Module) -> dict[str, int | None]:
    """Module constants that are a `timedelta`, in hours."""
    found: dict[str, int | None] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found[node.target.id] = _timedelta_hours(node.value)
    return found


def _check_maxima(tree: ast.Module) -> dict[str, str]:
    """Function -> the constant it passes `parse_duration` as the maximum."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "parse_duration"
                and len(call.args) >= 2
                and isinstance(call.args[1], ast.Name)
            ):
                found[node.name] = call.args[1].id
    return found


def _options_entries(tree: ast.Module) -> Iterator[tuple[str, ast.Tuple]]:
    """`_OPTIONS`' entries: option name and its (field, check) tuple."""
    for node in tree.body:
        if not (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "_OPTIONS"
            and isinstance(node.value, ast.Dict)
        ):
            continue
        for key, entry in zip(node.value.keys, node.value.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(entry, ast.Tuple):
                yield str(key.value), entry


def _timedelta_hours(value: ast.expr) -> int | None:
    """`datetime.timedelta(days=7)` -> 168; anything else -> None."""
    if not (isinstance(value, ast.Call) and getattr(value.func, "attr", "") == "timedelta"):
        return None
    seconds = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
    total = 0
    for keyword in value.keywords:
        amount = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
        if keyword.arg not in seconds or not isinstance(amount, int):
            return None
        total += amount * seconds[keyword.arg]
    return total // 3600 if total >= 3600 else None


# Changeover phases ---------------------------------------------------------------------------


def check_changeover_phases() -> Iterator[str]:
    """Each phase text the status can show is named on the reference and the how-to."""
    for page in PHASE_PAGES:
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        for phase in phase_texts(REPORT):
            if phase not in text:
                yield f"{page}: does not name the changeover phase `{phase}...` (report.py)"


def phase_texts(source: pathlib.Path) -> list[str]:
    """The literal start of each text the phase functions return (at least 8 characters)."""
    tree = ast.parse(source.read_text())
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in PHASE_FUNCTIONS:
            for returned in ast.walk(node):
                if isinstance(returned, ast.Return) and returned.value is not None:
                    value = returned.value
                    choices = (
                        [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                    )
                    for start in map(_literal_start, choices):
                        if len(start) >= MIN_PIECE and start not in found:
                            found.append(start)
    return found


def _literal_start(value: ast.expr) -> str:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.JoinedStr) and value.values:
        first = value.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return ""


# Sample `juju status` ------------------------------------------------------------------------


def check_sample_statuses() -> Iterator[str]:
    """Leader units and applications show no follower-only text, other units no leader-only."""
    texts = {
        charm: leader_texts(directory / "src" / "charm.py") for charm, directory in CHARMS.items()
    }
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for block in STATUS_BLOCK.finditer(text):
            yield from _status_block_problems(page, text, block, texts)


def _status_block_problems(
    page: pathlib.Path,
    text: str,
    block: re.Match[str],
    texts: dict[str, tuple[list[str], list[str]]],
) -> Iterator[str]:
    lines = block.group(1).splitlines()
    charms: dict[str, str] = {}
    for line in lines:
        words = line.split()
        if not words or words[0] in {"App", "Unit", "Machine"}:
            continue
        charm = next((word for word in words if word in texts), None)
        name, _, _ = words[0].partition("/")
        leader = "/" not in words[0] or words[0].endswith("*")
        if "/" not in words[0] and charm is not None:
            charms[name] = charm
        charm = charms.get(name.rstrip("*"))
        if charm is None:
            continue
        leader_only, follower_only = texts[charm]
        wrong = follower_only if leader else leader_only
        for pattern in wrong:
            found = re.search(pattern, line)
            if found:
                piece = found.group(0)
                who = "the leader or its application" if leader else "a unit that does not lead"
                line_number = text.count("\n", 0, block.start()) + 2 + lines.index(line)
                yield (
                    f"{rel(page)}:{line_number}: {words[0]} shows `{piece}`, which {charm} "
                    f"never sets on {who}"
                )


def leader_texts(source: pathlib.Path) -> tuple[list[str], list[str]]:
    """Status texts set only on the leader, and only off it (branches on `is_leader()`)."""
    tree = ast.parse(source.read_text())
    leader: list[str] = []
    follower: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if isinstance(test, ast.UnaryOp) else test
        if not (isinstance(inner, ast.Call) and getattr(inner.func, "attr", "") == "is_leader"):
            continue
        body, orelse = _status_starts(node.body), _status_starts(node.orelse)
        leader += orelse if negated else body
        follower += body if negated else orelse
    return leader, follower


def _status_starts(statements: list[ast.stmt]) -> list[str]:
    """The status texts set in `statements`, as patterns (a formatted part matches anything)."""
    patterns: list[str] = []
    for statement in statements:
        for call in ast.walk(statement):
            if (
                isinstance(call, ast.Call)
                and getattr(call.func, "attr", "").endswith("Status")
                and call.args
            ):
                pattern = _pattern(call.args[0])
                if len(pattern.replace(".+?", "")) >= MIN_PIECE:
                    patterns.append(pattern)
    return patterns


def _pattern(value: ast.expr) -> str:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return re.escape(value.value)
    if isinstance(value, ast.JoinedStr):
        return "".join(
            re.escape(part.value)
            if isinstance(part, ast.Constant) and isinstance(part.value, str)
            else ".+?"
            for part in value.values
        )
    return ""


# Shell blocks --------------------------------------------------------------------------------


def shell_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each command line of the page's shell blocks (continuations joined), with its line."""
    for block in SHELL_BLOCK.finditer(text):
        first = text.count("\n", 0, block.start()) + 2
        pending, start = "", first
        for offset, line in enumerate(block.group(1).splitlines()):
            if not pending:
                start = first + offset
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield start, pending + line
            pending = ""


def check_placeholders(page: pathlib.Path, text: str) -> Iterator[str]:
    """A `<placeholder>` outside quotes is a redirection when the line is pasted."""
    for line_number, line in shell_lines(text):
        bare = QUOTED.sub("''", _without_comment(line))
        for match in PLACEHOLDER.finditer(bare):
            yield (
                f"{rel(page)}:{line_number}: `{match.group(0)}` is unquoted: pasted, the shell "
                "reads `<` as a redirection; quote it or use a variable"
            )


def _without_comment(line: str) -> str:
    """The line without a `# comment` (a `#` starting a word, outside quotes)."""
    quoted = QUOTED.sub(lambda match: "x" * len(match.group(0)), line)
    found = re.search(r"(?:^|\s)#", quoted)
    return line[: found.start()] if found else line


def check_https_without_tls(page: pathlib.Path, text: str) -> Iterator[str]:
    """An https:// external URL follows the certificates relation on the same page."""
    related = False
    for line_number, line in shell_lines(text):
        words = _words(line)
        if "integrate" in words and any(w.startswith("garm:certificates") for w in words):
            related = True
        https = any(w.startswith("external-url=https://") for w in words)
        if "config" in words and https and not related and "proxy" not in line.lower():
            yield (
                f"{rel(page)}:{line_number}: sets an https:// external-url before relating "
                "garm:certificates: GARM serves plain HTTP until then (relate first, or say "
                "which TLS proxy is in front)"
            )


def check_refresh(page: pathlib.Path, text: str) -> Iterator[str]:
    """`juju refresh --channel` only beside `--path`: the docs deploy local .charm files."""
    for block in SHELL_BLOCK.finditer(text):
        lines = list(shell_lines(block.group(0)))
        refreshes = [(n, _words(line)) for n, line in lines if "refresh" in _words(line)]
        with_path = {_app(words) for _, words in refreshes if "--path" in words}
        first = text.count("\n", 0, block.start())
        for line_number, words in refreshes:
            if "--channel" in words and _app(words) not in with_path:
                yield (
                    f"{rel(page)}:{first + line_number}: juju refresh {_app(words)} "
                    "--channel: the docs deploy it from a local .charm, so show "
                    "`juju refresh <app> --path ./<charm>.charm` (the channel is for a "
                    "deployment from Charmhub)"
                )


def _app(words: list[str]) -> str:
    after = words[words.index("refresh") + 1 :] if "refresh" in words else []
    return next((word for word in after if not word.startswith("-")), "")


def _words(line: str) -> list[str]:
    try:
        return shlex.split(_without_comment(line))
    except ValueError:
        return _without_comment(line).split()


def check_garm_cli(page: pathlib.Path, text: str) -> Iterator[str]:
    """A page telling the operator to run garm-cli links to the how-to that installs it."""
    name = rel(page)
    if name.startswith(NOT_INSTRUCTIONS) or page.name == GARM_CLI_HOW_TO:
        return
    if "garm-cli" in text and GARM_CLI_HOW_TO not in text:
        line_number = text[: text.index("garm-cli")].count("\n") + 1
        yield (
            f"{name}:{line_number}: names garm-cli, which the charm does not install, "
            f"without a link to docs/how-to/{GARM_CLI_HOW_TO}"
        )


def rel(path: pathlib.Path) -> str:
    """The path relative to the repository."""
    return path.relative_to(ROOT).as_posix()
