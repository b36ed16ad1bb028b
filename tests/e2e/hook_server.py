"""garm's hooks, run inside the e2e container: `ops.testing` there, the test's state sent in.

Started by `container_machine.py` inside the container (its Python and the checkout are the
machine's own, seen through the overlay), as root, as Juju runs hooks. The charm runs with its
real `Workload`, tick and exporter at their production paths, so the units it renders are the
ones a machine gets, and every `systemctl` it calls goes to the container's systemd.

Protocol, on stdin and stdout: a request is a length-prefixed pickle of (event, state,
environment), the environment being the variables the hook sees from Juju (the model's proxy);
the reply is a length-prefixed pickle of a dict: the output state or the failure, and what the
context recorded (the unit's status history, action results, emitted events). Anything the
charm prints goes to stderr. EOF on stdin ends the server.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import traceback
from typing import IO, Any

HEADER = struct.Struct("!Q")
# The variables a request may set; any other of the server's environment stays as it is.
JUJU_PREFIX = "JUJU_"


def main() -> int:
    """Serve hooks until stdin closes."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the charm's prints must never land in the protocol
    from ops import testing  # noqa: PLC0415 - after the descriptors are set

    import charm  # noqa: PLC0415

    context = testing.Context(charm.GarmCharm)
    requests = sys.stdin.buffer
    while (request := read(requests)) is not None:
        event, state, environment = request
        set_juju_environment(environment)
        write(replies, run(context, event, state))
    return 0


def run(context: Any, event: Any, state: Any) -> dict[str, Any]:
    """One hook; the reply to send."""
    from ops import testing  # noqa: PLC0415

    reply: dict[str, Any] = {}
    try:
        reply["state"] = context.run(event, state)
    except testing.ActionFailed as failure:
        reply["action_failed"] = (failure.message, failure.state)
    except Exception:  # every failure goes back to the test, which raises it
        reply["error"] = traceback.format_exc()
    reply["unit_status_history"] = list(context.unit_status_history)
    reply["action_results"] = context.action_results
    reply["emitted"] = [type(emitted).__name__ for emitted in context.emitted_events]
    context.emitted_events.clear()
    return reply


def set_juju_environment(environment: dict[str, str]) -> None:
    """Juju's variables as the test set them: given ones set, others removed."""
    for name in [name for name in os.environ if name.startswith(JUJU_PREFIX)]:
        if name not in environment:
            del os.environ[name]
    os.environ.update(environment)


def read(stream: IO[bytes]) -> Any:
    """One request, or None at EOF."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    # Both ends are this checkout's own code: the pickles come from the test, nowhere else.
    return pickle.loads(stream.read(size))  # noqa: S301


def write(stream: IO[bytes], message: Any) -> None:
    """One length-prefixed pickle."""
    data = pickle.dumps(message)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


if __name__ == "__main__":
    sys.exit(main())
