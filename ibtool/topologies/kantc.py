"""MiKANT, KANTC and MiKANTC (paper 001 sections II.B and III): k-ary n-trees, mirrored or not,
whose leaf switches are kept (MiKANT) or replaced by k-cubes (KANTC, MiKANTC). Every switch has
radix 2k; words w = (w_{n-2},...,w_0) and the links between tree levels are those of the k-ary
n-tree (ibtool.topologies.fattree: <L,w> -- <L+1,w'> iff w, w' differ at most in digit L; down
port 1+u, up port k+1+v).

MiKANT(k,n) (`mikant`): two groups G = 0, 1, each the levels 0..n-2 of a k-ary n-tree, switches
S[G,L,w_{n-2},...,w_0]. The top level is replaced by the mirror: <G,n-2,w> port k+1+v links to
<1-G, n-2, w with digit n-2 = v> port k+1+w_{n-2}. Leaves <G,0,w> carry k HCAs
H[G,w_{n-2},...,w_0,j] on ports 1..k. (2n-2)k^(n-1) switches, 2k^n HCAs, (2n-1)k^n links.

KANTC(k,n) (`kantc`): the levels 1..n-1 of a k-ary n-tree, switches S[L,w_{n-2},...,w_0], over
k^(n-2) k-cubes, one per word c = (c_{n-2},...,c_1). Cube c has 2^k switches C[c_{n-2},...,c_1,b]
labelled <0,c,b> with b = C_{k-1}...C_0 written as k bits; cube ports 1..k: port i+1 links to the
switch whose label differs in bit C_i (same port number at both ends). Intermediate switches: the
k labels I_0..I_{k-1} of `intermediates(k)`; I_j plays the tree's leaf <0,(c,j)>: its ports
k+1+v link up to <1,(c,v)> (down port j+1). The other 2^k-k switches carry k HCAs each,
H[c_{n-2},...,c_1,b,j] on ports k+1+j. (2^k-k)k^(n-1) HCAs, (n-1)k^(n-1)+2^k k^(n-2) switches,
(n-1)k^n + (2^(k-1)+2^k-k)k^(n-1) links (Theorems 2-4; Table I's (n-1)k^n/2 is not what the
construction has).

MiKANTC(k,n) (`mikantc`): MiKANT whose leaves are replaced by cubes as in KANTC, names with the
group first (S[G,L,...], C[G,c...,b], H[G,c...,b,j]); for n = 2 the cross links join the two
cubes' intermediate switches. 2(2^k-k)k^(n-1) HCAs, (2n-4)k^(n-1)+2^(k+1)k^(n-2) switches,
(2n-3)k^n + (3*2^k-2k)k^(n-1) links (Theorems 7-9).

Choice of intermediate switches (our reading of section III.A, whose text gives k = 4:
0000, 0110, 1001, 1111): the first ceil(k/2) labels start at all zeros, and label i (1-based, i >= 2)
is label i-1 with the bits at positions i..k+1-i inverted, positions counted from the left
(C_{k-1} is position 1); the remaining floor(k/2) labels are the bitwise inverses of the first
floor(k/2), in the same order. For k = 4: I = [0000, 0110, 1111, 1001]; for k = 3: [000, 010, 111]
(the paper's "floor(k/2) + floor(k/2)" would give only k-1 labels for odd k).

OpenSM engine: updn. KANTC: the level n-1 switches are the roots (deadlock-free on VL0, every
pair delivered). MiKANT/MiKANTC: one root, S[0,n-2,0,...,0]. Measured under ibsim (`ibtool verify
all`): with the level n-2 switches of both groups as roots they have equal rank, OpenSM's updn lets
routes turn between them and the channel graph has a cycle (MiKANT(3,3): S[0,1,1,2][5] ->
S[1,1,1,2][5] -> S[0,1,0,2][5] -> S[1,1,0,2][4] -> back); with group 0's only, pairs of group 1
whose nearest common ancestor is across the mirror have no up*/down* path (black holes). No
up/down orientation keeps every shortest path of a mirrored tree (group 0's paths across the
mirror need group 1's top above group 0's, group 1's the reverse), so the single root trades up
to 2 extra hops (MiKANT/MiKANTC(3,3)) for deadlock freedom. ftree declines these fabrics (compute
nodes sit at several ranks). Paper 001's own routing is `ibtool route kantc` (routing/kantc.py).
"""

from __future__ import annotations

import math
from itertools import product

from ibtool import plandir
from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import EngineFile, Param, check_radix, guid_list, need_ports, radix_param, topology
from ibtool.topologies import figure as row
from ibtool.topologies.fattree import link_up, name, p_kant, tree_counts


def intermediates(k: int) -> list[int]:
    """I_0..I_{k-1}, each a k-bit label (bit i = C_i), by the rule of the module docstring."""
    first = [0]
    for i in range(2, (k + 1) // 2 + 1):
        first.append(first[-1] ^ sum(1 << (k - p) for p in range(i, k + 2 - i)))
    full = (1 << k) - 1
    return first + [x ^ full for x in first[:k // 2]]


def bits(x: int, k: int) -> str:
    return format(x, f"0{k}b")


def root_files(f: Fabric) -> list[EngineFile]:
    top = f.params["root_level"]
    roots = [i for i, lab in enumerate(f.labels) if f.is_switch(i) and lab.get("level") == top
             and "word" in lab]
    if f.params["topology"] in ("mikant", "mikantc"):
        roots = roots[:1]  # why: see "OpenSM engine" in the module docstring
    return [EngineFile("root_guid_file", plandir.ROOT_GUIDS, guid_list(f, roots))]


def _build(family: str, k: int, n: int, radix: int, mirrored: bool, cubes: bool) -> Fabric:
    radix = radix or 2 * k
    check_radix(radix)
    groups = (0, 1) if mirrored else (0,)
    per_cube = (2 ** k) * (k + 1) if cubes else 2 * k
    if math.log10(per_cube) + (n - 2) * math.log10(k) + math.log10(len(groups)) > 7:
        raise InputError(f"{family}(k={k}, n={n}) is beyond what ibtool builds (10,000,000 nodes)")
    g0 = (0,) if mirrored else ()
    need_ports(("cube switch " if cubes else "leaf switch ") + name("C" if cubes else "S", *g0, *([0] * (n - 2 if cubes else n)), *([bits(0, k)] if cubes else [])),
               2 * k, f"{k} {'cube' if cubes else 'HCA'} + {k} up-links", radix)
    top = n - 2 if mirrored else n - 1
    f = Fabric(f"{family}-k{k}-n{n}")
    f.params = {"k": k, "n": n, "radix": radix, "root_level": top}
    I = intermediates(k)
    for G in groups:
        gp = (G,) if mirrored else ()
        glab = {"group": G} if mirrored else {}
        levels: dict[int, dict] = {}
        if cubes:
            levels[0] = {}
            for c in product(range(k), repeat=n - 2):
                sw = [f.add_switch(name("C", *gp, *c, bits(x, k)), radix,
                                   role="intermediate" if x in I else "cube",
                                   labels={**glab, "level": 0, "cube": c, "c": x}) for x in range(2 ** k)]
                for x in range(2 ** k):
                    for i in range(k):
                        if not x >> i & 1:
                            f.add_link(sw[x], sw[x | 1 << i], i + 1, i + 1)
                for j, x in enumerate(I):
                    f.labels[sw[x]]["word"] = c + (j,)
                    levels[0][c + (j,)] = sw[x]
                for x in range(2 ** k):
                    if x not in I:
                        for j in range(k):
                            hca = f.add_hca(name("H", *gp, *c, bits(x, k), j), 1,
                                            labels={**glab, "cube": c, "c": x, "index": j})
                            f.add_link(sw[x], hca, k + 1 + j, 1)
        for L in range(1 if cubes else 0, top + 1):
            levels[L] = {}
            for w in product(range(k), repeat=n - 1):
                s = f.add_switch(name("S", *gp, L, *w), radix, role=f"level{L}",
                                 labels={**glab, "level": L, "word": w})
                levels[L][w] = s
                if L == 0:
                    for j in range(k):
                        hca = f.add_hca(name("H", *gp, *w, j), 1, labels={**glab, "word": w, "index": j})
                        f.add_link(s, hca, j + 1, 1)
        for L in range(top):
            link_up(f, k, n, levels[L], levels[L + 1], L, k)
        if G == 0:
            tops0 = levels[top]
        else:  # the mirror: level n-2 of group 0 to level n-2 of group 1, digit n-2 exchanged
            for w, a in tops0.items():
                for v in range(k):
                    f.add_link(a, levels[top][(v,) + w[1:]], k + 1 + v, k + 1 + w[0])
    return f


# ---------------------------------------------------------------- paper 001's closed forms (section V)

def counts(family: str, k: int, n: int) -> tuple[int, int, int]:
    """(nodes, switches, links), the theorems' closed forms (checked against the generated graphs
    for a sweep of (k, n) by tests/topologies/test_trees.py)."""
    if family == "fattree":
        return tree_counts(k, n)
    return {"mikant": (2 * k ** n, (2 * n - 2) * k ** (n - 1), (2 * n - 1) * k ** n),
            "kantc": ((2 ** k - k) * k ** (n - 1), (n - 1) * k ** (n - 1) + 2 ** k * k ** (n - 2),
                      (n - 1) * k ** n + (2 ** (k - 1) + 2 ** k - k) * k ** (n - 1)),
            "mikantc": (2 * (2 ** k - k) * k ** (n - 1), (2 * n - 4) * k ** (n - 1) + 2 ** (k + 1) * k ** (n - 2),
                        (2 * n - 3) * k ** n + (3 * 2 ** k - 2 * k) * k ** (n - 1))}[family]


COUNT_FORMULAS = {
    "mikant": ("2 k^n", "(2n-2) k^(n-1)", "(2n-1) k^n", "section II.B"),
    "kantc": ("(2^k - k) k^(n-1)", "(n-1) k^(n-1) + 2^k k^(n-2)", "(n-1) k^n + (2^(k-1) + 2^k - k) k^(n-1)",
              "Theorems 2-4"),
    "mikantc": ("2 (2^k - k) k^(n-1)", "(2n-4) k^(n-1) + 2^(k+1) k^(n-2)", "(2n-3) k^n + (3 2^k - 2k) k^(n-1)",
                "Theorems 7-9"),
}
NAMES = {"fattree": "k-ary n-tree", "mikant": "MiKANT", "kantc": "KANTC", "mikantc": "MiKANTC"}


def covering_radius(k: int) -> int:
    """r: the largest cube distance from a cube switch to its nearest intermediate switch; floor(k/2)
    with these intermediates (tests/topologies/test_paper_numbers.py checks k = 2..16)."""
    inter = intermediates(k)
    return max(min(bin(x ^ i).count("1") for i in inter) for x in range(2 ** k))


def graph_diameter(family: str, k: int, n: int) -> int:
    """The generated graph's HCA-to-HCA diameter of KANTC or MiKANTC. From n = 3 on, 2n + 2r: an
    HCA's switch reaches its nearest intermediate switch in r cube hops, then the tree's 2(n-1)
    links, r hops and the HCA link on the far side. Paper 001's Theorem 5 takes r = k/2, giving
    2n + k: the same for even k, but for odd k r = (k-1)/2 and the diameter is 2n + k - 1 (2n + 2
    at k = 3); its proof's 2n + 2k counts k/2 twice plus k. n = 2 has a single cube (KANTC: two HCAs
    across it, k + 2) or two joined at their intermediates (MiKANTC: 2r + 3)."""
    r = covering_radius(k)
    if n == 2:
        return k + 2 if family == "kantc" else 2 * r + 3
    return 2 * n + 2 * r


def p_cube(k: int) -> float:
    """P~ of a k-cube: C(k,i) switches at distance i with i! shortest paths each,
    sum_i C(k,i) i! / 2^k (the paper's closed form sum_i k!/(i! 2^k) is not its own sum)."""
    return sum(math.comb(k, i) * math.factorial(i) for i in range(1, k + 1)) / 2 ** k


def p_mikant(k: int, n: int) -> float:
    return p_kant(k, n) / 2 + k ** (n - 2) / 2


def rcp(k: int, n: int, nodes: int, diameter: int, p: int = 1) -> float:
    """Relative cost performance against a hypercube of the same N (section V.B): (radix x
    diameter) / ((log2(N/p) + p) (log2(N/p) + 2)), radix 2k; the hypercube's diameter counts the
    two node links, as KANTC's does."""
    h = math.log2(nodes / p)
    return 2 * k * diameter / ((h + p) * (h + 2))


def paper001(family: str, k: int, n: int) -> list[dict]:
    """Paper 001's figures of FAMILY(k, n) from its parameters alone (no fabric built): counts,
    per-node costs and the savings of section V.A, PD of V.C, RCP of V.B, each with its formula."""
    if not (2 <= k <= 16 and 2 <= n <= 64):
        raise InputError(f"{family}(k={k}, n={n}): paper 001's figures are computed for 2 <= k <= 16 and 2 <= n <= 64")
    src = "paper 001"
    nodes, sw, links = counts(family, k, n)
    out = []
    if family in COUNT_FORMULAS:
        fn, fs, fl, where = COUNT_FORMULAS[family]
        out += [row("nodes", nodes, fn, f"{src} {where}"), row("switches", sw, fs, f"{src} {where}"),
                row("links", links, fl, f"{src} {where}")]
    out += [row("switches per node", sw / nodes, "switches / nodes", f"{src} V.A"),
            row("links per node", links / nodes, "links / nodes", f"{src} V.A")]
    if family in ("kantc", "mikantc"):
        for other in ("fattree", "mikant"):
            o_nodes, o_sw, o_links = counts(other, k, n)
            sr = (sw / nodes) / (o_sw / o_nodes)
            lr = (links / nodes) / (o_links / o_nodes)
            closed = ""
            if family == "kantc" and other == "fattree":
                closed = (" = (2^k - k + kn) / (n (2^k - k))", " = ((n-2) k + 3 2^(k-1)) / (n (2^k - k)); the paper "
                          "prints ((n-2) k^2 + 3 2^(k-1) k) / (n (2^k - k)), k times its own value")
            out += [row(f"switch cost ratio to {NAMES[other]}({k},{n})", sr,
                        f"(switches/node) / ({NAMES[other]}'s){closed[0] if closed else ''}", f"{src} V.A, Figs. 6-7"),
                    row(f"switches saved against {NAMES[other]}({k},{n}) (%)", 100 * (1 - sr), "100 (1 - switch cost ratio)",
                        f"{src} V.A"),
                    row(f"link cost ratio to {NAMES[other]}({k},{n})", lr,
                        f"(links/node) / ({NAMES[other]}'s){closed[1] if closed else ''}", f"{src} V.A, Figs. 6-7"),
                    row(f"links saved against {NAMES[other]}({k},{n}) (%)", 100 * (1 - lr), "100 (1 - link cost ratio)",
                        f"{src} V.A")]
    pc = p_cube(k)
    if family == "fattree":
        pt, pf = p_kant(k, n), "(k^n - 1/k^(n-2)) / (k+1)"
    elif family == "mikant":
        pt, pf = p_mikant(k, n), "(k^n - 1/k^(n-2)) / (2(k+1)) + k^(n-2)/2"
    else:
        # the paper's closed form, as Fig. 10 plots it; its own first line, P~1 (1 - s) + P~0 s with
        # s = 1/k^(n-2) (1/(2k^(n-2))), differs in the last term (k P~cube s, not k^3 P~cube s): 1.3125 vs
        # 1.3129 for KANTC(2,8), negligible from k = 3 on
        pk, t = (p_kant(k, n), 1) if family == "kantc" else (p_mikant(k, n), 2)
        pt = k * k * pc * pc * pk + (k * pc - pc * pc * pk) / (t * k ** (n - 4))
        pf = (f"k^2 P~cube^2 P~{'kant' if t == 1 else 'mikant'} + (k P~cube - P~cube^2 "
              f"P~{'kant' if t == 1 else 'mikant'}) / ({'2 ' if t == 2 else ''}k^(n-4)), "
              "P~cube = sum_i C(k,i) i! / 2^k")
    out += [row("P~ (average shortest paths)", pt, pf, f"{src} V.C"),
            row("path diversity PD", pt / nodes, "P~ / N", f"{src} V.C, Fig. 10")]
    if family in ("kantc", "mikantc"):
        r = covering_radius(k)
        d = graph_diameter(family, k, n)
        how = (f"2n + 2r (HCA to HCA), r = {r} the intermediates' covering radius"
               + ("; Theorem 5's 2n + k assumes r = k/2, for odd k it is (k-1)/2" if k % 2 else "")
               if n > 2 else ("k + 2 (HCA to HCA across the one cube)" if family == "kantc" else
                              f"2r + 3 (HCA to HCA through the two cubes' intermediates), r = {r}"))
        out += [row("diameter, Theorem 5", 2 * n + k, "2n + k (HCA to HCA)", f"{src} Theorem 5"),
                row("diameter of the graph", d, how, "the generated graphs"),
                row("RCP (paper's diameter)", rcp(k, n, nodes, 2 * n + k),
                    "2k (2n + k) / ((log2 N + 1)(log2 N + 2)), p = 1", f"{src} V.B, Figs. 8-9"),
                row("RCP (graph's diameter)", rcp(k, n, nodes, d),
                    "2k D / ((log2 N + 1)(log2 N + 2)), p = 1, D the graph's diameter",
                    f"{src} V.B with the graph's diameter"),
                row("RCP (section V.B's text: diameter 2n + 2k)", rcp(k, n, nodes, 2 * n + 2 * k),
                    "2k (2n + 2k) / ((log2 N + 1)(log2 N + 2)), p = 1", f"{src} V.B, its text")]
    return out


def figures(params: dict) -> dict:
    return {"figures": paper001(str(params["topology"]), int(params["k"]), int(params["n"]))}



_PARAMS = [Param("k", int, None, "arity of the tree and dimension of the cubes (k >= 2); switch radix 2k", low=2),
           Param("n", int, None, "levels of the k-ary n-tree (n >= 2)", low=2),
           radix_param(0, "ports per switch (0 = 2k, the paper's radix)", low=0)]
_FAMILY = dict(engine="updn", engine_files=root_files, params=_PARAMS, figures=figures, layout="tree-stages")


@topology("mikant", summary="mirrored k-ary n-tree MiKANT(k,n): two (n-1)-level trees joined at the top",
          reference="paper 001 section II.B (Li & Chu 2018)",
          example="ibtool topo mikant --k 2 --n 2 --out mikant4   # 8 HCAs, 4 switches\n"
                  "  ibtool topo mikant --k 3 --n 3 --out mikant   # 54 HCAs, 36 switches, 135 links", **_FAMILY)
def mikant(k: int, n: int, radix: int = 0) -> Fabric:
    return _build("mikant", k, n, radix, mirrored=True, cubes=False)


@topology("kantc", summary="k-ary n-tree k-cube KANTC(k,n): tree leaves replaced by k-cubes",
          reference="paper 001 section III.A, Theorems 1-5",
          example="ibtool topo kantc --k 2 --n 2 --out kantc6   # 4 HCAs, 6 switches\n"
                  "  ibtool topo kantc --k 3 --n 3 --out kantc   # 45 HCAs, 42 switches", **_FAMILY)
def kantc(k: int, n: int, radix: int = 0) -> Fabric:
    return _build("kantc", k, n, radix, mirrored=False, cubes=True)


@topology("mikantc", summary="mirrored k-ary n-tree k-cube MiKANTC(k,n): MiKANT with k-cube leaves",
          reference="paper 001 section III.B, Theorems 6-10",
          example="ibtool topo mikantc --k 2 --n 2 --out mikantc8   # 8 HCAs, 8 switches\n"
                  "  ibtool topo mikantc --k 3 --n 3 --out mikantc   # 90 HCAs, 66 switches", **_FAMILY)
def mikantc(k: int, n: int, radix: int = 0) -> Fabric:
    return _build("mikantc", k, n, radix, mirrored=True, cubes=True)
