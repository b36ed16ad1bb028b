"""Runner templates: each option alone and all combined, against golden files.

Plus the rules every rendering keeps: deterministic, GARM's text untouched, valid bash, no new
template syntax.

Regenerate the golden files after an intended change with `UPDATE_GOLDEN=1 tox -e unit -- -k
runner_template`, and review the diff.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reconcile.runner_template import (
    APROXY_SCRIPT,
    DOCKERHUB_MIRROR_SCRIPT,
    INSTALL_ANCHOR,
    RunnerConfig,
    TemplateError,
    collector_config,
    extra_specs,
    install_block,
    pre_install_scripts,
    pre_job_hook,
    render_template,
    template_name,
)

HERE = Path(__file__).parents[1] / "runner_templates"
BASH = shutil.which("bash") or "bash"
BASES = {
    "v0.2.1": (HERE / "github_linux-v0.2.1.tmpl").read_text(),
    "afda4e76": (HERE / "github_linux-afda4e76.tmpl").read_text(),
}
PROXY = "http://squid.internal:3128"
CASES = {
    "default": RunnerConfig(),
    "proxy": RunnerConfig(http_proxy=PROXY),
    "proxy-excludes-ports": RunnerConfig(
        http_proxy=PROXY,
        aproxy_exclude_addresses=("10.0.0.1/8", "192.168.1.10"),
        aproxy_redirect_ports=("80", "443", "8000-9000"),
    ),
    "dockerhub-mirror": RunnerConfig(dockerhub_mirror="https://mirror.internal:5000"),
    "otel-collector": RunnerConfig(otel_collector_endpoint="http://otel.internal:4318"),
    "pre-job-script": RunnerConfig(pre_job_script='echo "job $GITHUB_JOB" {{ .Name }}\nEOF\n'),
    "pre-install-scripts": RunnerConfig(
        pre_install_scripts=(("10-apt", "apt-get install -y jq\n"), ("00-first", "true\n"))
    ),
    "debug-ssh": RunnerConfig(
        debug_env=(
            ("TMATE_SERVER_HOST", "tmate.internal"),
            ("TMATE_SERVER_PORT", "10022"),
            ("TMATE_SERVER_RSA_FINGERPRINT", "SHA256:" + "r" * 43),
            ("TMATE_SERVER_ED25519_FINGERPRINT", "SHA256:" + "e" * 43),
        )
    ),
    "combined": RunnerConfig(
        http_proxy=PROXY,
        aproxy_exclude_addresses=("10.0.0.0/8",),
        dockerhub_mirror="https://mirror.internal:5000",
        otel_collector_endpoint="https://otel.internal:4318/it's",
        pre_job_script="echo ready\n",
        pre_install_scripts=(("apt", "apt-get install -y jq\n"),),
    ),
}


def _dump(config: RunnerConfig) -> str:
    """Everything one config makes, decoded and readable: what the golden files hold."""
    sections = [f"### template name\n{template_name('small')}\n"]
    specs = extra_specs(config)
    sections.append(f"### extra_specs\n{json.dumps(specs, indent=2, sort_keys=True)}\n")
    for name, body in pre_install_scripts(config).items():
        sections.append(f"### pre-install script {name}\n{body}")
    sections.append(f"### needs a template\n{config.needs_template()}\n")
    if config.needs_template():
        sections.append(f"### install block\n{install_block(config)}")
    if config.needs_hook():
        sections.append(f"### pre-job hook\n{pre_job_hook(config)}")
    if config.otel_collector_endpoint:
        collector = collector_config(config.otel_collector_endpoint)
        sections.append(f"### collector configuration (in the hook)\n{collector}")
    return "\n".join(sections)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendering_matches_the_golden_file(case: str):
    """Arrange: one option alone, or all combined. Act: render everything it makes.

    Assert: identical to the reviewed golden file.
    """
    golden = HERE / "golden" / f"{case}.txt"

    rendered = _dump(CASES[case])

    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered)
    assert rendered == golden.read_text()


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_rendering_only_adds_a_block_before_the_install_step(case: str, base: str):
    """Arrange: a GARM base template and a config. Act: render twice.

    Assert: equal bytes both times; removing the charm's block gives GARM's text back; the
    block sits right before the runner is configured; no new Go template syntax.
    """
    config = CASES[case]

    first, second = render_template(BASES[base], config), render_template(BASES[base], config)

    block = install_block(config)
    assert first == second
    assert first.replace(block, "", 1) == BASES[base]
    assert f"{block}{INSTALL_ANCHOR}" in first
    assert first.count("{{") == BASES[base].count("{{")


def test_a_base_without_the_install_step_is_refused():
    """Arrange: a base template without GARM's install step. Act: render.

    Assert: TemplateError saying how to restore the system template.
    """
    with pytest.raises(TemplateError, match="garm-cli template restore"):
        render_template("#!/bin/bash\necho custom\n", CASES["combined"])


def test_default_options_need_no_template_and_no_extra_specs():
    """Arrange: default options. Act: ask what they need. Assert: nothing: GARM's own template."""
    assert not RunnerConfig().needs_template()
    assert extra_specs(RunnerConfig()) == {}


def test_pre_install_scripts_are_base64_and_the_charm_s_run_first():
    """Arrange: a proxy, a mirror and operator scripts named to sort early.

    Act: build extra_specs. Assert: base64 values that decode to the scripts; the charm's
    scripts sort before every operator script; updates off because of the proxy.
    """
    config = RunnerConfig(
        http_proxy=PROXY,
        dockerhub_mirror="https://mirror.internal",
        pre_install_scripts=(("-early", "echo a\n"), ("00-x", "echo b\n")),
    )

    specs = extra_specs(config)

    scripts = specs["pre_install_scripts"]
    decoded = {name: base64.b64decode(value).decode() for name, value in scripts.items()}
    assert decoded == pre_install_scripts(config)
    assert sorted(scripts)[:2] == [APROXY_SCRIPT, DOCKERHUB_MIRROR_SCRIPT]
    assert decoded["50-00-x"] == "echo b\n"
    assert specs["disable_updates"] is True


@pytest.mark.skipif(BASH == "bash", reason="needs bash")
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_script_is_valid_bash(case: str, tmp_path: Path):
    """Arrange: every script a config makes. Act: `bash -n`. Assert: no syntax error."""
    config = CASES[case]
    scripts = {**pre_install_scripts(config), "block": install_block(config)}
    if config.needs_hook():
        scripts["hook"] = pre_job_hook(config)

    for name, body in scripts.items():
        path = tmp_path / name
        path.write_text(body)
        checked = subprocess.run([BASH, "-n", str(path)], capture_output=True, check=False)
        assert checked.returncode == 0, (name, checked.stderr)


@pytest.mark.skipif(BASH == "bash", reason="needs bash")
def test_the_pre_job_hook_never_fails_the_job(tmp_path: Path):
    """Arrange: a pre-job script that writes a file and then fails; no collector snap.

    Act: run the hook as the runner would. Assert: exit 0, the script ran, the failure logged.
    """
    marker = tmp_path / "ran"
    config = RunnerConfig(
        otel_collector_endpoint="http://otel.internal:4318",
        pre_job_script=f"touch {marker}\nexit 3\n",
    )
    hook = tmp_path / "hook.sh"
    hook.write_text(pre_job_hook(config))

    done = subprocess.run(
        [BASH, str(hook)], capture_output=True, text=True, check=False, timeout=30
    )

    assert done.returncode == 0
    assert marker.exists()
    assert "the pre-job script failed (exit 3); the job goes on" in done.stderr
