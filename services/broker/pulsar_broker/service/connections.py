"""The broker's binary-protocol connections over all its listeners: how many it holds, in
all and per client address, and what has become of them since it started.

Every accepted connection, on any listener (plain, TLS, each advertised
listener), asks `admit` first; a refused one is closed at once, so its file
descriptor is back before the next accept. The bounds are Apache's
`brokerMaxConnections` / `brokerMaxConnectionsPerIp`, which hold for the
broker as a whole, as in Apache (the HTTP listener counts its own, see
web/http_limits.py). The counts are those /metrics exports as
`pulsar_active_connections`, `pulsar_connection_created_total_count`,
`pulsar_connection_create_success_count`, `pulsar_connection_create_fail_count` and
`pulsar_connection_closed_total_count`. Pure bookkeeping: the listeners own the sockets.
"""

from __future__ import annotations

import collections


class BrokerConnections:
    """Counts connections; 0 means no limit for either bound."""

    def __init__(self, max_connections: int, max_connections_per_ip: int = 0) -> None:
        if max_connections < 0 or max_connections_per_ip < 0:
            raise ValueError("connection limits must be 0 (no limit) or more")
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self._per_ip: collections.Counter[str] = collections.Counter()
        #: Connections admitted since the start (Apache's created total).
        self.created = 0
        #: Admitted connections that have closed since.
        self.closed = 0
        #: Connections whose CONNECT was accepted.
        self.create_succeeded = 0
        #: Connections refused: over a limit, or their CONNECT failed authentication.
        self.create_failed = 0

    @property
    def active(self) -> int:
        """Admitted connections still open."""
        return self.created - self.closed

    def admit(self, address: str) -> str | None:
        """Count a new connection from address; None when admitted, else why it is not."""
        if self.max_connections and self.active >= self.max_connections:
            reason = f"reached the maximum number of connections ({self.max_connections})"
        elif self.max_connections_per_ip and self._per_ip[address] >= self.max_connections_per_ip:
            reason = (f"reached the maximum number of connections per address "
                      f"({self.max_connections_per_ip})")
        else:
            self.created += 1
            self._per_ip[address] += 1
            return None
        self.create_failed += 1
        return reason

    def connected(self) -> None:
        """An admitted connection's CONNECT was accepted."""
        self.create_succeeded += 1

    def connect_refused(self) -> None:
        """An admitted connection's CONNECT was refused (it closes)."""
        self.create_failed += 1

    def release(self, address: str) -> None:
        """An admitted connection from address closed."""
        self.closed += 1
        self._per_ip[address] -= 1
        if self._per_ip[address] <= 0:
            del self._per_ip[address]
