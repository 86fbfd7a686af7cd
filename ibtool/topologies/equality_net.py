"""The Equality network itself (paper 002, sections 3.1-3.4): chordal rings of N routers, N even;
its notation, link sets, ports, fabric and distances. The family `ibtool topo equality` is
ibtool.topologies.equality; the genetic search of section 3.3 is ibtool.topologies.equality_search.

Construction. Routers r_0 .. r_{N-1}. The candidate link lengths are C = {2 .. N-3} without the
even numbers above N/2. A network takes odd lengths S_A and even lengths S_B from C, and router
r_i is linked to r_{(i + s) mod N} when i is even and to r_{(i - s) mod N} when i is odd, for every
s in S_A and S_B. So an odd length joins every even router to one odd router (N/2 links, one port
per router); an even length s < N/2 joins the even routers into a circulant with +-s and the odd
ones likewise (N links, two ports per router); the even length N/2 (the ring's diameter) gives
each router one partner (N/2 links, one port): Eq. 1, K = len(S_A) + 2 len(S_B) - [N/2 in S_B].

-1 and 1 in S_A are the ring: 1 joins r_{2m} to r_{2m+1}, -1 joins r_{2m} to r_{2m-1} (read as
N-1, which is why C stops at N-3). Both are always present (the paper's networks are rings with
chords) and count in K, as in Fig. 1's N14K6[-1,1,3,9](4): 4 odd + 2 for the even 4 = 6.

Notation (section 3.2, any case): `N14K6[-1,1,3,9](4)` gives the link sets; `n14k6p3` names the
class (N, K, p) and means "find the link sets" (the genetic search of section 3.3). P may follow
K in the full notation too (`N14K6P4[-1,1,3,9](4)`).

Names and ports. Router r_i is `R[i]`, its HCAs `H[i]` (p = 1) or `H[i]-j`, j = 0..p-1, added
after their router. Router ports 1..p go to the HCAs (port j+1 to H[i]-j, HCA port 1); then one
port per link *label*, in the order of S_A as given, then for each even s: `+s` and `-s` (only one
label for s = N/2). Label +x of r_i reaches r_{i+x} if i is even and r_{i-x} if odd; a link has
the same label at both ends for odd lengths and N/2, and +s at one end meets -s at the other.
So port p+1+l is label l on every router, which is what lets one table serve them all (Eq. 2).

Symmetry (Remark 2): x -> x + 2m and x -> 2m+1 - x map the network onto itself, so
dist(r_i, r_j) = D[(j - i) mod N] for even i and D[(i - j) mod N] for odd i, D the distances from
r_0: one BFS (from r_0; the BFS from r_1 is its mirror) gives diameter and average distance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric

MAX_ROUTERS = 1_000_000


@dataclass(frozen=True)
class Spec:
    n: int
    k: int | None  # as written; checked against Eq. 1
    p: int | None
    sa: tuple[int, ...] | None  # None: the short notation (link sets to be searched)
    sb: tuple[int, ...] | None

    def full(self) -> str:
        """The paper's full notation, e.g. N14K6[-1,1,3,9](4)."""
        return f"N{self.n}K{eq1(self.n, self.sa, self.sb)}[{','.join(map(str, self.sa))}]({','.join(map(str, self.sb))})"

    def short(self) -> str:
        return f"n{self.n}k{self.k}" + (f"p{self.p}" if self.p is not None else "")


_SPEC = re.compile(r"^n(\d+)k(\d+)(?:p(\d+))?(?:\[([^\[\]()]*)\]\(([^\[\]()]*)\))?$", re.IGNORECASE)


def parse_numbers(text: str, what: str, spec: str) -> tuple[int, ...]:
    out = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        if not re.fullmatch(r"[+-]?\d+", tok):
            raise InputError(f"{what} in {spec!r}: {tok!r} is not an integer")
        out.append(int(tok))
    return tuple(out)


def parse_spec(text: str) -> Spec:
    """Read either notation (any case). Raises InputError naming what is wrong."""
    s = text.strip().replace(" ", "")
    if s.count("[") != s.count("]") or s.count("(") != s.count(")"):
        raise InputError(f"--spec {text!r}: unbalanced brackets")
    m = _SPEC.match(s)
    if not m:
        raise InputError(f"--spec {text!r}: expected N<routers>K<radix>[S_A](S_B) (e.g. N14K6[-1,1,3,9](4)) "
                         f"or n<routers>k<radix>p<endpoints> (e.g. n14k6p3)")
    n, k, p, sa, sb = m.groups()
    if sa is None:
        return Spec(int(n), int(k), int(p) if p else None, None, None)
    return Spec(int(n), int(k), int(p) if p else None, parse_numbers(sa, "S_A", text),
                parse_numbers(sb, "S_B", text))


def eq1(n: int, sa, sb) -> int:
    """Inter-router ports per router (Eq. 1)."""
    return len(sa) + 2 * len(sb) - (1 if n // 2 in sb else 0)


def check_n(n: int) -> None:
    if n < 6 or n % 2:
        raise InputError(f"N = {n}: an Equality network needs an even number of routers, at least 6")
    if n > MAX_ROUTERS:
        raise InputError(f"N = {n} routers is beyond what ibtool builds ({MAX_ROUTERS:,})")


def check_sets(n: int, sa, sb) -> None:
    """The candidate set C and the ring; every violation names the number."""
    check_n(n)
    c = f"C = 2..{n - 3} without even numbers above N/2 = {n // 2}"
    for s in sa:
        if s in (-1, 1):
            continue
        if s % 2 == 0:
            raise InputError(f"S_A: {s} is even (S_A holds the odd link lengths; put it in S_B)")
        if not 3 <= s <= n - 3:
            raise InputError(f"S_A: {s} is not in {c}")
    for s in sb:
        if s % 2:
            raise InputError(f"S_B: {s} is odd (S_B holds the even link lengths; put it in S_A)")
        if not 2 <= s <= n // 2:
            raise InputError(f"S_B: {s} is not in {c}")
    for name, xs in (("S_A", sa), ("S_B", sb)):
        seen = set()
        for s in xs:
            if s in seen:
                raise InputError(f"{name}: {s} is listed twice")
            seen.add(s)
    for r in (-1, 1):
        if r not in sa:
            raise InputError(f"S_A: the ring link {r} is missing (S_A always holds -1 and 1)")


def labels(n: int, sa, sb) -> list[int]:
    """Offsets of an even router's links in port order: S_A, then +s, -s for each even s (one
    label for N/2). An odd router's label l reaches the negated offset."""
    out = list(sa)
    for s in sb:
        out += [s] if s == n // 2 else [s, -s]
    return out


def links(n: int, sa, sb):
    """Every inter-router link once, as arrays (u, v, label at u, label at v)."""
    offs = labels(n, sa, sb)
    half = n // 2
    out = []
    for l, o in enumerate(offs):
        if o % 2:  # odd: from each even router (each odd one is its far end)
            u = np.arange(0, n, 2, dtype=np.int64)
            back = l
        elif o == half:  # the ring's diameter: r_i - r_{i+N/2} for the first half
            u = np.arange(half, dtype=np.int64)
            back = l
        elif o > 0:  # even: from every router, +s at u meets -s at v
            u = np.arange(n, dtype=np.int64)
            back = offs.index(-o)
        else:
            continue
        v = np.where(u % 2 == 0, u + o, u - o) % n
        out.append((u, v, np.full(len(u), l), np.full(len(u), back)))
    return tuple(np.concatenate(x) for x in zip(*out))


# ------------------------------------------------------------------------------- evaluation

def distances(n: int, sa, sb) -> np.ndarray:
    """Router hops from r_0 to every r_j (level-synchronous BFS, one numpy step per level)."""
    offs = np.asarray(labels(n, sa, sb), dtype=np.int64)
    dist = np.full(n, -1, dtype=np.int32)
    dist[0] = 0
    frontier = np.zeros(1, dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        sign = 1 - 2 * (frontier & 1)  # even routers add the offset, odd ones subtract it
        nb = (frontier[:, None] + sign[:, None] * offs[None, :]) % n
        nb = nb.ravel()
        nb = nb[dist[nb] < 0]
        dist[nb] = level  # duplicates write the same value
        frontier = np.flatnonzero(dist == level) if nb.size else nb
    if (dist < 0).any():  # cannot happen with the ring; kept as a guard for direct callers
        raise InputError(f"N{n}: routers unreachable from r_0")
    return dist


def metrics(n: int, sa, sb) -> tuple[int, float]:
    """(diameter d, average distance a) over all ordered pairs of distinct routers (Remark 2:
    every router sees the distances r_0 sees)."""
    d = distances(n, sa, sb)
    return int(d.max()), float(d.sum()) / (n - 1)


def semicircle_bisection(n: int, sa, sb) -> tuple[int, float]:
    """Paper 002's own bisection (section 4.3): the fewest links cut by splitting the ring into two
    semicircles, over every split; returns (B in links, B_r = B / (N K / 2)). An upper bound of the
    true bisection, which ibtool.analyze computes for any fabric."""
    h = n // 2
    u, v, _, _ = links(n, sa, sb)
    # the split {t .. t+h-1} cuts u-v iff exactly one end is inside: t in two arcs of length
    # delta (the ends' distance along the ring), counted with a circular difference array
    delta = np.minimum((v - u) % n, (u - v) % n)
    lo = np.where((v - u) % n == delta, u, v)  # the end the other is delta ahead of
    diff = np.zeros(2 * n + 1, dtype=np.int64)
    for start in (lo + 1, lo - h + 1):
        a = start % n
        np.add.at(diff, a, 1)
        np.add.at(diff, a + delta, -1)
    c = np.cumsum(diff)
    cut = c[:n] + c[n:2 * n]  # arcs that ran past N - 1 continue at 0
    b = int(cut.min())
    return b, b / (n * eq1(n, sa, sb) / 2)


def build(n: int, sa, sb, p: int, radix: int, name: str | None = None) -> Fabric:
    """The fabric of N routers with link sets S_A, S_B and p HCAs each (see the module docstring)."""
    f = Fabric(name or f"equality-n{n}k{eq1(n, sa, sb)}p{p}")
    # nodes in order r_0, its HCAs, r_1, ... (GUIDs follow it), added in bulk
    kinds, names, ports, roles, labs = [], [], [], [], []
    for i in range(n):
        kinds.append(SWITCH)
        names.append(f"R[{i}]")
        ports.append(radix)
        roles.append("router")
        labs.append({"index": i})
        kinds += [CA] * p
        names += [f"H[{i}]"] if p == 1 else [f"H[{i}]-{j}" for j in range(p)]
        ports += [1] * p
        roles += ["hca"] * p
        labs += [{"router": i, "index": j} for j in range(p)]
    ids = np.asarray(f.add_nodes(kinds, names, ports, roles, labs), dtype=np.int64).reshape(n, p + 1)
    routers, hcas = ids[:, 0].tolist(), ids[:, 1:].ravel()
    # cabled in bulk (a million-HCA plan has three million links): router r_i port j+1 - H[i]-j port 1
    rt = np.asarray(routers, dtype=np.int64)
    f.add_links(np.repeat(rt, p), hcas, np.tile(np.arange(1, p + 1), n), np.ones(n * p, dtype=np.int64))
    u, v, lu, lv = links(n, sa, sb)
    f.add_links(rt[u], rt[v], lu + p + 1, lv + p + 1)
    return f
