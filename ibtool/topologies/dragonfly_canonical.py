"""The canonical Dragonfly of Kim, Dally, Scott and Abts (ISCA 2008), one of the comparison
networks of paper 002 (its Fig. 4 point: N = 2064 routers, K = 23, p = 8, i.e. a = 16, h = 8).

g groups of a routers; inside a group every router is linked to every other (a - 1 local links);
each router has p endpoints and h global links; g <= a h + 1 (default the maximum, a h + 1:
every pair of groups joined by exactly one global link). Balanced as Kim et al. recommend:
a = 2p = 2h. Router r of group G is R[G,r], its HCAs H[G,r] (-j when p > 1).

Global-link arrangement (documented, the one of BookSim's `dragonfly` network, written by the
Dragonfly's authors' group): group G numbers its a h global channels c = r h + j (router r, its
j-th global port) and channel c leads to group c if c < G, else to group c + 1 -- every other group
in ascending order, skipping itself. Both ends agree: group G's channel to group D is D (D < G) or
D - 1 (D > G). With g < a h + 1 only the channels c < g - 1 are cabled.

Ports: 1..p HCAs; p+1 .. p+a-1 local, router r reaching router t through port p+1+(t if t < r
else t-1); p+a .. p+a+h-1 global, port p+a+j for channel r h + j.
Counts: a g routers, a p g endpoints, g a(a-1)/2 local and g(g-1)/2 global links; with
g = a h + 1 the diameter is 3 (local, global, local). Placement: one cabinet per group (Kim et
al. package a group in a cabinet), slot r.
"""

from __future__ import annotations

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import Param, qos_on, radix_param, topology
from ibtool.topologies import figure as row
from ibtool.topologies.direct import MAX_SWITCHES, floor_grid, need_degree, new_fabric


def group_of_channel(G: int, c: int) -> int:
    """The group that group G's global channel c leads to."""
    return c if c < G else c + 1


def channel_to(G: int, D: int) -> int:
    """Group G's global channel that leads to group D (D != G)."""
    return D if D < G else D - 1


def closed_forms(a: int, p: int, h: int, g: int = 0) -> dict:
    g = g or a * h + 1
    return {"groups": g, "routers": a * g, "endpoints": a * p * g, "network_radix": a - 1 + h,
            "local_links": g * a * (a - 1) // 2, "global_links": g * (g - 1) // 2,
            "router_links": g * a * (a - 1) // 2 + g * (g - 1) // 2,
            "diameter": 3 if a > 1 else 1}  # local, global, local: every pair of groups is joined


def figures(params: dict) -> dict:
    a, p, h, g = (int(params[k]) for k in ("a", "p", "h", "g"))
    if a < 1 or p < 0 or h < 1 or not 0 <= g <= a * h + 1:
        raise InputError(f"dragonfly-canonical(a={a}, p={p}, h={h}, g={g}): needs a >= 1, p >= 0, h >= 1, "
                         f"0 <= g <= a h + 1")
    cf = closed_forms(a, p, h, g)
    src = "Kim et al. ISCA 2008"
    k, n = cf["network_radix"], cf["routers"]
    out = [row("groups g", cf["groups"], "a h + 1 (the most)" if g == a * h + 1 else "given", src),
           row("routers N", n, "a g", src), row("network radix K", k, "a - 1 + h", src),
           row("endpoints", cf["endpoints"], "a p g", src),
           row("local links", cf["local_links"], "g a (a-1) / 2", src),
           row("global links", cf["global_links"], "g (g-1) / 2", src),
           row("balanced (a = 2p = 2h)", "yes" if a == 2 * p == 2 * h else "no", "a = 2p = 2h", src),
           row("total network bandwidth Phi / phi (cables)", n * (k / 2 + p), "N (K/2 + p)", "paper 002 section 4.3")]
    if (a, p, h, g) == (16, 8, 8, 129):
        out += [row("paper 002 Fig. 4: b_r = B / Phi", 41666 / 402480,
                    "B = 41,666 Gb/s (approx.), Phi = N phi (K/2 + p) = 402,480 Gb/s, phi = 10 Gb/s",
                    "paper 002 Fig. 4 caption"),
                row("global links across the middle (groups halved)", (g // 2) * (g - g // 2),
                    "floor(g/2) ceil(g/2): every pair of groups one link", "this construction")]
    return {"figures": out}


@topology(
    "dragonfly-canonical",
    summary="canonical Dragonfly of Kim et al.: g groups of a fully connected routers, h global links each",
    reference="Kim, Dally, Scott, Abts, ISCA 2008; paper 002 section 5.4 (Fig. 4's DF point: a 16, p 8, h 8)",
    example="ibtool topo dragonfly-canonical --a 4 --p 2 --h 2 --out df   # 9 groups, 36 routers, 72 HCAs\n"
            "  ibtool topo dragonfly-canonical --a 16 --p 8 --h 8 --out df2064   # paper 002's DF: 2,064 routers",
    engine="dfsssp", layout="cabinet-aware", engine_files=qos_on,
    figures=figures,
    params=[
        Param("a", int, None, "routers per group (fully connected)", low=1),
        Param("p", int, None, "endpoints (HCAs) per router", low=0),
        Param("h", int, None, "global links per router", low=1),
        Param("g", int, 0, "groups (0: a*h + 1, the most; every pair of groups joined once)", low=0),
        radix_param(64, "ports per router switch; p + a - 1 + h must fit"),
    ],
)
def dragonfly_canonical(a: int, p: int, h: int, g: int = 0, radix: int = 64) -> Fabric:
    top = a * h + 1
    g = g or top
    if g < 2 or g > top:
        raise InputError(f"--g {g}: between 2 and a*h + 1 = {top} groups (each pair of groups one global link)")
    if a * g > MAX_SWITCHES:
        raise InputError(f"--a {a} x {g} groups = {a * g} routers is beyond what ibtool builds ({MAX_SWITCHES})")
    need_degree("dragonfly router R[0,0]", a - 1 + h, p, radix)
    cf = closed_forms(a, p, h, g)
    names = [f"R[{G},{r}]" for G in range(g) for r in range(a)]
    params = {"a": a, "p": p, "h": h, "g": g, "network_radix": a - 1 + h,
              "hcas_per_switch": p, "radix": radix, "cabinets": g, "grid": list(floor_grid(g)),
              "arrangement": "consecutive (BookSim's): group G's channel c = r h + j leads to group c (c < G) or c + 1"}
    f = new_fabric(f"dragonfly-canonical-a{a}-p{p}-h{h}-g{g}", params, names, [i // a for i in range(a * g)],
                   [i % a for i in range(a * g)], radix, p, [{"group": i // a, "router": i % a} for i in range(a * g)])
    for G in range(g):
        for r in range(a):
            for t in range(r + 1, a):
                f.add_link(G * a + r, G * a + t, p + 1 + t - 1, p + 1 + r)
    for G in range(g):
        for c in range(g - 1):
            D = group_of_channel(G, c)
            if D > G:  # each global link once, from its lower group
                c2 = channel_to(D, G)
                f.add_link(G * a + c // h, D * a + c2 // h, p + a + c % h, p + a + c2 % h)
    assert f.num_links == cf["router_links"] + a * g * p
    return f
