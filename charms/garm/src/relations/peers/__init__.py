"""The peer relation (`garm-peers`): the one room for what the units tell each other (ADR 0045).

`PeerData` (adapter.py) reads each databag once per hook and writes each once, as the hook
ends; `keys` names every key. What the data decides is pure, beside it: `lease` (GARM's lease,
ADR 0019), `handover` (which unit may run GARM after a leadership change, ADR 0005) and `pause`
(maintenance mode and the drain clock's holds, ADR 0024, ADR 0042).
"""

from relations.peers.adapter import PeerData
from relations.peers.keys import RELATION

__all__ = ["RELATION", "PeerData"]
