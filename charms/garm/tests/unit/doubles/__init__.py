"""Doubles that stand in for the machine in the charm's unit tests."""
