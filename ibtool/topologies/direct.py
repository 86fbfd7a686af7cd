"""The comparison topologies of paper 004 (Skywalk), section III-A, on its cabinet floor.

The floor: c cabinets on an x*y grid, x = ceil(sqrt(c)) rows and y = ceil(c/x) columns; cabinet k
stands at row k // y, column k % y (row-major). Every switch carries the labels `cabinet` (k) and
`slot` (0..z-1, its place in the cabinet); its HCAs carry the same labels. `ibtool/layout` places
the fabric on the floor from these labels; the builders never compute cable lengths.

Every switch has `radix` ports: ports 1..h for its h HCAs (`hcas_per_switch`, HCA port 1), then
the switch-to-switch ports of the family as each builder's docstring states.

* torus / mesh (k-ary n-cube; `--z Z --c C --n N` = Z x C^(1/(N-1)) x ..., or `--dims 4x4x8`):
  switch S[x0,x1,...] at index x0 + k0*x1 + k0*k1*x2 ... (x0 varies fastest); cabinet =
  index // k0 (the paper's sequential assignment in topological order), slot = x0.
  Dimension d uses port h+2d+1 towards x_d + 1 and h+2d+2 towards x_d - 1; the torus closes each
  ring with a link from k_d-1's + port to 0's - port; a dimension of size 2 has a single link
  (x_d = 0 port + to x_d = 1 port -), of size 1 none.
* hypercube (`--N N --c C`): N = 2^d switches S[i]; dimension j joins i and i xor 2^j through
  port h+j+1 on both; cabinet = i // ceil(N/C), slot = i mod ceil(N/C).
* dragonfly (`--z Z --c C`, fully connected, cabinet = group): switch S[k,s]; the switches of a
  cabinet are fully connected, S[k,s] reaching S[k,t] through port h+1+(t if t < s else t-1);
  every pair of cabinets (a, b), a < b in lexicographic order, is joined by one link whose ends
  are picked cyclically in each cabinet (the cabinet's next slot, as Skywalk does), on the lowest
  free port above h+z-1. Degree z-1 + ceil((c-1)/z).
* hyperx (`--z Z --c C`, c must fill the x*y grid): S[k,s] is joined to every other slot of its
  cabinet (ports as dragonfly), to slot s of every other cabinet of its row (column q' through
  port h+z + (q' if q' < q else q'-1)) and of every other cabinet of its column (row r' through
  port h+z+y-1 + (r' if r' < r else r'-1)). Degree x + y + z - 3. With z = 1 it is the
  flattened butterfly.
"""

from __future__ import annotations

import math
import re
from itertools import product

from ibtool import plandir
from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import Param, need_ports, radix_param, topology

PAPER = "paper 004 (Skywalk), section III-A"
RADIX = radix_param(64, "ports per switch (QM9700: 64; SB7800/QM8700: 36)")
HCAS = Param("hcas_per_switch", int, 1, "HCAs attached to each switch", low=0)
MAX_SWITCHES = 1 << 16


def floor_grid(c: int) -> tuple[int, int]:
    """Paper 004, III-A: x = ceil(sqrt(c)) cabinet rows, y = ceil(c/x) columns."""
    x = math.isqrt(c - 1) + 1 if c > 1 else 1
    return x, -(-c // x)


def need_degree(what: str, degree: int, h: int, radix: int) -> None:
    """Refuse a switch of `degree` switch links and h HCAs that needs more ports than it has."""
    need_ports(what, degree + h, f"{h} HCA + degree {degree}", radix, "; use a larger --radix or fewer --hcas-per-switch")


def new_fabric(name: str, params: dict, names: list[str], cabinet: list[int], slot: list[int], radix: int,
               h: int, labels: list[dict] | None = None) -> Fabric:
    """The switches (node i = switch i) and their HCAs on ports 1..h, labelled with cabinet and slot.
    HCAs are named like their switch with H for S (and -j when h > 1)."""
    f = Fabric(name)
    f.params = params
    for i, nm in enumerate(names):
        lab = {"cabinet": cabinet[i], "slot": slot[i], **(labels[i] if labels else {})}
        f.add_switch(nm, radix, labels=lab)
    for i, nm in enumerate(names):
        for j in range(h):
            hn = "H" + nm[1:] + (f"-{j}" if h > 1 else "")
            f.add_link(i, f.add_hca(hn, 1, labels={"cabinet": cabinet[i], "slot": slot[i], "index": j}), j + 1, 1)
    return f


def _dims(z: int, c: int, n: int, dims: str) -> list[int]:
    if dims:
        if not re.fullmatch(r"\d+(x\d+)*", dims):
            raise InputError(f"--dims {dims!r}: expected sizes joined by x, e.g. 4x4 or 8x16x16")
        ks = [int(v) for v in dims.split("x")]
        if min(ks) < 1:
            raise InputError(f"--dims {dims!r}: every size must be >= 1")
        return ks
    if z < 1 or c < 1:
        raise InputError("give --z and --c (first dimension z, the others c^(1/(n-1))), or --dims")
    k = round(c ** (1 / (n - 1)))
    if k ** (n - 1) != c:
        raise InputError(f"--c {c} is not a perfect ({n - 1})th power: the paper's torus needs c = k^(n-1) "
                         f"(e.g. --c 256 --n 3 = z x 16 x 16); use --dims for other shapes")
    return [z] + [k] * (n - 1)


def _cube(kind: str, z: int, c: int, n: int, dims: str, hcas_per_switch: int, radix: int) -> Fabric:
    ks = _dims(z, c, n, dims)
    total = math.prod(ks)
    if total > MAX_SWITCHES:
        raise InputError(f"{'x'.join(map(str, ks))} = {total} switches is beyond what ibtool builds ({MAX_SWITCHES})")
    if total < 2:
        raise InputError(f"--dims {'x'.join(map(str, ks))}: a {kind} of one switch has no links")
    wrap = kind == "torus"
    degree = sum(2 if wrap and k > 2 else min(2, k - 1) for k in ks)
    need_degree(f"{kind} switch S[{','.join('0' * len(ks))}]", degree, hcas_per_switch, radix)
    h = hcas_per_switch
    # index = x0 + k0*x1 + ..., x0 fastest: product() varies the last element fastest, so reverse
    coords = [tuple(reversed(t)) for t in product(*(range(k) for k in reversed(ks)))]
    index = {t: i for i, t in enumerate(coords)}
    names = [f"S[{','.join(map(str, t))}]" for t in coords]
    shape = "x".join(map(str, ks))
    ncab = -(-total // ks[0])
    params = {"dims": ks, "cabinets": ncab, "grid": list(floor_grid(ncab)),
              "hcas_per_switch": h, "radix": radix}
    f = new_fabric(f"{kind}-{shape}", params, names, [i // ks[0] for i in range(total)],
                   [t[0] for t in coords], radix, h, [{"coords": t} for t in coords])
    for d, k in enumerate(ks):
        plus, minus = h + 2 * d + 1, h + 2 * d + 2
        for i, t in enumerate(coords):
            if t[d] + 1 < k:
                f.add_link(i, index[t[:d] + (t[d] + 1,) + t[d + 1:]], plus, minus)
            elif wrap and k > 2:
                f.add_link(i, index[t[:d] + (0,) + t[d + 1:]], plus, minus)
    return f


_CUBE_PARAMS = [
    Param("z", int, 0, "size of the first dimension (switches per cabinet)", low=0),
    Param("c", int, 0, "cabinets; the other n-1 dimensions are c^(1/(n-1)) each", low=0),
    Param("n", int, 3, "dimensions", low=2),
    Param("dims", str, "", "explicit sizes instead of z/c/n, e.g. 4x4 or 3x5x7"),
    HCAS, RADIX,
]


@topology("torus", summary="k-ary n-cube torus (paper 004's Torus(z, c, 2n): z x c^(1/(n-1)) x ...)",
          reference=PAPER, example="ibtool topo torus --dims 4x4 --out torus16   # 16 switches, 4 x 4\n"
                                     "  ibtool topo torus --z 8 --c 256 --n 3 --out torus   # 8 x 16 x 16",
          engine="torus-2QoS", layout="cabinet-aware", engine_files=lambda f: torus_conf(f), params=_CUBE_PARAMS)
def torus(z: int = 0, c: int = 0, n: int = 3, dims: str = "", hcas_per_switch: int = 1, radix: int = 64) -> Fabric:
    return _cube("torus", z, c, n, dims, hcas_per_switch, radix)


@topology("mesh", summary="k-ary n-mesh (the torus without its wrap-around links)",
          reference=PAPER, example="ibtool topo mesh --dims 4x4 --out mesh",
          engine="torus-2QoS", layout="cabinet-aware", engine_files=lambda f: torus_conf(f), params=_CUBE_PARAMS)
def mesh(z: int = 0, c: int = 0, n: int = 3, dims: str = "", hcas_per_switch: int = 1, radix: int = 64) -> Fabric:
    return _cube("mesh", z, c, n, dims, hcas_per_switch, radix)


def torus_conf(f: Fabric) -> list:
    """torus-2QoS.conf for a torus or mesh plan: its shape and the seed switch S[0,..]'s +x/+y/+z
    links (and -x/-y/-z for a torus), plus `qos TRUE`, which torus-2QoS requires. torus-2QoS
    handles at most 3 dimensions; a plan with more gets no conf (OpenSM falls back, and says so)."""
    from ibtool.topologies import EngineFile
    ks = f.params["dims"]
    if len(ks) > 3:
        return []
    shape = list(ks) + [1] * (3 - len(ks))
    kw = "torus" if f.params["topology"] == "torus" else "mesh"
    seed = "S[" + ",".join("0" * len(ks)) + "]"
    s0 = f.index(seed)
    lines = [f"# torus-2QoS.conf written by ibtool for {f.name}", f"{kw} {' '.join(map(str, shape))}"]
    for d, axis in enumerate("xyz"[:len(ks)]):
        if ks[d] < 2:
            continue
        h = f.params["hcas_per_switch"]
        peer = f.peer(s0, h + 2 * d + 1)
        lines.append(f"{axis}p_link 0x{f.guids[s0]:016x} 0x{f.guids[peer[0]]:016x}")
        if kw == "torus" and ks[d] > 2:  # radix-4 rings need the negative link too (torus-2QoS.conf(5))
            peer = f.peer(s0, h + 2 * d + 2)
            lines.append(f"{axis}m_link 0x{f.guids[s0]:016x} 0x{f.guids[peer[0]]:016x}")
    return [EngineFile("torus_config", plandir.TORUS_CONF, "\n".join(lines) + "\n"), EngineFile("qos", "", "TRUE")]


@topology("hypercube", summary="binary hypercube of N = 2^d switches, placed sequentially in c cabinets",
          reference=PAPER, example="ibtool topo hypercube --N 16 --c 4 --out hc16   # 16 switches in 4 cabinets\n"
                                     "  ibtool topo hypercube --N 2048 --c 256 --out hypercube",
          engine="dfsssp", layout="cabinet-aware", params=[Param("N", int, None, "switches (a power of 2)", low=2),
                                   Param("c", int, None, "cabinets", low=1), HCAS, RADIX])
def hypercube(n: int, c: int, hcas_per_switch: int = 1, radix: int = 64) -> Fabric:
    if n & (n - 1) or n > MAX_SWITCHES:
        raise InputError(f"--N {n}: a hypercube needs a power of 2 switches (2..{MAX_SWITCHES})")
    if c > n:
        raise InputError(f"--c {c}: more cabinets than the {n} switches")
    d = n.bit_length() - 1
    need_degree("hypercube switch S[0]", d, hcas_per_switch, radix)
    z = -(-n // c)
    h = hcas_per_switch
    params = {"N": n, "degree": d, "cabinets": c, "z": z, "grid": list(floor_grid(c)),
              "hcas_per_switch": h, "radix": radix}
    f = new_fabric(f"hypercube-{n}", params, [f"S[{i}]" for i in range(n)], [i // z for i in range(n)],
                   [i % z for i in range(n)], radix, h, [{"coords": (i,)} for i in range(n)])
    for j in range(d):
        for i in range(n):
            if not i >> j & 1:
                f.add_link(i, i | 1 << j, h + j + 1, h + j + 1)
    return f


def _cabinets(kind: str, z: int, c: int, h: int, radix: int, degree: int) -> Fabric:
    if z * c > MAX_SWITCHES:
        raise InputError(f"--z {z} x --c {c} = {z * c} switches is beyond what ibtool builds ({MAX_SWITCHES})")
    need_degree(f"{kind} switch S[0,0]", degree, h, radix)
    x, y = floor_grid(c)
    names = [f"S[{k},{s}]" for k in range(c) for s in range(z)]
    params = {"z": z, "cabinets": c, "grid": [x, y], "degree": degree,
              "hcas_per_switch": h, "radix": radix}
    f = new_fabric(f"{kind}-z{z}-c{c}", params, names, [i // z for i in range(z * c)],
                   [i % z for i in range(z * c)], radix, h)
    for k in range(c):  # the cabinet's switches, fully connected
        for s in range(z):
            for t in range(s + 1, z):
                f.add_link(k * z + s, k * z + t, h + 1 + t - 1, h + 1 + s)
    return f


@topology("dragonfly", summary="fully connected Dragonfly: cabinet = group, all groups joined pairwise",
          reference=PAPER + "; Kim et al., ISCA 2008",
          example="ibtool topo dragonfly --z 4 --c 5 --out df20   # 20 switches in 5 cabinets\n"
                  "  ibtool topo dragonfly --z 8 --c 256 --out dragonfly   # degree 39",
          engine="dfsssp", layout="cabinet-aware", params=[Param("z", int, None, "switches per cabinet (group)", low=1),
                                   Param("c", int, None, "cabinets (groups)", low=1), HCAS, RADIX])
def dragonfly(z: int, c: int, hcas_per_switch: int = 1, radix: int = 64) -> Fabric:
    degree = z - 1 + -(-(c - 1) // z)
    f = _cabinets("dragonfly", z, c, hcas_per_switch, radix, degree)
    nxt = [0] * c  # each cabinet's next endpoint slot
    for a in range(c):
        for b in range(a + 1, c):
            f.add_link(a * z + nxt[a], b * z + nxt[b])
            nxt[a] = (nxt[a] + 1) % z
            nxt[b] = (nxt[b] + 1) % z
    return f


@topology("hyperx", summary="HyperX on the cabinet grid: cabinet, row and column each fully connected",
          reference=PAPER + "; Ahn et al., SC 2009",
          example="ibtool topo hyperx --z 2 --c 4 --out hx8   # 8 switches in 4 cabinets\n"
                  "  ibtool topo hyperx --z 8 --c 256 --out hyperx   # degree 37",
          engine="dfsssp", layout="cabinet-aware", params=[Param("z", int, None, "switches per cabinet", low=1),
                                   Param("c", int, None, "cabinets (must fill the x*y grid)", low=1), HCAS, RADIX])
def hyperx(z: int, c: int, hcas_per_switch: int = 1, radix: int = 64) -> Fabric:
    x, y = floor_grid(c)
    if x * y != c:
        raise InputError(f"--c {c}: HyperX needs a full grid of cabinets, but {c} cabinets on the "
                         f"{x} x {y} floor leave {x * y - c} places empty (try --c {x * y} or {(x - 1) * y})")
    degree = x + y + z - 3
    f = _cabinets("hyperx", z, c, hcas_per_switch, radix, degree)
    h = hcas_per_switch
    row_base, col_base = h + z, h + z + y - 1
    for k in range(c):
        r, q = divmod(k, y)
        for s in range(z):
            for q2 in range(q + 1, y):
                f.add_link(k * z + s, (r * y + q2) * z + s, row_base + q2 - 1, row_base + q)
            for r2 in range(r + 1, x):
                f.add_link(k * z + s, (r2 * y + q) * z + s, col_base + r2 - 1, col_base + r)
    return f
