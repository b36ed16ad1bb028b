"""GARM on this machine: binaries, files, the systemd service and the reconcile tick's timer.

`machine.Workload` is the one object the charm drives; each job lives in its own module
(docs/adr/0012-workload-split-one-job-per-module.md). Nothing here imports ops.
"""
