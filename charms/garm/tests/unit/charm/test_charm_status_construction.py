"""Every ops status the charm shows is built in charm_status.py, and nowhere else in src/.

The reconcile and the charm hand `charm_status` what happened (an error, a decision, a report)
and set what it returns, mid-hook too: one module words them all, so a status text is found,
bounded and reviewed in one place (docs/adr/0047-status-text-at-the-bottom.md). Read from the
source, so a construction hidden in a lazy import or a rarely taken branch counts as well.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[3] / "src"
WORDING = SRC / "charm_status.py"
# Generated code is never edited by hand, and builds no ops status.
SKIPPED = {"garm_client"}
STATUS_CLASSES = frozenset(
    {
        "StatusBase",
        "ActiveStatus",
        "BlockedStatus",
        "MaintenanceStatus",
        "WaitingStatus",
        "UnknownStatus",
        "ErrorStatus",
    }
)


def test_only_charm_status_builds_an_ops_status():
    """Arrange: every module of the charm's src/ but charm_status.py and the generated client.

    Act: find each call that builds an ops status (`ops.BlockedStatus(...)`, a status class
    imported by name or under another, `StatusBase.from_name(...)`).
    Assert: none is found.
    """
    modules = [path for path in sorted(SRC.rglob("*.py")) if path != WORDING]

    found = [site for path in modules if not _skipped(path) for site in constructions(path)]

    assert found == []


def test_charm_status_builds_the_statuses():
    """Arrange: charm_status.py itself, the one module allowed to build statuses.

    Act: find the calls that build an ops status in it.
    Assert: there are some (the walk sees constructions where there are any), of every kind
    the charm shows.
    """
    kinds = {kind for _, _, kind in constructions(WORDING)}

    assert {"ActiveStatus", "BlockedStatus", "MaintenanceStatus", "WaitingStatus"} <= kinds


@pytest.mark.parametrize(
    ("planted", "kind"),
    [
        ("import ops\n\ndef f():\n    return ops.ActiveStatus('fine')\n", "ActiveStatus"),
        (
            "from ops import BlockedStatus\n\ndef f():\n    return BlockedStatus('x')\n",
            "BlockedStatus",
        ),
        (
            "from ops import model\n\ndef f(u):\n    u.status = model.MaintenanceStatus('x')\n",
            "MaintenanceStatus",
        ),
        (
            "import ops\n\ndef f():\n    return ops.StatusBase.from_name('waiting', 'x')\n",
            "StatusBase",
        ),
        (
            "from ops import WaitingStatus as Later\n\ndef f():\n    return Later('x')\n",
            "WaitingStatus",
        ),
    ],
    ids=["attribute", "imported-name", "submodule", "from-name", "renamed"],
)
def test_a_status_built_elsewhere_is_found(tmp_path: pathlib.Path, planted: str, kind: str):
    """Arrange: a module building a status one of the ways ops allows.

    Act: find the calls that build an ops status in it.
    Assert: the planted one is found, with its function and its kind.
    """
    module = tmp_path / "planted.py"
    module.write_text(planted)

    found = constructions(module, tmp_path)

    assert found == [("planted.py", "f", kind)]


def constructions(path: pathlib.Path, root: pathlib.Path = SRC) -> list[tuple[str, str, str]]:
    """(module's path under `root`, enclosing function, status class) per ops status built."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = _status_names(tree)
    sites: list[tuple[str, str, str]] = []
    for function, node in _calls(tree, "<module>"):
        kind = _status_class(node.func, names)
        if kind is not None:
            sites.append((path.relative_to(root).as_posix(), function, kind))
    return sites


def _status_names(tree: ast.Module) -> dict[str, str]:
    """What each status class is called in the module: its own name, or the `as` it took."""
    names = {name: name for name in STATUS_CLASSES}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(
                (alias.asname, alias.name)
                for alias in node.names
                if alias.asname and alias.name in STATUS_CLASSES
            )
    return names


def _calls(node: ast.AST, function: str) -> list[tuple[str, ast.Call]]:
    """Every call under `node`, with the name of the innermost function it is in."""
    calls: list[tuple[str, ast.Call]] = []
    for child in ast.iter_child_nodes(node):
        inner = (
            child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
        )
        if isinstance(child, ast.Call):
            calls.append((function, child))
        calls.extend(_calls(child, inner))
    return calls


def _status_class(func: ast.expr, names: dict[str, str]) -> str | None:
    """The status class a call builds: `X(...)`, `a.X(...)` or `X.from_name(...)`; else None."""
    if isinstance(func, ast.Attribute) and func.attr == "from_name":
        return _status_class(func.value, names)
    if isinstance(func, ast.Attribute) and func.attr in STATUS_CLASSES:
        return func.attr
    if isinstance(func, ast.Name) and func.id in names:
        return names[func.id]
    return None


def _skipped(path: pathlib.Path) -> bool:
    return bool(SKIPPED & set(path.relative_to(SRC).parts))
