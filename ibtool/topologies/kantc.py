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

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import EngineFile, Param, guid_list, topology
from ibtool.topologies.fattree import check_radix, check_range, link_up, name, need_ports


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
    return [EngineFile("root_guid_file", "root-guids", guid_list(f, roots))]


def _build(family: str, k: int, n: int, radix: int, mirrored: bool, cubes: bool) -> Fabric:
    check_range(k=(k, 2), n=(n, 2), radix=(radix, 0))
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
    f.params = {"topology": family, "k": k, "n": n, "radix": radix, "root_level": top}
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


_K = Param("k", int, None, "arity of the tree and dimension of the cubes (k >= 2); switch radix 2k")
_N = Param("n", int, None, "levels of the k-ary n-tree (n >= 2)")
_R = Param("radix", int, 0, "ports per switch (0 = 2k, the paper's radix)")


def mikant(k: int, n: int, radix: int = 0) -> Fabric:
    return _build("mikant", k, n, radix, mirrored=True, cubes=False)


def kantc(k: int, n: int, radix: int = 0) -> Fabric:
    return _build("kantc", k, n, radix, mirrored=False, cubes=True)


def mikantc(k: int, n: int, radix: int = 0) -> Fabric:
    return _build("mikantc", k, n, radix, mirrored=True, cubes=True)


_PARAMS = [Param("k", int, None, "arity of the tree and dimension of the cubes (k >= 2); switch radix 2k"),
           Param("n", int, None, "levels of the k-ary n-tree (n >= 2)"),
           Param("radix", int, 0, "ports per switch (0 = 2k, the paper's radix)")]
for _fn, _summary, _reference, _example in [
    (mikant, "mirrored k-ary n-tree MiKANT(k,n): two (n-1)-level trees joined at the top",
     "paper 001 section II.B (Li & Chu 2018)", "--k 3 --n 3 --out mikant   # 54 HCAs, 36 switches, 135 links"),
    (kantc, "k-ary n-tree k-cube KANTC(k,n): tree leaves replaced by k-cubes",
     "paper 001 section III.A, Theorems 1-5", "--k 3 --n 3 --out kantc   # 45 HCAs, 42 switches"),
    (mikantc, "mirrored k-ary n-tree k-cube MiKANTC(k,n): MiKANT with k-cube leaves",
     "paper 001 section III.B, Theorems 6-10", "--k 3 --n 3 --out mikantc   # 90 HCAs, 66 switches"),
]:
    topology(_fn.__name__, summary=_summary, reference=_reference, example=f"ibtool topo {_fn.__name__} {_example}",
             engine="updn", engine_files=root_files, params=_PARAMS)(_fn)
