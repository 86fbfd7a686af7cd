"""Task mapping: which host (and slot) each MPI rank runs on.

``linear`` fills each host in turn (ranks 0..k-1 on the first host, the next k on the second ...).
``random`` places the same ranks on the same slots, shuffled with a seeded generator, so a
mapping is reproducible from (policy, seed) and recorded with every result.

Writers give the mapping in the form a launcher reads: an Open MPI rankfile, an ordered
hostfile (MPICH, ``mpirun --map-by seq``) or a Slurm hostfile for ``--distribution=arbitrary``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ibtool.bench.hosts import Host
from ibtool.errors import InputError

POLICIES = ("linear", "random")


@dataclass
class Mapping:
    policy: str
    seed: int | None
    ranks: list[tuple[Host, int]]  # rank -> (host, slot)

    @property
    def nprocs(self) -> int:
        return len(self.ranks)

    def is_block(self) -> bool:
        """True when each host holds one contiguous range of ranks, of equal size (Graph500's rule)."""
        runs, last = [], None
        for h, _ in self.ranks:
            if h.name != last:
                runs.append(h.name)
                last = h.name
        counts = {n: sum(1 for h, _ in self.ranks if h.name == n) for n in runs}
        return len(runs) == len(set(runs)) and len(set(counts.values())) == 1

    def rankfile(self) -> str:
        return "".join(f"rank {i}={h.address} slot={s}\n" for i, (h, s) in enumerate(self.ranks))

    def hostfile(self) -> str:
        """Ordered hostfile: line i is the host of rank i."""
        return "".join(f"{h.address}\n" for h, _ in self.ranks)

    def slurm_hostfile(self) -> str:
        """SLURM_HOSTFILE for srun --distribution=arbitrary: line i is the node name of rank i."""
        return "".join(f"{h.name}\n" for h, _ in self.ranks)

    def as_dict(self) -> dict:
        return {"policy": self.policy, "seed": self.seed,
                "ranks": [{"rank": i, "host": h.name, "address": h.address, "slot": s}
                          for i, (h, s) in enumerate(self.ranks)]}


def machines(addresses) -> set[str]:
    """The machines behind these host addresses: every loopback address (127.0.0.0/8, ::1,
    localhost) is this one. Ranks that all share one machine talk over its memory, not the network."""
    import ipaddress
    out = set()
    for a in addresses:
        a = str(a).strip().lower()
        try:
            loop = ipaddress.ip_address(a).is_loopback
        except ValueError:
            loop = a in ("localhost", "localhost.localdomain", "ip6-localhost")
        out.add("this host (loopback)" if loop else a)
    return out


def make(policy: str, hosts: list[Host], nprocs: int, seed: int | None = None) -> Mapping:
    if policy not in POLICIES:
        raise InputError(f"unknown mapping {policy!r} (known: {', '.join(POLICIES)})")
    if not hosts:
        raise InputError("a mapping needs at least one host")
    if nprocs < 1:
        raise InputError("a mapping needs at least one rank")
    per_host = -(-nprocs // len(hosts))  # ceil: block distribution, oversubscribing slots if needed
    ranks = [(hosts[i // per_host], i % per_host) for i in range(nprocs)]
    if policy == "random":
        if seed is None:
            raise InputError("random mapping needs a seed")
        random.Random(seed).shuffle(ranks)
    return Mapping(policy, seed if policy == "random" else None, ranks)
