"""Fat trees: the k-ary n-tree (Petrini & Vanneschi; paper 001 section II.B) and the 2- or 3-level
folded Clos an admin buys (leaf / spine / core).

k-ary n-tree (`fattree`). n levels L = 0 (leaves) .. n-1 (top) of k^(n-1) switches each, switch
S[L,w_{n-2},...,w_0] labelled <L,w> with w an (n-1)-digit word in base k, most significant
digit first. <L,w> links to <L+1,w'> iff w and w' differ at most in digit L (the paper's rule),
so each switch has k parents and k children and the tree has n*k^(n-1) switches, k^n nodes and
n*k^n links (with the default k HCAs per leaf).
  Ports of a leaf <0,w>: 1..h its HCAs H[w_{n-2},...,w_0,j] (port j+1; with h = k the HCA label
  is the paper's node label <p_{n-1},...,p_0>), then h+1+v up to <1, w with digit 0 = v>.
  Ports of <L,w>, L >= 1: 1+u down to <L-1, w with digit L-1 = u>, then k+1+v up to
  <L+1, w with digit L = v> (the top level has down ports only).
  OpenSM engine: ftree, the top level as root_guid_file and every HCA as cn_guid_file.

Folded Clos (`clos`). L leaves L[i] with D HCAs H[i,j] (leaf ports 1..D) and U uplinks.
  2 levels: U spines P[s]; leaf i port D+1+s links to spine s port i+1.
  3 levels: leaves in pods of P = radix/2 leaves (the last pod may be smaller); pod p has U
  spines P[p,s]; leaf i (pod p = i // P, position q = i % P) port D+1+s links to P[p,s] port
  q+1. Spine P[p,s] has P up ports P+1+c to core C[s,c] (plane s, c = 0..P-1), core port p+1:
  every spine as many links up as leaves below it (non-blocking above the leaves).
  OpenSM engine: ftree, the top level (spines or cores) as roots, every HCA as compute node.
"""

from __future__ import annotations

import math
from itertools import product

from ibtool import plandir
from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import EngineFile, Param, check_radix, guid_list, need_ports, radix_param, topology
from ibtool.topologies import figure as row


def name(prefix: str, *parts) -> str:
    return f"{prefix}[{','.join(str(p) for p in parts)}]"


def check_size(what: str, count: float, limit: float = 10_000_000) -> None:
    if count > limit:
        raise InputError(f"{what} is beyond what ibtool builds ({limit:,.0f} nodes)")


def tree_levels(f: Fabric, k: int, n: int, levels, radix: int, prefix: tuple = (), labels: dict | None = None):
    """Switches <L,w> of a k-ary n-tree for L in `levels`, linked between consecutive levels by
    the paper's rule with the port numbering of the module docstring (level `levels[0]`'s up ports
    are linked by the caller's `up_base` choice: see link_up). Returns {(L, w): node}."""
    sw = {}
    for L in levels:
        for w in product(range(k), repeat=n - 1):
            sw[L, w] = f.add_switch(name("S", *prefix, L, *w), radix, role=f"level{L}",
                                    labels={**(labels or {}), "level": L, "word": w})
    return sw


def link_up(f: Fabric, k: int, n: int, lower: dict, upper: dict, L: int, up_base: int) -> None:
    """Link level-L switches (`lower`: word -> node) to level L+1 (`upper`): <L,w> port
    up_base+1+v to <L+1, w with digit L = v> port w_L + 1."""
    pos = n - 2 - L  # index of digit L in a word written most significant first
    for w, a in lower.items():
        for v in range(k):
            b = upper[w[:pos] + (v,) + w[pos + 1:]]
            f.add_link(a, b, up_base + 1 + v, w[pos] + 1)


def tree_engine_files(f: Fabric) -> list[EngineFile]:
    """ftree's files: the switches with role 'root' and every HCA as compute node."""
    roots = [i for i, r in enumerate(f.roles) if r == "root"]
    cns = [i for i, r in enumerate(f.roles) if r == "hca"]
    return [EngineFile("root_guid_file", plandir.ROOT_GUIDS, guid_list(f, roots)),
            EngineFile("cn_guid_file", plandir.CN_GUIDS, guid_list(f, cns))]


def tree_counts(k: int, n: int) -> tuple[int, int, int]:
    """(nodes, switches, links) of the k-ary n-tree: k^n, n k^(n-1), n k^n (paper 001 V.A)."""
    return k ** n, n * k ** (n - 1), n * k ** n


def p_kant(k: int, n: int) -> float:
    """Paper 001 V.C: P~ of the k-ary n-tree, shortest paths from a leaf switch to the other leaf
    switches on average, [sum_i k^i (k^i - k^(i-1))] / k^(n-1) = (k^n - 1/k^(n-2)) / (k+1)."""
    return (k ** n - 1 / k ** (n - 2)) / (k + 1)


def figures(params: dict) -> dict:
    """Paper 001's figures of the k-ary n-tree it compares against (k HCAs per leaf)."""
    k, n = int(params["k"]), int(params["n"])
    if int(params.get("hcas_per_leaf") or k) != k:
        return {}  # not the k-ary n-tree the paper counts
    if not (2 <= k <= 16 and 1 <= n <= 64):
        raise InputError(f"fattree(k={k}, n={n}): paper 001's figures are computed for 2 <= k <= 16 and 1 <= n <= 64")
    nodes, sw, links = tree_counts(k, n)
    pk = p_kant(k, n)
    return {"figures": [
        row("nodes", nodes, "k^n", "paper 001 V.A"), row("switches", sw, "n k^(n-1)", "paper 001 V.A"),
        row("links", links, "n k^n", "paper 001 Table I (Theorem 4's tree part)"),
        row("switches per node", sw / nodes, "n k^(n-1) / k^n", "paper 001 V.A"),
        row("links per node", links / nodes, "n k^n / k^n", "paper 001 V.A"),
        row("P~ (average shortest paths)", pk, "(k^n - 1/k^(n-2)) / (k+1)", "paper 001 V.C"),
        row("path diversity PD", pk / nodes, "P~ / N = (1 - 1/k^(2n-2)) / (k+1)", "paper 001 V.C, Fig. 10"),
    ]}


@topology(
    "fattree",
    summary="k-ary n-tree fat tree (switches <L,w>, k^n nodes, n*k^(n-1) switches)",
    reference="Petrini & Vanneschi 1997; paper 001 section II.B",
    example="ibtool topo fattree --k 2 --n 3 --out ft8   # 8 HCAs, 12 switches\n"
            "  ibtool topo fattree --k 4 --n 3 --out ft   # 64 HCAs, 48 switches, routed by ftree",
    engine="ftree", layout="tree-stages",
    engine_files=tree_engine_files, figures=figures,
    params=[
        Param("k", int, None, "arity: children and parents per switch (k >= 2)", low=2),
        Param("n", int, None, "levels of switches (n >= 1)", low=1),
        Param("hcas_per_leaf", int, 0, "HCAs per leaf switch (0 = k, the k-ary n-tree's own)", low=0),
        radix_param(0, "ports per switch (0 = 2k, the smallest that fits)", low=0),
    ],
)
def fattree(k: int, n: int, hcas_per_leaf: int = 0, radix: int = 0) -> Fabric:
    h = hcas_per_leaf or k
    radix = radix or max(2 * k, h + (k if n > 1 else 0))
    check_radix(radix)
    if (n - 1) * math.log10(k) + math.log10(h + n) > 7:  # without computing k**n for absurd n
        raise InputError(f"a {k}-ary {n}-tree with {h} HCAs per leaf is beyond what ibtool builds (10,000,000 nodes)")
    up = k if n > 1 else 0
    need_ports("leaf switch " + name("S", 0, *[0] * (n - 1)), h + up, f"{h} HCAs + {up} up-links", radix)
    if n > 2:
        need_ports("switch " + name("S", 1, *[0] * (n - 1)), 2 * k, f"{k} down + {k} up-links", radix)
    f = Fabric(f"fattree-k{k}-n{n}")
    f.params = {"k": k, "n": n, "hcas_per_leaf": h, "radix": radix}
    sw = tree_levels(f, k, n, range(n), radix)
    for (L, w), s in sw.items():
        if L == n - 1:
            f.roles[s] = "root"
        if L == 0:
            for j in range(h):
                hca = f.add_hca(name("H", *w, j), 1, labels={"word": w, "index": j})
                f.add_link(s, hca, j + 1, 1)
    for L in range(n - 1):
        lower = {w: s for (l, w), s in sw.items() if l == L}
        upper = {w: s for (l, w), s in sw.items() if l == L + 1}
        link_up(f, k, n, lower, upper, L, h if L == 0 else k)
    return f


@topology(
    "clos",
    summary="2- or 3-level folded Clos (leaf/spine[/core]) from leaf count, HCAs and uplinks per leaf",
    reference="the leaf-spine fat tree of most clusters (Leiserson 1985; Al-Fares et al. 2008)",
    example="ibtool topo clos --leaves 4 --hcas-per-leaf 2 --uplinks 2 --radix 8 --out clos8   "
            "# 8 HCAs, 4 leaves, 2 spines\n"
            "  ibtool topo clos --leaves 8 --hcas-per-leaf 18 --uplinks 18 --radix 36 --out clos",
    engine="ftree", layout="tree-stages",
    engine_files=tree_engine_files,
    params=[
        Param("leaves", int, None, "leaf switches (>= 1)", low=1),
        Param("hcas_per_leaf", int, None, "HCAs (downlinks) per leaf (>= 1)", low=1),
        Param("uplinks", int, None, "uplinks per leaf: one to each spine of its pod (>= 1)", low=1),
        Param("levels", int, 2, "2 (leaf-spine) or 3 (pods of radix/2 leaves under a core)"),
        radix_param(36, "ports per switch"),
    ],
)
def clos(leaves: int, hcas_per_leaf: int, uplinks: int, levels: int = 2, radix: int = 36) -> Fabric:
    if levels not in (2, 3):
        raise InputError(f"--levels must be 2 or 3, got {levels}")
    check_size(f"{leaves} leaves x {hcas_per_leaf} HCAs", leaves * hcas_per_leaf)
    D, U = hcas_per_leaf, uplinks
    need_ports("leaf L[0]", D + U, f"{D} HCAs + {U} uplinks", radix)
    f = Fabric(f"clos{levels}-l{leaves}-d{D}-u{U}")
    f.params = {"leaves": leaves, "hcas_per_leaf": D, "uplinks": U, "levels": levels,
                "radix": radix}
    if levels == 2:
        need_ports("spine P[0]", leaves, f"one link from each of {leaves} leaves", radix, "; use --levels 3")
        spines = [f.add_switch(name("P", s), radix, role="root", labels={"level": 1, "index": s}) for s in range(U)]
    else:
        if radix % 2:
            raise InputError(f"--levels 3 splits each spine's ports half down, half up: --radix must be even, "
                             f"got {radix}")
        P = radix // 2
        pods = -(-leaves // P)
        need_ports("core C[0,0]", pods, f"one link from each of {pods} pods of {P} leaves", radix,
                   "; use fewer leaves or a larger --radix")
        spines = [[f.add_switch(name("P", p, s), radix, role="spine", labels={"level": 1, "pod": p, "index": s})
                   for s in range(U)] for p in range(pods)]
        cores = [[f.add_switch(name("C", s, c), radix, role="root", labels={"level": 2, "plane": s, "index": c})
                  for c in range(P)] for s in range(U)]
    for i in range(leaves):
        leaf = f.add_switch(name("L", i), radix, role="leaf", labels={"level": 0, "index": i})
        for j in range(D):
            f.add_link(leaf, f.add_hca(name("H", i, j), 1, labels={"leaf": i, "index": j}), j + 1, 1)
        for s in range(U):
            if levels == 2:
                f.add_link(leaf, spines[s], D + 1 + s, i + 1)
            else:
                f.add_link(leaf, spines[i // P][s], D + 1 + s, i % P + 1)
    if levels == 3:
        for p, pod in enumerate(spines):
            for s, sp in enumerate(pod):
                for c, core in enumerate(cores[s]):
                    f.add_link(sp, core, P + 1 + c, p + 1)
    return f
