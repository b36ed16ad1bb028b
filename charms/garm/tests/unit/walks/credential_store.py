"""A secret store for the rotation's tests."""

from __future__ import annotations

from collections.abc import Mapping


class Store:
    """App-owned secrets in memory, as `JujuSecretStore` keeps them."""

    def __init__(self, contents: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.contents = {label: dict(content) for label, content in (contents or {}).items()}

    def get(self, label: str) -> Mapping[str, str] | None:
        """The content, or None when absent."""
        return self.contents.get(label)

    def create(self, label: str, content: Mapping[str, str]) -> None:
        """Create a secret."""
        self.contents[label] = dict(content)

    def update(self, label: str, content: Mapping[str, str]) -> None:
        """Give a secret new content."""
        self.contents[label] = dict(content)
