"""`scripts/check_docs.py` fails on a doc fact the code contradicts (`check_doc_facts.py`)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def checker(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The checker, loaded from its file; problems name pages by file name."""
    spec = importlib.util.spec_from_file_location(
        "check_doc_facts", ROOT / "scripts" / "check_doc_facts.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "check_doc_facts", module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "rel", lambda path: path.name)
    return module


def test_the_repository_states_what_the_code_does(
    checker: ModuleType, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: the repository. Act: check_doc_facts. Assert: no problem."""
    monkeypatch.setattr(checker, "rel", lambda path: path.relative_to(ROOT).as_posix())

    assert list(checker.check_doc_facts()) == []


def shell(*lines: str) -> str:
    """A page with one shell block."""
    return "Text.\n\n```shell\n" + "\n".join(lines) + "\n```\n"


@pytest.mark.parametrize(
    ("page", "flagged"),
    [
        (shell("OS_ID=$(juju add-secret openstack-password password=<password>)"), True),
        (shell("juju config small image=<image id> \\", "    flavor=m1.small"), True),
        (shell('curl "https://<unit address>:9997/metrics"'), False),
        (shell("juju ssh 'garm/<n>' -- true   # <not> in a comment"), False),
        ("```\njuju add-secret x password=<password>\n```\n", True),
        ("```text\nURL <unit address>\n```\n", False),
    ],
)
def test_an_unquoted_placeholder_is_found(
    checker: ModuleType, tmp_path: pathlib.Path, page: str, flagged: bool
):
    """Arrange: a page. Act: check its placeholders. Assert: flagged only when unquoted."""
    path = tmp_path / "page.md"

    problems = list(checker.check_placeholders(path, page))

    assert bool(problems) == flagged, problems


@pytest.mark.parametrize(
    ("lines", "flagged"),
    [
        (("juju config garm external-url=https://garm.example.com",), True),
        (
            (
                "juju integrate garm:certificates self-signed-certificates",
                "juju config garm external-url=https://garm.example.com:9997",
            ),
            False,
        ),
        (("juju config garm external-url=http://garm.example.com:9997",), False),
        (("juju config garm external-url=https://ci.example.com  # the TLS proxy",), False),
    ],
)
def test_an_https_url_before_tls_is_found(
    checker: ModuleType, tmp_path: pathlib.Path, lines: tuple[str, ...], flagged: bool
):
    """Arrange: a page. Act: check it. Assert: https:// before relating certificates flagged."""
    problems = list(checker.check_https_without_tls(tmp_path / "page.md", shell(*lines)))

    assert bool(problems) == flagged, problems


@pytest.mark.parametrize(
    ("lines", "flagged"),
    [
        (("juju refresh garm --channel latest/edge",), True),
        (
            (
                "juju refresh garm --path ./charms/garm/garm_amd64.charm",
                "juju refresh garm --channel latest/edge",
            ),
            False,
        ),
    ],
)
def test_a_refresh_by_channel_alone_is_found(
    checker: ModuleType, tmp_path: pathlib.Path, lines: tuple[str, ...], flagged: bool
):
    """Arrange: a page. Act: check it. Assert: `--channel` without the `--path` form flagged."""
    problems = list(checker.check_refresh(tmp_path / "page.md", shell(*lines)))

    assert bool(problems) == flagged, problems


def test_garm_cli_without_the_how_to_is_found(checker: ModuleType, tmp_path: pathlib.Path):
    """Arrange: two pages naming garm-cli, one linking the how-to. Act: check both.

    Assert: only the other is flagged.
    """
    page = tmp_path / "page.md"
    bare = list(checker.check_garm_cli(page, "Run `garm-cli template restore`.\n"))
    linked = list(
        checker.check_garm_cli(page, "Run `garm-cli` ([use garm-cli](use-garm-cli.md)).\n")
    )

    assert len(bare) == 1
    assert linked == []


def test_a_leader_showing_the_followers_status_is_found(
    checker: ModuleType, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: a sample status whose configurator leader shows the non-leader's text.

    Act: check the sample statuses. Assert: the app row and the leader's row are flagged, the
    follower's row (the same text) is not.
    """
    (tmp_path / "docs").mkdir()
    page = tmp_path / "README.md"
    page.write_text(
        "```text\n"
        "App    Version  Status  Scale  Charm              Rev  Message\n"
        "small           active      2  garm-configurator  2    scale set 'small' valid; "
        "the leader publishes it\n"
        "\n"
        "Unit      Workload  Agent  Machine  Message\n"
        "small/0*  active    idle   1        scale set 'small' valid; the leader publishes it\n"
        "small/1   active    idle   2        scale set 'small' valid; the leader publishes it\n"
        "```\n"
    )
    monkeypatch.setattr(checker, "ROOT", tmp_path)

    problems = list(checker.check_sample_statuses())

    assert [problem.split(": ")[1].split()[0] for problem in problems] == ["small", "small/0*"]


def test_an_option_limit_the_help_leaves_out_is_found(
    checker: ModuleType, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: garm's charmcraft.yaml without "at most 24h" for reconcile-interval.

    Act: check the option limits. Assert: reconcile-interval is named, with 24h.
    """
    project = tmp_path / "charmcraft.yaml"
    text = (ROOT / "charms" / "garm" / "charmcraft.yaml").read_text()
    project.write_text(text.replace("and at most 24h", ""))
    monkeypatch.setattr(checker, "GARM_CHARMCRAFT", project)

    problems = list(checker.check_option_limits())

    assert len(problems) == 1
    assert "'reconcile-interval' is refused above 24h" in problems[0]


def test_a_phase_a_page_leaves_out_is_found(
    checker: ModuleType, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
):
    """Arrange: the changeover how-to without its row for the wait for a runner.

    Act: check the phases. Assert: that phase is named.
    """
    page = tmp_path / "follow.md"
    text = (ROOT / "docs" / "how-to" / "follow-a-changeover.md").read_text()
    page.write_text(text.replace("waiting for an idle runner of the new set until", "waiting"))
    monkeypatch.setattr(checker, "PHASE_PAGES", (str(page),))

    problems = list(checker.check_changeover_phases())

    assert len(problems) == 1
    assert "handing over (waiting for an idle runner of the new set until" in problems[0]
