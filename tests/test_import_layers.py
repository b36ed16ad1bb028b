"""The garm charm's layers (charms/garm/.importlinter, `tox -e lint`) bite, and cover every module.

import-linter is run on a copy of the charm's src/, so a leak can be planted without touching
the tree. It analyses packages only, so the charm's top-level modules (charm.py and its
siblings) are checked here: that the contracts name each of them, and what they import.
"""

import ast
import configparser
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

GARM = pathlib.Path(__file__).resolve().parents[1] / "charms" / "garm"
CONTRACTS = GARM / ".importlinter"
SRC = GARM / "src"
# The top-level modules may import ops and the packages, but reach GARM only through garm_api
# and fetch nothing themselves (the contracts' rules for the packages, said for the modules).
TOP_LEVEL_FORBIDDEN = {"garm_client", "requests"}


@pytest.fixture
def charm_copy(tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of the charm's src/, lib/ and contracts, to plant leaks in."""
    shutil.copytree(SRC, tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(GARM / "lib", tmp_path / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(CONTRACTS, tmp_path / ".importlinter")
    return tmp_path


def test_the_charm_keeps_its_layers(charm_copy: pathlib.Path):
    """Arrange: an untouched copy of the charm. Act: run lint-imports on it, as `tox -e lint` does.

    Assert: it passes and reports no broken contract.
    """
    done = _lint_imports(charm_copy)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_ops_import_in_the_planner_fails_lint(charm_copy: pathlib.Path):
    """Arrange: the copy with `import ops` planted at the end of scaleset_reconciler/plan.py.

    Act: run lint-imports on it.
    Assert: it fails, names the contract that keeps ops out and the planted import.
    """
    plan = charm_copy / "src" / "scaleset_reconciler" / "plan.py"
    plan.write_text(plan.read_text() + "\nimport ops\n")

    done = _lint_imports(charm_copy)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "Only charm*.py and relations import ops" in done.stdout
    assert "scaleset_reconciler.plan -> ops" in done.stdout


def test_a_reconcile_import_in_reconcile_github_fails_lint(charm_copy: pathlib.Path):
    """Arrange: the copy with `import reconcile.garm_objects` planted in reconcile/github/view.py.

    Act: run lint-imports on it.
    Assert: it fails and names the contract that keeps reconcile.github apart.
    """
    view = charm_copy / "src" / "reconcile" / "github" / "view.py"
    view.write_text(view.read_text() + "\nimport reconcile.garm_objects\n")

    done = _lint_imports(charm_copy)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "reconcile.github asks GitHub for the rest of reconcile" in done.stdout
    assert "reconcile.github.view -> reconcile.garm_objects" in done.stdout


def test_the_contracts_name_every_module_of_src():
    """Arrange: the contracts file and the modules in the charm's src/.

    Act: read the root packages and the top layer of each layers contract.
    Assert: every package of src/ is a root package, and every top-level module is in the top
    layer of each layers contract (a module missing there could be imported from below unseen).
    """
    packages = {path.parent.name for path in SRC.glob("*/__init__.py")}
    modules = {path.stem for path in SRC.glob("*.py")}
    contracts = configparser.ConfigParser()
    contracts.read(CONTRACTS)

    roots = set(contracts["importlinter"]["root_packages"].split())
    top_layers = {
        name: _top_layer(section["layers"])
        for name, section in contracts.items()
        if section.get("type") == "layers"
    }

    assert roots == packages
    assert top_layers
    for name, top_layer in top_layers.items():
        assert modules <= top_layer, (name, sorted(modules - top_layer))


@pytest.mark.parametrize("module", sorted(SRC.glob("*.py")), ids=lambda path: path.name)
def test_a_top_level_module_reaches_garm_only_through_garm_api(module: pathlib.Path):
    """Arrange: one top-level module of src/, which import-linter cannot analyse.

    Act: collect every module it imports, at the top or inside a function.
    Assert: none is garm_client or requests, nor one of their submodules.
    """
    imported = _imported_modules(module)

    assert {name.split(".")[0] for name in imported} & TOP_LEVEL_FORBIDDEN == set()


def _lint_imports(charm: pathlib.Path) -> subprocess.CompletedProcess[str]:
    # The copy first on the path, so the copy is what is analysed; whatever else the caller had
    # (where import-linter itself lives, for one) stays behind it.
    path = [str(charm / "src"), str(charm / "lib"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "COLUMNS": "200", "NO_COLOR": "1"}
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", command, "--config", str(charm / ".importlinter"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=charm,
        env=env,
        timeout=60,
        check=False,
    )


def _top_layer(layers: str) -> set[str]:
    # The first line lists the top layer's modules, apart ("|") or not (":"), optional ones in
    # parentheses.
    first = layers.strip().splitlines()[0]
    return {name.strip().strip("()") for name in first.replace("|", ":").split(":")}


def _imported_modules(module: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names
