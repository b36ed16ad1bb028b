"""The sandbox of the charm's root oneshots, and the directives all of the charm's units share.

The oneshots are the lease watchdog and the reconcile tick; GARM's unit (`rendering`) and the
exporter's take `PROTECT_KERNEL` and `RESTRICT` from here too. Both oneshots run as root, for what
they do is a root's job: the watchdog runs `systemctl stop`, which systemd grants to uid 0 on its
private socket (no capability needed), and the tick's `juju-exec` asks the unit agent, through the
agent's root-only socket under `/var/lib/juju/agents`, to run the hook; the hook runs in the agent,
outside this sandbox. So neither needs a capability, a writable file, a device, another user's view
or GARM's secrets: `systemd-analyze security` rates them at most 2.0 (docs/reference/garm-charm.md,
"systemd units", measured by tests/e2e/test_systemd_units.py).

The watchdog needs no network at all (`PrivateNetwork=`). The tick keeps the host's network
namespace and loopback, as a Unix socket's abstract name and any agent listening on 127.0.0.1
live there; nothing beyond loopback.
"""

from __future__ import annotations

# Two blocks of directives every unit the charm writes has (its oneshots here, GARM's in
# `rendering`, the exporter's): the kernel, clock, cgroups and other processes hidden or
# protected; no namespaces, realtime, set-uid, personality changes, writable code or left-over
# IPC. Each unit places them where its file has always had them, so no file changes.
PROTECT_KERNEL = """\
ProtectHostname=yes
ProtectClock=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectProc=invisible
ProcSubset=pid"""
RESTRICT = """\
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RemoveIPC=yes"""

_COMMON = f"""\
UMask=0077
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
InaccessiblePaths=-/etc/garm -/var/lib/garm
PrivateTmp=yes
PrivateDevices=yes
DevicePolicy=closed
PrivateMounts=yes
{PROTECT_KERNEL}
{RESTRICT}
KeyringMode=private
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
"""

WATCHDOG = (
    _COMMON
    + """\
SystemCallFilter=~@privileged @resources
PrivateNetwork=yes
RestrictAddressFamilies=AF_UNIX
IPAddressDeny=any
"""
)

# No `~@resources`: juju-exec is a Go program, and Go raises its open-files limit at start.
TICK = (
    _COMMON
    + """\
SystemCallFilter=~@privileged
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
IPAddressDeny=any
IPAddressAllow=localhost
"""
)
