"""Test doubles both suites share: the in-memory GARM, the recording workload, relation data.

The charm's unit tests reach them through their pytest `pythonpath` (`../../tests`); the
repository's suites and scripts through `tests/` on theirs. Nothing here imports a test module.
"""
