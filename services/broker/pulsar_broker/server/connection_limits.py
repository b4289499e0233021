"""How many connections a listener holds, in all and per client address.

Each accepted connection asks `admit` first; a refused one is closed at
once, so its file descriptor is back before the next accept. This is
Apache's `brokerMaxConnections` / `brokerMaxConnectionsPerIp` for the binary
protocol (the HTTP listener counts its own, see web/http_limits.py). Pure
bookkeeping: the listener owns the sockets.
"""

from __future__ import annotations

import collections


class ConnectionLimits:
    """Counts admitted connections; 0 means no limit for either bound."""

    def __init__(self, max_connections: int, max_connections_per_ip: int = 0) -> None:
        if max_connections < 0 or max_connections_per_ip < 0:
            raise ValueError("connection limits must be 0 (no limit) or more")
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self._per_ip: collections.Counter[str] = collections.Counter()
        self.connections = 0
        #: Connections refused since the start.
        self.refused = 0

    def admit(self, address: str) -> str | None:
        """Count a new connection from address; None when admitted, else why it is not."""
        if self.max_connections and self.connections >= self.max_connections:
            reason = f"reached the maximum number of connections ({self.max_connections})"
        elif self.max_connections_per_ip and self._per_ip[address] >= self.max_connections_per_ip:
            reason = (f"reached the maximum number of connections per address "
                      f"({self.max_connections_per_ip})")
        else:
            self.connections += 1
            self._per_ip[address] += 1
            return None
        self.refused += 1
        return reason

    def release(self, address: str) -> None:
        """An admitted connection from address closed."""
        self.connections -= 1
        self._per_ip[address] -= 1
        if self._per_ip[address] <= 0:
            del self._per_ip[address]
