"""An option of the wrong type is a problem naming the option, never a crash of the hook.

Juju hands string options as strings; the list options are split before the model checks
them, and that splitting must leave anything else to the model's own type check.
"""

from collections.abc import Callable
from typing import Any

import pytest

from configurator_config import InvalidConfigError, load_config

Reader = Callable[[str, str], str]


@pytest.mark.parametrize("option", ["labels", "aproxy-exclude-addresses", "pre-install-scripts"])
def test_a_list_option_that_is_not_text_names_the_option(
    valid_config: dict[str, Any], secret_reader: Reader, option: str
):
    """Arrange: a valid config whose `option` is a number, not text.

    Act: load it. Assert: InvalidConfigError with one problem, naming `option`.
    """
    valid_config[option] = 5

    with pytest.raises(InvalidConfigError) as caught:
        load_config(valid_config, secret_reader)

    (problem,) = [str(problem) for problem in caught.value.problems]
    assert problem.startswith(f"config {option!r}")
