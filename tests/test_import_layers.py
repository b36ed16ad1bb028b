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


def test_an_ops_import_in_a_peer_decision_fails_lint(charm_copy: pathlib.Path):
    """Arrange: the copy with `import ops` planted at the end of relations/peers/lease.py.

    Act: run lint-imports on it.
    Assert: it fails, names the contract that keeps the peer decisions pure and the import.
    """
    lease = charm_copy / "src" / "relations" / "peers" / "lease.py"
    lease.write_text(lease.read_text() + "\nimport ops\n")

    done = _lint_imports(charm_copy)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "The peer relation's decisions" in done.stdout
    assert "relations.peers.lease -> ops" in done.stdout


@pytest.mark.parametrize(
    ("planted", "reported"),
    [
        (
            "from scaleset_reconciler.report import Phase",
            "status_text -> scaleset_reconciler.report",
        ),
        ("import charm_status", "status_text -> charm_status"),
        ("import text_numbers", "status_text -> text_numbers"),
    ],
    ids=["the-planner", "a-top-level-module", "the-other-ground-floor-package"],
)
def test_an_import_of_ours_in_status_text_fails_lint(
    charm_copy: pathlib.Path, planted: str, reported: str
):
    """Arrange: the copy with an import of the charm's own code planted in status_text.

    Act: run lint-imports on it.
    Assert: it fails, names the contract that keeps status_text the ground floor and the
    planted import.
    """
    words = charm_copy / "src" / "status_text" / "__init__.py"
    words.write_text(words.read_text() + f"\n{planted}\n")

    done = _lint_imports(charm_copy)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "status_text, the words of every status" in done.stdout
    assert reported in done.stdout


@pytest.mark.parametrize(
    ("path", "planted", "contract", "named"),
    [
        pytest.param(
            "scaleset_reconciler/grouping.py",
            "import scaleset_reconciler.executor",
            "scaleset_reconciler's inner order",
            "scaleset_reconciler.grouping -> scaleset_reconciler.executor",
            id="the planner's grouping reaches up to the executor",
        ),
        pytest.param(
            "scaleset_reconciler/live_update.py",
            "import scaleset_reconciler.retirement",
            "scaleset_reconciler's inner order",
            "scaleset_reconciler.live_update -> scaleset_reconciler.retirement",
            id="one step of the plan imports its sibling",
        ),
        pytest.param(
            "relations/certificates.py",
            "import relations.database",
            "Each relation module stands alone",
            "relations.certificates -> relations.database",
            id="one relation module imports another",
        ),
        pytest.param(
            "relations/database.py",
            "import relations.peers",
            "Each relation module stands alone",
            "relations.database -> relations.peers",
            id="a relation module imports the peer relation's package",
        ),
        pytest.param(
            "workload/service.py",
            "from charmlibs import systemd",
            "Only charm*.py and relations import ops or a charm library",
            "workload.service -> charmlibs",
            id="a second charmlibs importer in workload",
        ),
    ],
)
def test_a_planted_import_against_a_contract_fails_lint(
    charm_copy: pathlib.Path, path: str, planted: str, contract: str, named: str
):
    """Arrange: the copy with one import planted at the end of a module, against one contract.

    Act: run lint-imports on it.
    Assert: it fails, names the contract and the planted import.
    """
    module = charm_copy / "src" / path
    module.write_text(module.read_text() + f"\n{planted}\n")

    done = _lint_imports(charm_copy)

    assert done.returncode == 1, done.stdout + done.stderr
    assert contract in done.stdout
    assert named in done.stdout


def test_a_module_the_planner_order_does_not_place_fails_lint(charm_copy: pathlib.Path):
    """Arrange: the copy with a new module in scaleset_reconciler that no layer names.

    Act: run lint-imports on it.
    Assert: it fails, naming the module the inner order leaves out (the contract is exhaustive).
    """
    (charm_copy / "src" / "scaleset_reconciler" / "unplaced.py").write_text('"""New."""\n')

    done = _lint_imports(charm_copy)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "scaleset_reconciler.unplaced" in done.stdout


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
    # A layers contract inside one package (`containers`) orders that package's modules only.
    top_layers = {
        name: _top_layer(section["layers"])
        for name, section in contracts.items()
        if section.get("type") == "layers" and "containers" not in section
    }

    assert roots == packages
    assert top_layers
    for name, top_layer in top_layers.items():
        assert modules <= top_layer, (name, sorted(modules - top_layer))


def test_status_text_may_import_no_module_of_src():
    """Arrange: the contracts file and the modules in the charm's src/.

    Act: read what the ground-floor contract forbids status_text to import.
    Assert: every package and top-level module of src/ but status_text itself (a new one would
    otherwise be open to it until someone remembered to add it).
    """
    ours = {path.parent.name for path in SRC.glob("*/__init__.py")} | {
        path.stem for path in SRC.glob("*.py")
    }
    contracts = configparser.ConfigParser()
    contracts.read(CONTRACTS)

    ground_floor = contracts["importlinter:contract:status-text-is-the-ground-floor"]
    forbidden = set(ground_floor["forbidden_modules"].split())

    assert ground_floor["source_modules"].split() == ["status_text"]
    assert ours - {"status_text"} <= forbidden, sorted(ours - {"status_text"} - forbidden)


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
