"""Test fabrics: KNS plans, the same fabric 'as cabled' with faults, and small fat trees.

`cabled()` rewrites every GUID and node description (as a real fabric's differ from the plan's)
and applies faults given by plan names, returning the new fabric and what was done, in plan terms.
"""

from __future__ import annotations

import random
import re

from ibtool.fabric import SWITCH, Fabric


def copy_fabric(src: Fabric, links, rename=None, reguid=None, rates=None) -> Fabric:
    f = Fabric(src.name + "-cabled")
    for i in range(src.num_nodes):
        name = rename(i) if rename else src.names[i]
        guid = reguid(i) if reguid else src.guids[i]
        f.add_node(src.types[i], name, src.nports[i], src.roles[i], dict(src.labels[i]), guid=guid)
    for li, (a, pa, b, pb) in enumerate(links):
        f.add_link(a, b, pa, pb, rate=(rates or {}).get(li))
    return f


def links_of(f: Fabric) -> list[list[int]]:
    return [[a, pa, b, pb] for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb)]


def free_ports(f: Fabric, links, node: int) -> list[int]:
    used = {pa for a, pa, b, pb in links if a == node} | {pb for a, pa, b, pb in links if b == node}
    return [p for p in range(1, f.nports[node] + 1) if p not in used]


class Cabling:
    """Faults applied to a copy of a plan, recorded as (kind, plan-name facts) for assertions."""

    def __init__(self, plan: Fabric, seed: int = 7):
        self.plan = plan
        self.links = links_of(plan)
        self.rates: dict[int, str] = {}
        self.rng = random.Random(seed)
        self.seed = seed
        self.done: list[tuple] = []
        self.touched: set[int] = set()  # link indices already faulted
        self.removed: set[int] = set()

    def _find(self, a: str, pa: int) -> int:
        i = self.plan.index(a)
        for li, (x, px, y, py) in enumerate(self.links):
            if (x == i and px == pa) or (y == i and py == pa):
                return li
        raise KeyError((a, pa))

    def move(self, a: str, pa: int, to: str | None = None, to_port: int | None = None):
        """Unplug the far end of the cable at a[pa] and plug it into a free port (of `to`, or of the
        device it was on). Records (anchor a[pa], wrong end, right end)."""
        li = self._find(a, pa)
        x, px, y, py = self.links[li]
        if (self.plan.names[x], px) != (a, pa):
            x, px, y, py = y, py, x, px
        dest = self.plan.index(to) if to else y
        # a port free in the plan and still free now
        port = to_port or [p for p in free_ports(self.plan, self.links, dest)
                           if p in free_ports(self.plan, links_of(self.plan), dest)][0]
        self.links[li] = [x, px, dest, port]
        self.touched.add(li)
        self.done.append(("move", f"{a}[{pa}]", f"{self.plan.names[dest]}[{port}]", f"{self.plan.names[y]}[{py}]"))

    def swap(self, a: str, pa: int, c: str, pc: int):
        """Swap the far ends of the cables at a[pa] and c[pc]."""
        l1, l2 = self._find(a, pa), self._find(c, pc)
        x1, p1, y1, q1 = self.links[l1]
        if (self.plan.names[x1], p1) != (a, pa):
            x1, p1, y1, q1 = y1, q1, x1, p1
        x2, p2, y2, q2 = self.links[l2]
        if (self.plan.names[x2], p2) != (c, pc):
            x2, p2, y2, q2 = y2, q2, x2, p2
        self.links[l1] = [x1, p1, y2, q2]
        self.links[l2] = [x2, p2, y1, q1]
        self.touched |= {l1, l2}
        n = self.plan.names
        self.done.append(("swap", f"{a}[{pa}]", f"{n[y2]}[{q2}]", f"{n[y1]}[{q1}]"))
        self.done.append(("swap", f"{c}[{pc}]", f"{n[y1]}[{q1}]", f"{n[y2]}[{q2}]"))

    def remove(self, a: str, pa: int):
        li = self._find(a, pa)
        x, px, y, py = self.links[li]
        self.removed.add(li)
        self.done.append(("missing", frozenset((f"{self.plan.names[x]}[{px}]", f"{self.plan.names[y]}[{py}]"))))

    def degrade(self, a: str, pa: int, rate: str):
        li = self._find(a, pa)
        self.rates[li] = rate
        x, px, y, py = self.links[li]
        self.done.append(("degraded", frozenset((f"{self.plan.names[x]}[{px}]", f"{self.plan.names[y]}[{py}]")), rate))

    def build(self, disguise: bool = True, rate: str = "4xEDR") -> Fabric:
        """The fabric as cabled; disguise=True gives every device a new GUID and description."""
        keep = [li for li in range(len(self.links)) if li not in self.removed]
        links = [self.links[li] for li in keep]
        rates = {k: self.rates.get(li, rate) for k, li in enumerate(keep)}
        order = list(range(self.plan.num_nodes))
        random.Random(self.seed).shuffle(order)  # the same disguise every time
        newid = {i: k for k, i in enumerate(order)}
        if disguise:
            def rename(i):
                kind = "MF0;sw" if self.plan.types[i] == SWITCH else "node"
                return f"{kind}-{newid[i]:04d}:MQM8700/U1" if self.plan.types[i] == SWITCH else \
                    f"{kind}{newid[i]:04d} HCA-1"

            def reguid(i):
                return 0x0008F10500000000 | (newid[i] + 1) << 4
            return copy_fabric(self.plan, links, rename, reguid, rates)
        return copy_fabric(self.plan, links, rates=rates)


def fat_tree(k: int = 4, name: str = "fattree") -> Fabric:
    """A 2-level fat tree (folded Clos): k leaves of radix 2k (k HCAs down, k up), k spines."""
    f = Fabric(name)
    spines = [f.add_switch(f"spine{j}", 2 * k, role="spine") for j in range(k)]
    for i in range(k):
        leaf = f.add_switch(f"leaf{i}", 2 * k, role="leaf")
        for h in range(k):
            ca = f.add_hca(f"hca{i}-{h}", 1)
            f.add_link(leaf, ca, h + 1, 1)
        for j, s in enumerate(spines):
            f.add_link(leaf, s, k + j + 1, i + 1)
    return f


def write_net(f: Fabric, path, degraded: dict | None = None) -> None:
    """Write `f` as an ibsim net file; links in `degraded` ({link index: width}) come up that narrow
    (ibsim's `w=` option, on both ends of the link)."""
    from ibtool.formats import ibnetdiscover
    ibnetdiscover.write(f, path)
    if not degraded:
        return
    ids = {ibnetdiscover.node_id(f, i): i for i in range(f.num_nodes)}
    want = {}
    for li, w in degraded.items():
        want[(f.link_a[li], f.link_pa[li])] = w
        want[(f.link_b[li], f.link_pb[li])] = w
    out, cur = [], None
    for line in open(path).read().split("\n"):
        m = re.match(r'^(?:Switch|Ca)\s+\d+\s+"([^"]+)"', line)
        if m:
            cur = ids[m.group(1)]
        m = re.match(r"^\[(\d+)\]", line)
        if m and cur is not None and (cur, int(m.group(1))) in want:
            line = line.split("\t\t#")[0] + f"\tw={want[(cur, int(m.group(1)))]}"
        out.append(line)
    open(path, "w").write("\n".join(out))


def torus_2d(k: int) -> tuple[Fabric, str]:
    """A k x k torus of 8-port switches T[x,y] (port 1 to x+1, 2 from x-1, 3 to y+1, 4 from y-1),
    one HCA H[x,y] on port 5 of each; and the torus-2QoS.conf that seeds OpenSM's torus-2QoS
    (k >= 5: radix 4 would also need the negative-direction seed links)."""
    f = Fabric("torus")
    sw = {(x, y): f.add_switch(f"T[{x},{y}]", 8) for x in range(k) for y in range(k)}
    for (x, y), s in sw.items():
        f.add_link(s, sw[((x + 1) % k, y)], 1, 2)
        f.add_link(s, sw[(x, (y + 1) % k)], 3, 4)
        f.add_link(s, f.add_hca(f"H[{x},{y}]", 1), 5, 1)
    g = lambda x, y: f.guids[sw[(x, y)]]  # noqa: E731
    conf = f"torus {k} {k} 1\nxp_link {g(0, 0):#018x} {g(1, 0):#018x}\nyp_link {g(0, 0):#018x} {g(0, 1):#018x}\n"
    return f, conf
