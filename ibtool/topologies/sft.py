"""Slimmed fat tree (SFT): three stages, fewer switches and links at the top (paper 000, Fig. 2b
and Fig. 8: the 45-node SFT built on CELLIA's 8-port switches).

Construction. `groups` groups, each of `leaves` leaf switches (stage 1) E[g,l] and `middle`
stage-2 switches M[g,m]; the top stage has `middle` planes of `top_per_plane` switches T[m,t].
  * Leaf E[g,l]: ports 1..h HCAs H[g,l,j] (port j+1); port h+1+m links to M[g,m] (port l+1).
  * Middle M[g,m]: ports 1..leaves down; port leaves+1+t*P+r (r = 0..P-1, P = `top_links`)
    links to T[m,t], port g*P+r+1 of the top switch: P parallel links to each top switch of
    its plane.
Counts: groups*(leaves+middle) + middle*top_per_plane switches, groups*leaves*h HCAs.

Paper 000's Fig. 8 fixes the counts (21 switches in three stages, 3 groups of 15 nodes in 3
subgroups of 5, parallel links in the top stage, 8-port switches) but not the ports; our reading
(`--preset cellia`): a subgroup is one leaf (5 HCAs + 3 uplinks = 8 ports), each group has 3
middle switches (each linked once to the group's 3 leaves), and the top stage is 3 switches,
middle switch m of every group linked to top switch m by 2 parallel links (3 + 2 = 5 ports of a
middle switch, 3 groups x 2 = 6 ports of a top switch). 9 + 9 + 3 = 21 switches; stages 1 and 2
have 27 links between them, stages 2 and 3 only 18: the "slimmed" top. `--preset cellia36` is the
same with 4 HCAs per leaf (one node removed from each subgroup: 36 nodes, as the paper ran it).

OpenSM engine: ftree (the paper's choice for the SFT) with the top stage as roots and every HCA
as compute node.
"""

from __future__ import annotations

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import Param, check_radix, need_ports, radix_param, topology
from ibtool.topologies.fattree import name, tree_engine_files

PRESETS = {
    "cellia": dict(groups=3, leaves=3, hcas_per_leaf=5, middle=3, top_per_plane=1, top_links=2, radix=8),
    "cellia36": dict(groups=3, leaves=3, hcas_per_leaf=4, middle=3, top_per_plane=1, top_links=2, radix=8),
}


@topology(
    "sft",
    summary="3-stage slimmed fat tree (fewer top switches, parallel top links); --preset cellia|cellia36",
    reference="paper 000, section 4 and Fig. 8 (the 45-node SFT of CELLIA)",
    example="ibtool topo sft --preset cellia36 --out sft   # 36 HCAs, 21 switches, 8-port",
    engine="ftree", layout="tree-stages",
    engine_files=tree_engine_files,
    params=[
        Param("preset", str, "", "cellia (45 nodes) or cellia36 (36 nodes); other options then must stay unset"),
        Param("groups", int, 0, "groups of leaves", low=0),
        Param("leaves", int, 0, "leaf switches per group", low=0),
        Param("hcas_per_leaf", int, 0, "HCAs per leaf", low=0),
        Param("middle", int, 0, "stage-2 switches per group (each leaf links once to each)", low=0),
        Param("top_per_plane", int, 0, "top switches per plane (plane m: the m-th middle switch of every group; 0 = 1)",
              low=0),
        Param("top_links", int, 0, "parallel links from a middle switch to each top switch of its plane (0 = 1)",
              low=0),
        radix_param(0, "ports per switch (0 = 36; the presets: 8)", low=0),
    ],
)
def sft(preset: str = "", groups: int = 0, leaves: int = 0, hcas_per_leaf: int = 0, middle: int = 0,
        top_per_plane: int = 0, top_links: int = 0, radix: int = 0) -> Fabric:
    if preset:
        if preset not in PRESETS:
            raise InputError(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
        if groups or leaves or hcas_per_leaf or middle or top_per_plane or top_links or radix:
            raise InputError(f"--preset {preset} sets every other option: give a preset or the options")
        return _build(preset, **PRESETS[preset])
    for opt, v in (("groups", groups), ("leaves", leaves), ("hcas_per_leaf", hcas_per_leaf), ("middle", middle)):
        if not v:
            raise InputError(f"--{opt.replace('_', '-')} is required (or use --preset cellia|cellia36)")
    return _build("", groups, leaves, hcas_per_leaf, middle, top_per_plane or 1, top_links or 1, radix or 36)


def _build(preset: str, groups: int, leaves: int, hcas_per_leaf: int, middle: int, top_per_plane: int,
           top_links: int, radix: int) -> Fabric:
    check_radix(radix)  # the others are >= 1 here: declared >= 0, and 0 is refused or means 1
    G, E, h, M, T, P = groups, leaves, hcas_per_leaf, middle, top_per_plane, top_links
    if G * E * h > 10_000_000:
        raise InputError(f"{G * E * h:,} HCAs is beyond what ibtool builds (10,000,000)")
    need_ports("leaf E[0,0]", h + M, f"{h} HCAs + {M} uplinks", radix)
    need_ports("middle M[0,0]", E + T * P, f"{E} leaves + {T} top switches x {P} links", radix)
    need_ports("top T[0,0]", G * P, f"{G} groups x {P} links", radix)
    f = Fabric(f"sft-{preset}" if preset else f"sft-g{G}-l{E}-h{h}-m{M}-t{T}-p{P}")
    f.params = {"preset": preset or None, "groups": G, "leaves": E, "hcas_per_leaf": h,
                "middle": M, "top_per_plane": T, "top_links": P, "radix": radix}
    top = [[f.add_switch(name("T", m, t), radix, role="root", labels={"stage": 3, "plane": m, "index": t})
            for t in range(T)] for m in range(M)]
    for g in range(G):
        mids = [f.add_switch(name("M", g, m), radix, role="middle", labels={"stage": 2, "group": g, "index": m})
                for m in range(M)]
        for m, mid in enumerate(mids):
            for t, ts in enumerate(top[m]):
                for r in range(P):
                    f.add_link(mid, ts, E + 1 + t * P + r, g * P + r + 1)
        for e in range(E):
            leaf = f.add_switch(name("E", g, e), radix, role="leaf", labels={"stage": 1, "group": g, "index": e})
            for j in range(h):
                f.add_link(leaf, f.add_hca(name("H", g, e, j), 1, labels={"group": g, "leaf": e, "index": j}), j + 1, 1)
            for m, mid in enumerate(mids):
                f.add_link(leaf, mid, h + 1 + m, e + 1)
    return f
