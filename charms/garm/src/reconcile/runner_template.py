"""Runner templates: GARM's `github_linux` plus what one scale set's runner options ask for.

GARM boots a runner in two stages (garm-behaviour B21): cloud-init first runs the scale set's
`pre_install_scripts` (from `extra_specs`, base64, as root, in name order), then a wrapper
that fetches the install script from GARM's metadata API and runs it as the `runner` user.
That install script is the scale set's template, rendered by GARM as a Go text/template.

So, for one scale set:

- the transparent proxy (aproxy) and the Docker Hub mirror are pre-install scripts: root, and
  before the wrapper fetches anything through the network;
- the runner's `.env` (job-hook variables) and the pre-job hook are added to a copy of
  `github_linux`, just before its "configuring runner" step: the runner is unpacked by then,
  and has not started (it reads `.env` when it starts);
- everything the operator wrote travels base64-encoded, so no script can end a heredoc early
  or be read by GARM as template syntax.

Everything here is a pure function of its input: equal options render equal bytes, which is
what lets the template reconciler update GARM only when the bytes change (ADR 0008).
"""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
import shlex
from typing import Any, Final
from urllib.parse import urlsplit

SYSTEM_TEMPLATE: Final = "github_linux"
TEMPLATE_PREFIX: Final = "garm-charm-"
# Marks a template as the charm's: only templates with this description are ever changed.
TEMPLATE_DESCRIPTION: Final = "managed by the garm charm; runner options of one scale set"
# The step of `github_linux` (v0.2.1 and later) before which the runner is unpacked, unstarted.
INSTALL_ANCHOR: Final = 'sendStatus "configuring runner"'
PRE_JOB_HOOK: Final = "garm-charm-pre-job.sh"
APROXY_SCRIPT: Final = "00-garm-charm-aproxy"
DOCKERHUB_MIRROR_SCRIPT: Final = "01-garm-charm-dockerhub-mirror"
# The operator's pre-install scripts run after the charm's, in their own name order.
OPERATOR_SCRIPT_PREFIX: Final = "50-"
APROXY_PORT: Final = 54969
# Where the per-runner telemetry collector listens for the jobs' own telemetry.
LOCAL_OTLP_HTTP: Final = "http://127.0.0.1:4318"


class TemplateError(Exception):
    """The base template cannot carry the runner options; the message says why."""


@dataclasses.dataclass(frozen=True)
class RunnerConfig:
    """What runs on each runner of one scale set besides the runner itself.

    Attributes:
        http_proxy: the proxy aproxy forwards to; None for direct access.
        aproxy_exclude_addresses: IPv4 addresses and CIDRs aproxy leaves alone.
        aproxy_redirect_ports: ports and N-M ranges aproxy redirects.
        dockerhub_mirror: the Docker Hub mirror URL; None for none.
        otel_collector_endpoint: where the runner's collector exports (OTLP over HTTP).
        pre_job_script: bash run before each job; empty for none.
        pre_install_scripts: (name, bash) pairs run as root before the runner is installed.
        debug_env: `.env` entries of the debug-ssh relay (`debug_ssh`), for every scale set.
    """

    http_proxy: str | None = None
    aproxy_exclude_addresses: tuple[str, ...] = ()
    aproxy_redirect_ports: tuple[str, ...] = ("80", "443")
    dockerhub_mirror: str | None = None
    otel_collector_endpoint: str | None = None
    pre_job_script: str = ""
    pre_install_scripts: tuple[tuple[str, str], ...] = ()
    debug_env: tuple[tuple[str, str], ...] = ()

    def needs_template(self) -> bool:
        """Whether the runners need more than `github_linux`: a job hook or `.env` entries."""
        return bool(
            self.dockerhub_mirror
            or self.otel_collector_endpoint
            or self.pre_job_script
            or self.debug_env
        )

    def needs_hook(self) -> bool:
        """Whether a pre-job hook runs before each job."""
        return bool(self.otel_collector_endpoint or self.pre_job_script)


def template_name(logical: str) -> str:
    """The name of the template of the scale set whose logical name is `logical`."""
    return f"{TEMPLATE_PREFIX}{logical}"


def is_charm_template(name: str, description: str, owner_id: str) -> bool:
    """Whether a template in GARM is one this charm made (and so may change or delete)."""
    return (
        name.startswith(TEMPLATE_PREFIX)
        and description == TEMPLATE_DESCRIPTION
        and owner_id != "system"
    )


def extra_specs(config: RunnerConfig) -> dict[str, Any]:
    """The scale set's `extra_specs`: pre-install scripts (base64) and, when proxied, no updates.

    `disable_updates` is the OpenStack provider's extra spec that turns off cloud-init's package
    upgrade at boot, which would otherwise try the network before aproxy is up.
    """
    specs: dict[str, Any] = {}
    scripts = pre_install_scripts(config)
    if scripts:
        specs["pre_install_scripts"] = {
            name: base64.b64encode(body.encode()).decode() for name, body in scripts.items()
        }
    if config.http_proxy:
        specs["disable_updates"] = True
    return specs


def pre_install_scripts(config: RunnerConfig) -> dict[str, str]:
    """Every pre-install script by the name GARM writes it under, the charm's first."""
    scripts: dict[str, str] = {}
    if config.http_proxy:
        scripts[APROXY_SCRIPT] = aproxy_script(config)
    if config.dockerhub_mirror:
        scripts[DOCKERHUB_MIRROR_SCRIPT] = dockerhub_mirror_script(config.dockerhub_mirror)
    for name, body in sorted(config.pre_install_scripts):
        scripts[f"{OPERATOR_SCRIPT_PREFIX}{name}"] = body
    return scripts


def render_template(base: str, config: RunnerConfig) -> str:
    """Return `base` (GARM's `github_linux`) with the job hook and `.env` entries added.

    Raises:
        TemplateError: `base` lacks the step the additions go before.
    """
    if base.count(INSTALL_ANCHOR) != 1:
        # Status text: short, with the fix.
        raise TemplateError(
            f"{SYSTEM_TEMPLATE} lacks GARM's install step: garm-cli template restore"
        )
    before, after = base.split(INSTALL_ANCHOR)
    return before + install_block(config) + INSTALL_ANCHOR + after


def install_block(config: RunnerConfig) -> str:
    """The lines added to the install script; they run as the runner user with sudo."""
    hook = f'"$RUN_HOME/{PRE_JOB_HOOK}"'
    env = '"$RUN_HOME/.env"'
    lines = ["# --- added by the garm charm: job hooks and runner environment ---"]
    if config.needs_hook():
        lines += [
            f"echo {_b64(pre_job_hook(config))} | base64 -d > {hook} "
            '|| fail "failed to write the pre-job hook"',
            f'chmod 0755 {hook} || fail "failed to make the pre-job hook executable"',
            f'echo "ACTIONS_RUNNER_HOOK_JOB_STARTED=$RUN_HOME/{PRE_JOB_HOOK}" >> {env} '
            '|| fail "failed to write the runner environment"',
        ]
    entries = "".join(f"{key}={value}\n" for key, value in env_entries(config).items())
    if entries:
        lines.append(
            f"echo {_b64(entries)} | base64 -d >> {env} "
            '|| fail "failed to write the runner environment"'
        )
    lines.append("# --- end of the garm charm's additions ---")
    return "\n".join(lines) + "\n"


def env_entries(config: RunnerConfig) -> dict[str, str]:
    """The runner `.env` entries (besides the hook's path) every job of the scale set sees."""
    entries: dict[str, str] = {}
    if config.dockerhub_mirror:
        entries["DOCKERHUB_MIRROR"] = config.dockerhub_mirror
        entries["CONTAINER_REGISTRY_URL"] = config.dockerhub_mirror
    if config.otel_collector_endpoint:
        entries["OTEL_EXPORTER_OTLP_ENDPOINT"] = LOCAL_OTLP_HTTP
    entries.update(config.debug_env)
    return entries


def pre_job_hook(config: RunnerConfig) -> str:
    """The hook the runner runs before each job: never fails it, whatever goes wrong."""
    parts = [_HOOK_HEAD]
    if config.otel_collector_endpoint:
        static = collector_config(config.otel_collector_endpoint)
        parts.append(_HOOK_COLLECTOR.replace("@CONFIG@", _b64(static)))
    if config.pre_job_script:
        parts.append(_HOOK_SCRIPT.replace("@SCRIPT@", _b64(config.pre_job_script)))
    parts.append("exit 0\n")
    return "".join(parts)


def collector_config(endpoint: str) -> str:
    """The telemetry collector's configuration, before the hook adds the job's attributes."""
    return _COLLECTOR_CONFIG.replace("@ENDPOINT@", _yaml_quote(endpoint))


def aproxy_script(config: RunnerConfig) -> str:
    """The root pre-install script that sends outgoing traffic through aproxy to the proxy."""
    assert config.http_proxy is not None  # only rendered for a proxied scale set
    proxy = config.http_proxy
    excluded = ["127.0.0.0/8", *(_network(address) for address in config.aproxy_exclude_addresses)]
    values = {
        "@PROXY@": shlex.quote(proxy),
        "@ADDRESS@": shlex.quote(urlsplit(proxy).netloc),  # aproxy takes host:port
        "@PORT@": str(APROXY_PORT),
        "@PORTS@": ", ".join(config.aproxy_redirect_ports),
        "@EXCLUDED@": ", ".join(excluded),
    }
    script = _APROXY
    for placeholder, value in values.items():
        script = script.replace(placeholder, value)
    return script


def dockerhub_mirror_script(mirror: str) -> str:
    """The root pre-install script that adds the mirror to Docker's daemon configuration."""
    return _DOCKERHUB_MIRROR.replace("@MIRROR@", shlex.quote(mirror))


def _network(address: str) -> str:
    # nft refuses a prefix with host bits set; 10.0.0.1/8 means 10.0.0.0/8.
    return str(ipaddress.ip_network(address, strict=False))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _yaml_quote(text: str) -> str:
    # Single-quoted YAML keeps every character literal except the quote, which is doubled.
    return "'" + text.replace("'", "''") + "'"


# The scripts' text. Placeholders are @NAME@, replaced with values that are already quoted
# for where they go; shell and YAML braces stay as they are.

_HOOK_HEAD = """#!/bin/bash
# Written by the garm charm. Runs before each job as the runner user and never fails the
# job: every step logs its failure and the hook always exits 0.
log() {
	echo "garm-charm pre-job: $*" >&2
	logger -t garm-charm-pre-job -- "$*" 2>/dev/null || true
}
"""

_HOOK_COLLECTOR = """start_collector() {
	if ! snap list opentelemetry-collector >/dev/null 2>&1; then
		log "the image has no opentelemetry-collector snap: no telemetry for this job"
		return 0
	fi
	q="'"
	{
		echo @CONFIG@ | base64 -d
		for pair in "github.repository=$GITHUB_REPOSITORY" "github.workflow=$GITHUB_WORKFLOW" \\
			"github.job=$GITHUB_JOB" "github.run.id=$GITHUB_RUN_ID" \\
			"github.run.attempt=$GITHUB_RUN_ATTEMPT" "github.runner=$RUNNER_NAME"; do
			value=${pair#*=}
			echo "        - {key: ${pair%%=*}, value: '${value//$q/$q$q}', action: upsert}"
		done
	} | sudo tee /etc/otelcol/config.d/garm-charm.yaml >/dev/null || return 1
	sudo snap start --enable opentelemetry-collector
}
start_collector || log "the telemetry collector did not start (exit $?); the job goes on"
"""

# Exports to the operator's endpoint over OTLP/HTTP; the jobs' own telemetry comes in on
# 127.0.0.1:4318 (OTEL_EXPORTER_OTLP_ENDPOINT in .env). The hook appends one attribute per
# GitHub variable to the last list, since they exist only once a job is assigned.
_COLLECTOR_CONFIG = """receivers:
  hostmetrics:
    collection_interval: 10s
    scrapers:
      cpu: {}
      memory: {}
      disk: {}
      filesystem: {}
      network: {}
      load: {}
  otlp:
    protocols:
      http:
        endpoint: '127.0.0.1:4318'
exporters:
  otlphttp/garm-charm:
    endpoint: @ENDPOINT@
service:
  pipelines:
    metrics/garm-charm:
      receivers: [hostmetrics, otlp]
      processors: [resource/garm-charm]
      exporters: [otlphttp/garm-charm]
    logs/garm-charm:
      receivers: [otlp]
      processors: [resource/garm-charm]
      exporters: [otlphttp/garm-charm]
    traces/garm-charm:
      receivers: [otlp]
      processors: [resource/garm-charm]
      exporters: [otlphttp/garm-charm]
processors:
  resource/garm-charm:
    attributes:
        - {key: service.name, value: github-runner, action: upsert}
"""

_HOOK_SCRIPT = """script=$(mktemp) && echo @SCRIPT@ | base64 -d > "$script" && bash "$script"
status=$?
[ "$status" -eq 0 ] || log "the pre-job script failed (exit $status); the job goes on"
rm -f "$script"
"""

_APROXY = """#!/bin/bash
# Written by the garm charm. Runs as root before the runner is installed: outgoing TCP to
# ports @PORTS@ goes through aproxy to the proxy, except to the excluded addresses.
log() { echo "garm-charm aproxy: $*"; }
snap set system proxy.http=@PROXY@ proxy.https=@PROXY@
if ! snap list aproxy >/dev/null 2>&1 && ! snap install aproxy --edge; then
	log "cannot install the aproxy snap; outgoing traffic is not redirected"
	exit 1
fi
snap set aproxy proxy=@ADDRESS@ listen=:@PORT@ || exit 1
for attempt in $(seq 30); do
	snap services aproxy | grep -q ' active' && break
	sleep 1
done
if ! snap services aproxy | grep -q ' active'; then
	log "aproxy is not running; outgoing traffic is not redirected"
	exit 1
fi
# Redirecting to a port nothing listens on would cut the runner off, hence only now.
address=$(ip -4 route get 192.0.2.1 | grep -oP 'src \\K\\S+')
nft -f - <<EOF
table ip garm-charm-aproxy {
	set excluded {
		type ipv4_addr
		flags interval
		auto-merge
		elements = { @EXCLUDED@ }
	}
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr != @excluded tcp dport { @PORTS@ } dnat to $address:@PORT@
	}
	chain output {
		type nat hook output priority -100; policy accept;
		ip daddr != @excluded tcp dport { @PORTS@ } dnat to $address:@PORT@
	}
}
EOF
"""

_DOCKERHUB_MIRROR = """#!/bin/bash
# Written by the garm charm. Runs as root before the runner is installed: Docker pulls
# from Docker Hub through the mirror.
mkdir -p /etc/docker
python3 - @MIRROR@ <<'EOF'
import json, os, sys
path = "/etc/docker/daemon.json"
config = {}
if os.path.exists(path) and os.path.getsize(path):
    with open(path) as file:
        config = json.load(file)
mirrors = config.setdefault("registry-mirrors", [])
if sys.argv[1] not in mirrors:
    mirrors.insert(0, sys.argv[1])
with open(path, "w") as file:
    json.dump(config, file, indent=2)
EOF
if systemctl is-active --quiet docker; then
	systemctl restart docker
fi
"""
