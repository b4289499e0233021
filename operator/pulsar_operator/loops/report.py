"""What a loop reports besides its actions: Kubernetes Events and status conditions.

Pure records; the driver posts the events (kopf's event API) and merges the conditions.
"""

from __future__ import annotations

import dataclasses

NORMAL = "Normal"
WARNING = "Warning"


@dataclasses.dataclass(frozen=True)
class Event:
    """One decision, as an Event on the PulsarCluster (reason in CamelCase)."""

    type: str
    reason: str
    message: str
