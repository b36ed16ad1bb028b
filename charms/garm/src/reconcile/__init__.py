"""GARM's objects made to match what the charm wants: bootstrap, GitHub objects, templates.

Decisions in pure code, calls through `garm_api`; scale sets are `scaleset_reconciler`'s job.
Nothing here imports ops.
"""
