"""Juju relations, one module each: read what the remote side published, publish ours.

The only layer besides the charm modules (`charm*.py`) that imports ops. Each module turns its
relation's data into the plain values the reconcile below works with.
"""
