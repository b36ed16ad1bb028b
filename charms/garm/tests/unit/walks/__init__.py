"""Shared walks of the charm's unit tests (not tests themselves)."""
