"""A host of the inventory and how to reach it over SSH: the type the inventory reads, the task
mapping places ranks on and the SSH runner connects to (below all three, so none imports another
for it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SSHConfig:
    user: str | None = None
    port: int = 22
    key: str | None = None
    known_hosts: str | None = None  # None: the user's ~/.ssh/known_hosts (and the system's)
    jump: str | None = None  # a host name of the inventory, or [user@]address[:port]
    connect_timeout: float = 10.0


@dataclass
class Host:
    name: str
    address: str
    slots: int = 1
    ssh: SSHConfig = field(default_factory=SSHConfig)
    compute: bool = True  # False: reachable (SM node, login node) but never given ranks by default

    def where(self) -> str:
        return f"{self.name} ({self.address}:{self.ssh.port})"
