"""Trees by level: switches in rows, the top level at the top, HCAs below their leaf switch.

The level is the family's label (`level` or `stage`); a fabric without one (a discovered fabric, a
family drawn by its wiring alone) gets the hop distance of each switch from the nearest HCA (leaf
switches 0). Up to 40 switches a row are drawn as boxes with their names across; up to 128 as
narrow boxes with the names upright; more are aggregated into groups of consecutive switches (at
most 48 a row), drawn as one box with the cables between two groups as one bundle with its count.
HCAs are dots under their switch, or one box per switch ("16 HCAs") beyond 1,500 HCAs.
"""

from __future__ import annotations

from ibtool.drawing.scene import Node, Scene, Wire, shape
from ibtool.drawing.svg import text_width
from ibtool.fabric import CA, SWITCH, switch_stages

ROW = 110
MAX_WIDE = 40
MAX_UPRIGHT = 128
MAX_GROUPS = 48
MAX_HCA_DOTS = 1500
MAX_GENERIC = 20000  # devices beyond which a fabric without a family shape or a floor is not drawn


@shape("tree", rank=20, summary="a family's levels (its `level` or `stage` labels): switches in rows")
def _by_level(f, layout=None, links=None) -> Scene | None:
    sw = [i for i in range(f.num_nodes) if f.types[i] == SWITCH]
    key = next((k for k in ("level", "stage") if sw and all(k in f.labels[i] for i in sw)), None)
    return scene(f, key) if key else None


@shape("levels", rank=40, summary="any fabric up to 20,000 devices: switches in rows by hops from the HCAs")
def _by_distance(f, layout=None, links=None) -> Scene | None:
    if f.num_nodes > MAX_GENERIC or not any(t == SWITCH for t in f.types):
        return None
    return scene(f, None)


def levels_of(f, key: str | None) -> dict[int, int]:
    """switch -> level: the label `key`, or the hop distance from the nearest HCA."""
    if key is not None:
        return {i: int(f.labels[i][key]) for i in range(f.num_nodes) if f.types[i] == SWITCH}
    dist = switch_stages(f)
    for i in range(f.num_nodes):  # switches no HCA reaches: a row of their own at the top
        if f.types[i] == SWITCH and i not in dist:
            dist[i] = max(dist.values(), default=-1) + 1
    return dist


def scene(f, key: str | None = None) -> Scene:
    lv = levels_of(f, key)
    levels: dict[int, list[int]] = {}
    for i, v in sorted(lv.items()):
        levels.setdefault(v, []).append(i)
    widest = max((len(v) for v in levels.values()), default=1)
    upright = widest > MAX_WIDE
    group = max(1, -(-widest // MAX_GROUPS)) if widest > MAX_UPRIGHT else 1
    name_w = max((text_width(f.names[i], 7) for i in lv), default=30) + 8
    pitch = (max(name_w, 30) + 10) if not upright and group == 1 else (14 if group == 1 else 60)
    slots = -(-widest // group)
    hcas = [i for i in range(f.num_nodes) if f.types[i] == CA]
    attached: dict[int, list[int]] = {}
    for h in hcas:
        for _, nb, _ in f.neighbors(h):
            if nb in lv:
                attached.setdefault(nb, []).append(h)
                break
    dots = len(hcas) <= MAX_HCA_DOTS and group == 1
    # the leaf row may need room for its HCAs
    leaf = min(levels) if levels else 0
    per_leaf = max((len(v) for v in attached.values()), default=0)
    if dots and per_leaf:
        pitch = max(pitch, min(per_leaf * 6 + 4, 90))
    width = 40 + slots * pitch
    ordered = sorted(levels, reverse=True)
    box_h = max(name_w, 30) if upright and group == 1 else 18
    height = 30 + len(ordered) * ROW + 70
    sc = Scene(f, width, height, f"{f.name}: switches by {key or 'hops from the HCAs'}")
    node: dict[int, Node] = {}
    for row, v in enumerate(ordered):
        sws = levels[v]
        y = 30 + box_h / 2 + row * ROW
        n_slots = -(-len(sws) // group)
        off = (width - n_slots * pitch) / 2
        sc.texts.append((f"{key or 'hops'} {v}", 4, y - box_h / 2 - 4, "", "start"))
        for s in range(n_slots):
            members = sws[s * group:(s + 1) * group]
            x = off + s * pitch + pitch / 2
            if group == 1:
                i = members[0]
                nd = Node(f.names[i], x, y, (name_w if not upright else 11), box_h, "switch", label=f.names[i],
                          size=7, vertical=upright, devices=(i,), title=f"{f.names[i]} ({key or 'hops'} {v})")
            else:
                label = f"{len(members)} sw"
                nd = Node(f"{f.names[members[0]]}..", x, y, pitch - 8, box_h, "group", label=label, size=7,
                          devices=tuple(members), title=f"{f.names[members[0]]} .. {f.names[members[-1]]}: "
                                                        f"{len(members)} switches ({key or 'hops'} {v})",
                          data={"devices": " ".join(f.names[m] for m in members)})
            sc.add_node(nd)
            for m in members:
                node[m] = nd
    # HCAs under their switch
    hy = 30 + box_h + (len(ordered) - 1) * ROW + 40
    for s, hs in attached.items():
        nd = node[s]
        if dots:
            span = min(pitch - 4, 6 * len(hs))
            for t, h in enumerate(hs):
                x = nd.x - span / 2 + (t + 0.5) * span / len(hs)
                hn = sc.add_node(Node(f.names[h], x, hy, 4, 4, "hca", shape="circle", devices=(h,),
                                      title=f"{f.names[h]} (HCA)"))
                node[h] = hn
    if not dots:
        groups: dict[int, list[int]] = {}
        for s, hs in attached.items():
            groups.setdefault(id(node[s]), []).extend(hs)
        for s in {id(node[s]): s for s in attached}.values():
            nd = node[s]
            hs = groups[id(nd)]
            hn = sc.add_node(Node(f"hcas of {nd.key}", nd.x, hy, max(pitch - 10, 10), 14, "hca",
                                  label=f"{len(hs)}", size=7, devices=tuple(hs),
                                  title=f"{len(hs)} HCAs under {nd.title.split(' (')[0]}"))
            for h in hs:
                node[h] = hn
    # cables, bundled between nodes that stand for several devices
    bundles: dict[tuple[int, int], list[int]] = {}
    pos = {id(n): k for k, n in enumerate(sc.nodes)}  # a pair's order by drawing order, not by address
    for li, (a, b) in enumerate(zip(f.link_a, f.link_b)):
        na, nb = node.get(a), node.get(b)
        if na is None or nb is None:
            continue
        if na is nb:
            sc.wire_of[li] = Wire([(na.x - 3, na.y), (na.x + 3, na.y)], "wire", [li])
            continue
        bundles.setdefault(tuple(sorted((pos[id(na)], pos[id(nb)]))), []).append(li)
    for (x, y), lis in bundles.items():
        na, nb = sc.nodes[x], sc.nodes[y]
        if na.y > nb.y:
            na, nb = nb, na
        pts = [(na.x, na.y + na.h / 2), (nb.x, nb.y - nb.h / 2)]
        if len(lis) == 1 or (len(na.devices) == 1 and len(nb.devices) == 1):
            for li in lis:
                sc.add_wire(Wire(pts, "wire", [li], title=_cable_title(f, li)))
        else:
            sc.add_wire(Wire(pts, "bundle", lis, title=f"{len(lis)} cables {na.title.split(':')[0]} - "
                                                      f"{nb.title.split(':')[0]}", label=str(len(lis)),
                             width=min(6.0, 0.8 + len(lis) ** 0.5 / 2)))
    sc.note = (f"switches by {key or 'hop distance from the HCAs'}, nodes below"
               + (f"; groups of {group} consecutive switches, the cables between two groups as one bundle "
                  f"with its count" if group > 1 else ""))
    return sc


def _cable_title(f, li: int) -> str:
    return f"{f.names[f.link_a[li]]} P{f.link_pa[li]} - {f.names[f.link_b[li]]} P{f.link_pb[li]}"
