import ops
from ops import testing

from charm import GarmCharm


def test_start_reports_a_status():
    """Arrange: a fresh unit. Act: start. Assert: collect-status sets a unit status."""
    ctx = testing.Context(GarmCharm)

    state = ctx.run(ctx.on.start(), testing.State())

    assert isinstance(state.unit_status, ops.StatusBase)
