"""Stand-ins for Juju's hook tools: one program, run under each tool's name (stdlib only).

`packed_charm.hook_tools.HookTools` copies this file into a tools directory, links every tool
name to it and writes the unit's model (`model.json`) beside it. Each call reads the model,
does what the Juju 3.6 unit agent would with it, writes the model back and appends the call
to `calls.jsonl` (`{"tool", "args", "stdin", "at"}`, `at` in seconds since the epoch; content
given as `key#file=` is read from the file and never recorded).

Arguments and output follow what ops 3.9 sends and parses (`ops/hookcmds/*.py`, whose
docstrings link Juju's hook command reference): `--format=json` output, `-r endpoint:id`
relation references, `--file -` JSON on stdin, `key#file=path` secret content, Juju's
error words on stderr ("relation not found", "permission denied", "not found", "not the
leader") with exit status 1. docs/reference/testing.md ("The packed charm") says where each
format was read. A tool this program does not model exits 1 naming itself, so a charm that
starts calling one fails loudly instead of getting an invented answer.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(os.path.abspath(sys.argv[0])).parent
MODEL = HERE / "model.json"
CALLS = HERE / "calls.jsonl"
LOCK = HERE / "model.lock"
# Juju's secret ids: "secret:" and an xid, 20 characters of base32hex (0-9, a-v).
XID_ALPHABET = "0123456789abcdefghijklmnopqrstuv"


class ToolError(Exception):
    """What Juju's tool prints on stderr (with ERROR) before exiting 1."""


def main(tool: str, args: list[str]) -> int:
    """Run one tool call against the model under its lock."""
    stdin = sys.stdin.read() if "--file" in args and "-" in args else None
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        model = json.loads(MODEL.read_text())
        _record(tool, args, stdin)
        handler = HANDLERS.get(tool)
        try:
            if handler is None:
                raise ToolError(f"{tool} is not modelled by the hook tool stand-ins")
            output = handler(model, Args(args), stdin)
        except ToolError as error:
            print(f"ERROR {error}", file=sys.stderr)
            return 1
        MODEL.write_text(json.dumps(model, indent=1, sort_keys=True))
    if output is not None:
        sys.stdout.write(output if isinstance(output, str) else json.dumps(output) + "\n")
    return 0


def _record(tool: str, args: list[str], stdin: str | None) -> None:
    with CALLS.open("a") as calls:
        record = {"tool": tool, "args": args, "stdin": stdin, "at": round(time.time(), 3)}
        calls.write(json.dumps(record) + "\n")


class Args:
    """A tool's command line: `--flag value`, `--flag=value`, bare flags and positionals."""

    VALUED = frozenset(
        {"-r", "--relation", "--label", "--description", "--expire", "--rotate", "--owner"}
        | {"--log-level", "--unit", "--app-name", "--revision", "--file", "--application"}
    )
    BARE = frozenset({"--app", "--refresh", "--peek", "--include-data", "--now", "--all"})

    def __init__(self, argv: list[str]) -> None:
        self.options: dict[str, str] = {}
        self.flags: set[str] = set()
        self.positional: list[str] = []
        words = iter(argv)
        for word in words:
            if word == "--":
                self.positional.extend(words)
                break
            name, equals, value = word.partition("=")
            if word.startswith("-") and equals:
                self.options[name] = value
            elif word in self.VALUED:
                self.options[word] = next(words, "")
            elif word in self.BARE or word.startswith("--format"):
                self.flags.add(word)
            else:
                self.positional.append(word)


# -- the unit and its application -----------------------------------------------------------


def juju_log(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`juju-log --log-level L -- message`: the message joins the unit's log."""
    level = args.options.get("--log-level", "INFO")
    model.setdefault("log", []).append([level, " ".join(args.positional)])


def config_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`config-get --format=json [key]`: every option set or defaulted, or one (null if not)."""
    config = model["config"]
    return config.get(args.positional[0]) if args.positional else config


def is_leader(model: dict[str, Any], _args: Args, _stdin: str | None) -> Any:
    """`is-leader --format=json`: true or false."""
    return bool(model["leader"])


def status_set(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`status-set --application=B status [-- message]`; the application's needs the leader."""
    app = args.options.get("--application", "False").lower() == "true"
    if app and not model["leader"]:
        raise ToolError("setting application status: this unit is not the leader")
    status, *message = args.positional
    target = "app" if app else "unit"
    model["status"][target] = {"status": status, "message": " ".join(message)}
    model.setdefault("status_history", []).append([target, status, " ".join(message)])


def status_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`status-get --include-data --format=json --application=B`, shaped as Juju prints it."""
    unit = dict(model["status"]["unit"], **{"status-data": {}})
    if args.options.get("--application", "false").lower() != "true":
        return unit
    if not model["leader"]:
        raise ToolError("finding application status: this unit is not the leader")
    app = dict(model["status"]["app"], **{"status-data": {}})
    return {"application-status": app, "units": {model["unit"]: unit}}


def application_version_set(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`application-version-set -- version`."""
    model["version"] = " ".join(args.positional)


def resource_get(model: dict[str, Any], args: Args, _stdin: str | None) -> str:
    """`resource-get name`: the path of the attached file (plain text, no --format)."""
    name = args.positional[0]
    if name not in model["resources"]:
        raise ToolError(f'could not download resource: resource "{name}" not found')
    return model["resources"][name] + "\n"


def network_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`network-get --format=json [-r id] binding`: the unit's one address."""
    address = model["address"]
    network = ipaddress.ip_interface(f"{address}/24").network
    return {
        "bind-addresses": [
            {
                "mac-address": "",
                "interface-name": "eth0",
                "addresses": [{"hostname": "", "value": address, "cidr": str(network)}],
            }
        ],
        "egress-subnets": [f"{address}/32"],
        "ingress-addresses": [address],
    }


def opened_ports(model: dict[str, Any], _args: Args, _stdin: str | None) -> Any:
    """`opened-ports --format=json`: e.g. ["9997/tcp"]."""
    return model.setdefault("ports", [])


def open_port(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`open-port port/protocol` (ops sends `tcp 9997` as `9997/tcp` or the bare protocol)."""
    port = _port(args.positional)
    if port not in model.setdefault("ports", []):
        model["ports"].append(port)


def close_port(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`close-port port/protocol`."""
    port = _port(args.positional)
    model["ports"] = [opened for opened in model.setdefault("ports", []) if opened != port]


def _port(words: list[str]) -> str:
    return "/".join(words) if len(words) == 1 else f"{words[1]}/{words[0]}"


def state_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`state-get --format=json [key]`: the unit's server-side state."""
    state = model.setdefault("state", {})
    return state.get(args.positional[0]) if args.positional else state


def state_set(model: dict[str, Any], _args: Args, stdin: str | None) -> None:
    """`state-set --file -`: the JSON mapping on stdin merged in."""
    model.setdefault("state", {}).update(json.loads(stdin or "{}"))


def state_delete(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`state-delete key`."""
    model.setdefault("state", {}).pop(args.positional[0], None)


# -- relations --------------------------------------------------------------------------------


def relation_ids(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`relation-ids endpoint --format=json`: ["endpoint:id", ...]."""
    endpoint = args.positional[0]
    return [
        f"{endpoint}:{rid}" for rid, r in model["relations"].items() if r["endpoint"] == endpoint
    ]


def relation_list(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`relation-list --format=json [--app] -r ref`: the remote units, or the remote app."""
    relation = _relation(model, args)
    return relation["app"] if "--app" in args.flags else relation["units"]


def relation_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`relation-get --format=json [-r ref] [--app] key|- member`.

    A follower cannot read its own application's databag (except a peer relation's).
    """
    relation = _relation(model, args)
    key, member = [*args.positional, "-", os.environ.get("JUJU_REMOTE_UNIT", "")][:2]
    own_app = member == model["unit"].split("/")[0]
    if own_app and not model["leader"] and not relation.get("peer"):
        raise ToolError("permission denied")
    data = relation["data"].get(member)
    if data is None:
        raise ToolError(f'cannot read settings for unit "{member}": permission denied')
    return data if key == "-" else data.get(key)


def relation_set(model: dict[str, Any], args: Args, stdin: str | None) -> None:
    """`relation-set [-r ref] [--app] --file -`: JSON on stdin; "" deletes; app needs leader."""
    relation = _relation(model, args)
    unit = model["unit"]
    member = unit.split("/")[0] if "--app" in args.flags else unit
    if "--app" in args.flags and not model["leader"]:
        raise ToolError("cannot write relation settings: permission denied")
    databag = relation["data"].setdefault(member, {})
    for key, value in json.loads(stdin or "{}").items():
        if value == "":
            databag.pop(key, None)
        else:
            databag[key] = value


def relation_model_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`relation-model-get --format=json [-r ref]`: the remote application's model."""
    _relation(model, args)
    return {"uuid": model["model_uuid"]}


def _relation(model: dict[str, Any], args: Args) -> dict[str, Any]:
    reference = args.options.get("-r") or os.environ.get("JUJU_RELATION_ID", "")
    endpoint, _, number = reference.rpartition(":")
    relation = model["relations"].get(number)
    if relation is None or (endpoint and relation["endpoint"] != endpoint):
        raise ToolError(f'invalid value "{reference}" for option -r: relation not found')
    return relation


# -- secrets ----------------------------------------------------------------------------------


def secret_add(model: dict[str, Any], args: Args, _stdin: str | None) -> str:
    """`secret-add [--label] [--description] [--owner] key#file=path...`: a new secret's id."""
    owner = _owner(model, args.options.get("--owner", "application"))
    secret_id = "secret:" + "".join(secrets.choice(XID_ALPHABET) for _ in range(20))
    model["secrets"][secret_id] = {
        "owner": owner,
        "label": args.options.get("--label", ""),
        "description": args.options.get("--description", ""),
        "revisions": {"1": _content(args.positional)},
        "latest": 1,
        "grants": [],
    }
    return secret_id + "\n"


def secret_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`secret-get --format=json [id] [--label] [--refresh|--peek]`.

    The owner sees the latest revision; a consumer the revision it tracks (the latest when it
    first looks), moved on by --refresh, looked past by --peek. With an id, --label names it.
    """
    secret_id, secret = _secret(model, args)
    if secret["owner"] in _owners(model):
        revision = secret["latest"]
        if args.positional and "--label" in args.options:
            secret["label"] = args.options["--label"]
    else:
        consumer = secret.setdefault("consumer", {})
        if "--label" in args.options:
            consumer["label"] = args.options["--label"]
        if "--refresh" in args.flags or "tracked" not in consumer:
            consumer["tracked"] = secret["latest"]
        revision = secret["latest"] if "--peek" in args.flags else consumer["tracked"]
    del secret_id
    return secret["revisions"][str(revision)]


def secret_info_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`secret-info-get --format=json id|--label`: the owner's view, {id: {...}}."""
    secret_id, secret = _secret(model, args)
    if secret["owner"] not in _owners(model):
        raise ToolError(f'secret "{secret_id}" not found')
    info = {
        "revision": secret["latest"],
        "label": secret["label"],
        "description": secret["description"],
        "owner": "unit" if "/" in secret["owner"] else "application",
        "rotation": "never",
    }
    return {secret_id.removeprefix("secret:"): info}


def secret_set(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`secret-set id [--label] [--description] [key#file=path...]`: content is a revision."""
    secret_id, secret = _secret(model, args)
    if secret["owner"] not in _owners(model):
        raise ToolError(f'secret "{secret_id}" not found')
    for option, key in (("--label", "label"), ("--description", "description")):
        if option in args.options:
            secret[key] = args.options[option]
    content = _content(args.positional[1:])
    if content:
        secret["latest"] += 1
        secret["revisions"][str(secret["latest"])] = content


def secret_ids(model: dict[str, Any], _args: Args, _stdin: str | None) -> Any:
    """`secret-ids --format=json`: the ids of the secrets this unit or its app owns."""
    return [sid for sid, secret in model["secrets"].items() if secret["owner"] in _owners(model)]


def secret_grant(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`secret-grant --relation N [--unit U] id`."""
    _, secret = _secret(model, args)
    secret["grants"].append([args.options.get("--relation"), args.options.get("--unit")])


def secret_revoke(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`secret-revoke [--relation N] [--unit U] id`."""
    _, secret = _secret(model, args)
    grant = [args.options.get("--relation"), args.options.get("--unit")]
    secret["grants"] = [given for given in secret["grants"] if given != grant]


def secret_remove(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`secret-remove id [--revision N]`."""
    secret_id, secret = _secret(model, args)
    if secret["owner"] not in _owners(model):
        raise ToolError(f'secret "{secret_id}" not found')
    revision = args.options.get("--revision")
    if revision is None:
        del model["secrets"][secret_id]
    else:
        secret["revisions"].pop(revision, None)


def _owner(model: dict[str, Any], kind: str) -> str:
    if kind == "unit":
        return model["unit"]
    if not model["leader"]:
        raise ToolError("cannot create an application secret: this unit is not the leader")
    return model["unit"].split("/")[0]


def _owners(model: dict[str, Any]) -> set[str]:
    """Who this unit acts as: itself, and its application when it leads."""
    unit = model["unit"]
    return {unit, unit.split("/")[0]} if model["leader"] else {unit}


def _secret(model: dict[str, Any], args: Args) -> tuple[str, dict[str, Any]]:
    wanted = next((word for word in args.positional if word.startswith("secret:")), None)
    if wanted is None and args.positional and "#" not in args.positional[0]:
        wanted = f"secret:{args.positional[0]}"
    if wanted is not None:
        wanted = "secret:" + wanted.rsplit("/", 1)[-1].removeprefix("secret:")
        if wanted in model["secrets"]:
            return wanted, model["secrets"][wanted]
        raise ToolError(f'secret "{wanted}" not found')
    label = args.options.get("--label", "")
    for secret_id, secret in model["secrets"].items():
        if label and label in (secret["label"], secret.get("consumer", {}).get("label")):
            return secret_id, secret
    raise ToolError(f'secret with label "{label}" not found')


def _content(words: list[str]) -> dict[str, str]:
    content: dict[str, str] = {}
    for word in words:
        key, _, value = word.partition("=")
        if key.endswith("#file"):
            content[key.removesuffix("#file")] = Path(value).read_text()
        elif key:
            content[key] = value
    return content


# -- actions ----------------------------------------------------------------------------------


def action_get(model: dict[str, Any], args: Args, _stdin: str | None) -> Any:
    """`action-get --format=json [key]`: the running action's parameters."""
    params = _action(model)["params"]
    return params.get(args.positional[0]) if args.positional else params


def action_set(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`action-set key=value...` (ops flattens nested results to dotted keys)."""
    results = _action(model).setdefault("results", {})
    for word in args.positional:
        key, _, value = word.partition("=")
        results[key] = value


def action_log(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`action-log -- message`."""
    _action(model).setdefault("log", []).append(" ".join(args.positional))


def action_fail(model: dict[str, Any], args: Args, _stdin: str | None) -> None:
    """`action-fail [-- message]`: the action fails (Juju's default message when none)."""
    _action(model)["failed"] = " ".join(args.positional) or "action failed without reason given"


def _action(model: dict[str, Any]) -> dict[str, Any]:
    action = model.get("action")
    if not action:
        raise ToolError("not running an action")
    return action


HANDLERS = {
    "juju-log": juju_log,
    "config-get": config_get,
    "is-leader": is_leader,
    "status-set": status_set,
    "status-get": status_get,
    "application-version-set": application_version_set,
    "resource-get": resource_get,
    "network-get": network_get,
    "opened-ports": opened_ports,
    "open-port": open_port,
    "close-port": close_port,
    "state-get": state_get,
    "state-set": state_set,
    "state-delete": state_delete,
    "relation-ids": relation_ids,
    "relation-list": relation_list,
    "relation-get": relation_get,
    "relation-set": relation_set,
    "relation-model-get": relation_model_get,
    "secret-add": secret_add,
    "secret-get": secret_get,
    "secret-info-get": secret_info_get,
    "secret-set": secret_set,
    "secret-ids": secret_ids,
    "secret-grant": secret_grant,
    "secret-revoke": secret_revoke,
    "secret-remove": secret_remove,
    "action-get": action_get,
    "action-set": action_set,
    "action-log": action_log,
    "action-fail": action_fail,
}
# Juju's other hook tools: linked so that a call is recorded and fails naming the tool.
UNMODELLED = (
    "add-metric",
    "credential-get",
    "goal-state",
    "juju-reboot",
    "leader-get",
    "leader-set",
    "payload-register",
    "payload-status-set",
    "payload-unregister",
    "pod-spec-get",
    "pod-spec-set",
    "storage-add",
    "storage-get",
    "storage-list",
    "unit-get",
)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[0]).name, sys.argv[1:]))
