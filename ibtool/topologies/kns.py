"""KNS: k-ary n-direct s-indirect hybrid topology (paper 000, sections 2.2, 3.2, 3.4).

k^n routers sit at the points of an n-dimensional grid, labelled [r_{n-1},...,r_0] (most
significant dimension first, as in the paper). The k routers that differ only in coordinate d
are joined by a small indirect network of dimension d. Routers are switches, because HCAs
cannot forward; each router serves `hcas_per_router` HCAs, which share its coordinates.

Indirect networks (one per dimension per line of k routers, n*k^(n-1) of them):
* s = 1: one switch S[d,p] of the line's k routers, p = the line's position (the router
  coordinates without dimension d, read as a base-k number, most significant first); router
  with coordinate r_d uses switch ports r_d*m+1 .. r_d*m+m.
* s > 1: a k-ary s-tree (Petrini & Vanneschi) of arity a, the smallest a >= 2 with a^s >= k:
  s stages of a^(s-1) switches S[d,p,l,w] (stage l = 0 at the routers, w the switch's word of
  s-1 base-a digits read as a number). Switch <w,l> links up to <w',l+1> where w' differs from
  w at most in digit l, through up-port (digit value of w'[l]). Router with coordinate r_d
  links (m times) to leaf w = r_d // a, down-ports (r_d % a)*m+1 ...; leaves left without
  routers when k < a^s stay in place, so every line has the same tree.

Router ports: 1..h for HCAs, then for dimension d ports h + d*m + 1 .. h + (d+1)*m.
"""

from __future__ import annotations

import math
from itertools import product

from ibtool import plandir
from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import EngineFile, Param, guid_list, need_ports, radix_param, topology


def kns_engine_files(f: Fabric) -> list[EngineFile]:
    """`qos TRUE`: OpenSM calls hdor's update_sl2vl hook (the SL2VL tables of a degraded KNS,
    docs/hdor.md section 6) only with QoS on; a complete KNS routes identically either way.
    `root_guid_file`: roots for updn, for a plan routed `--engine hdor,updn` (the plan's engine
    after hdor is nue, docs/plugin.md "The fallback"): R[0..0] and the indirect switch on its lowest
    switch port, next to each other (up*/down* from one root, or two adjacent ones, reaches every
    pair on one VL without a credit loop; every indirect switch a root would leave most pairs
    without a route)."""
    qos = [EngineFile("qos", "", "TRUE")]
    r0 = next((x for x in range(f.num_nodes) if f.roles[x] == "router"), None)
    s0 = next((y for _, y, _ in f.neighbors(r0) if f.roles[y] == "switch"), None) if r0 is not None else None
    if s0 is None:  # (a fabric without the builder's roles)
        return qos
    return qos + [EngineFile("root_guid_file", plandir.ROOT_GUIDS, guid_list(f, [r0, s0]))]


def coord_name(prefix: str, coords) -> str:
    return f"{prefix}[{','.join(str(c) for c in coords)}]"


def tree_arity(k: int, s: int) -> int:
    a = 2
    while a ** s < k:
        a += 1
    return a


@topology(
    "kns",
    summary="k-ary n-direct s-indirect hybrid (routers on a k^n grid, one indirect network per line)",
    reference="paper 000, sections 2.2, 3.2, 3.4 (KNS on the CELLIA cluster)",
    example="ibtool topo kns --k 3 --n 2 --s 2 --radix 8 --out kns9   # 9 routers, 24 switches in 2-stage trees\n"
            "  ibtool topo kns --k 6 --n 2 --radix 8 --out cellia   # CELLIA: 36 HCAs, 36 routers + 12 switches",
    engine="hdor,nue",  # after hdor, nue: no credit loop on a KNS hdor declines (docs/plugin.md)
    engine_files=kns_engine_files,
    layout="switch-rack",  # every switch in switch racks, as CELLIA was built (paper 000)
    params=[
        Param("k", int, None, "routers per dimension (k >= 2)", low=2),
        Param("n", int, None, "dimensions (n >= 1)", low=1),
        Param("s", int, 1, "stages of each dimension's indirect network (1 = a single switch)", low=1),
        Param("hcas_per_router", int, 1, "HCAs attached to each router", low=1),
        Param("multiplicity", int, 1, "parallel links between a router and each indirect network", low=1),
        radix_param(36, "ports per switch (IS5022 in CELLIA: 8; SB7800/QM8700: 36; QM9700: 64)"),
    ],
)
def kns(k: int, n: int, s: int = 1, hcas_per_router: int = 1, multiplicity: int = 1,
        radix: int = 36) -> Fabric:
    if n * math.log10(k) > 7:  # without computing k**n, which for absurd n would not finish
        raise InputError(f"k^n = {k}^{n} routers is beyond what ibtool builds (10,000,000)")
    h, m = hcas_per_router, multiplicity
    a = tree_arity(k, s) if s > 1 else k
    if s > 1 and a ** (s - 1) >= k:
        raise InputError(f"--s {s} is more stages than k={k} needs: a {s - 1}-stage tree of arity {a} "
                         f"already reaches {a ** (s - 1)} routers")

    # Refuse before building anything: name the device and the ports it would need.
    need_ports(f"router R[{','.join('0' * n)}]", h + n * m, f"{h} HCA + {n} dimensions x {m} links", radix)
    if s == 1:
        need_ports("switch S[0,0]", k * m, f"{k} routers x {m} links", radix, "; use --s 2 or a larger --radix")
    else:
        need_ports(f"leaf switch S[0,0,0,0] of the {s}-stage tree (arity {a})", a * m + a,
                   f"{a} routers x {m} links + {a} up-links", radix)

    f = Fabric(f"kns-k{k}-n{n}-s{s}")
    f.params = {"k": k, "n": n, "s": s, "hcas_per_router": h, "multiplicity": m,
                "radix": radix}

    # Routers and their HCAs, in row-major order of [r_{n-1},...,r_0].
    grid = list(product(range(k), repeat=n))
    router = {}
    for c in grid:
        r = f.add_switch(coord_name("R", c), radix, role="router", labels={"coords": c})
        router[c] = r
        for j in range(h):
            hname = coord_name("H", c) if h == 1 else f"{coord_name('H', c)}-{j}"
            hca = f.add_hca(hname, 1, labels={"coords": c, "index": j})
            f.add_link(r, hca, j + 1, 1)

    # One indirect network per line: dimension d (axis index n-1-d in the written coordinates).
    positions = list(product(range(k), repeat=n - 1))
    words = a ** (s - 1)
    for d in range(n):
        axis = n - 1 - d
        for p, fixed in enumerate(positions):
            line = [fixed[:axis] + (x,) + fixed[axis:] for x in range(k)]
            labels = {"dim": d, "coords": tuple(None if i == axis else c for i, c in enumerate(line[0]))}
            if s == 1:
                sw = f.add_switch(coord_name("S", (d, p)), radix, labels=labels)
                for x, rc in enumerate(line):
                    for j in range(m):
                        f.add_link(router[rc], sw, h + d * m + j + 1, x * m + j + 1)
                continue
            stage = [[f.add_switch(coord_name("S", (d, p, l, w)), radix,
                                   labels={**labels, "stage": l, "word": w}) for w in range(words)]
                     for l in range(s)]
            for x, rc in enumerate(line):
                leaf = stage[0][x // a]
                for j in range(m):
                    f.add_link(router[rc], leaf, h + d * m + j + 1, (x % a) * m + j + 1)
            for l in range(s - 1):
                down_base = a * m if l == 0 else a
                for w in range(words):
                    digit = (w // a ** l) % a
                    for v in range(a):
                        up = w + (v - digit) * a ** l
                        f.add_link(stage[l][w], stage[l + 1][up], down_base + v + 1, digit + 1)
    return f
