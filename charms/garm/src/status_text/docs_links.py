"""Where the published documentation lives, for status texts that point an operator to it.

Status texts link the published pages, never repository paths: someone who deployed from
Charmhub has no checkout. `scripts/check_docs.py` fails when a linked page does not exist.
"""

from typing import Final

DOCS_URL: Final = "https://github.com/canonical/garm-operator/blob/main/docs"
SWITCH_DATABASE: Final = f"{DOCS_URL}/how-to/switch-database.md"
RESET_ADMIN_PASSWORD: Final = f"{DOCS_URL}/how-to/admin-password.md"
