"""KNS as paper 000's Fig. 7: routers (orange circles) on the grid of their last two coordinates,
each with its HCA; the indirect network of each row as a bus under the row ending in its switch
(blue box) at the right, each column's as a bus right of the column ending in its switch at the
bottom; one short stub per cable, so every cable is a line of its own. For n = 3 the planes (first
coordinate) stand side by side and the third dimension's switches get a panel of their own, each
router's stub to it pointing up-right. With s > 1 a line's indirect network (a tree of switches)
is drawn as one bus and box. At most 16 planes and 4,096 routers; beyond, None (the floor is drawn).
"""

from __future__ import annotations

from ibtool.drawing.scene import Node, Scene, Wire, shape
from ibtool.drawing.svg import text_width
from ibtool.fabric import CA, SWITCH

CELL = 64  # router pitch
R = 15  # router radius
OFF = 25  # bus distance from the router's centre
MAX_PLANES = 16
MAX_ROUTERS = 4096


def applies(f) -> bool:
    routers = [i for i in range(f.num_nodes) if f.roles[i] == "router"]
    return bool(routers) and all("coords" in f.labels[i] for i in routers) and any(
        "dim" in f.labels[i] for i in range(f.num_nodes))


@shape("kns", rank=10, summary="paper 000's grid of a KNS (Fig. 7): planes of routers, the indirect networks as buses")
def _draw(f, layout=None, links=None) -> Scene | None:
    return scene(f) if applies(f) else None


def scene(f) -> Scene | None:
    routers = [i for i in range(f.num_nodes) if f.roles[i] == "router"]
    coords = {i: tuple(f.labels[i]["coords"]) for i in routers}
    n = len(next(iter(coords.values())))
    if n > 3 or len(routers) > MAX_ROUTERS:
        return None
    k = max(max(c) for c in coords.values()) + 1
    planes = sorted({c[:-2] for c in coords.values()}) if n > 2 else [()]
    if len(planes) > MAX_PLANES:
        return None
    # the indirect networks: (dim, line coords) -> switches; which of them routers are cabled to
    lines: dict[tuple, list[int]] = {}
    for i in range(f.num_nodes):
        lab = f.labels[i]
        if f.types[i] == SWITCH and "dim" in lab:
            lines.setdefault((int(lab["dim"]), tuple(lab["coords"])), []).append(i)
    multi = any(len(v) > 1 for v in lines.values())
    box_w = max([text_width(_line_name(f, v, multi), 7) + 8 for v in lines.values()] + [36])
    rows = 1 if n == 1 else k
    pw = 40 + (k - 1) * CELL + OFF + 16 + box_w + 20
    ph = 36 + (rows - 1) * CELL + OFF + 30 + 24
    cols = min(4, len(planes))
    third = n == 3
    prow = -(-len(planes) // 4)
    width = cols * pw + 20
    height = prow * ph + 30 + (ph if third else 0)
    sc = Scene(f, width, height, f"{f.name}: routers and their indirect networks (paper 000, Fig. 7)")
    pos: dict[int, tuple[float, float]] = {}
    origin: dict[tuple, tuple[float, float]] = {}
    for pi, hi in enumerate(planes):
        ox, oy = 10 + (pi % 4) * pw, 24 + (pi // 4) * ph
        origin[hi] = (ox, oy)
        if n > 2:
            sc.texts.append((f"plane R[{','.join(map(str, hi))},*,*]", ox + 4, oy + 4, "title", "start"))
            sc.under.append(f'<rect x="{ox:.0f}" y="{oy - 8:.0f}" width="{pw - 8:.0f}" height="{ph - 12:.0f}" '
                            f'class="frame"/>')
    for r, c in coords.items():
        ox, oy = origin[c[:-2] if n > 2 else ()]
        row = c[-2] if n >= 2 else 0
        pos[r] = (ox + 40 + c[-1] * CELL, oy + 36 + row * CELL)
    at = port_links(f)
    # the routers' HCAs, up-left of their router
    for r in routers:
        x, y = pos[r]
        for t, li in enumerate(li for li in at.get(r, ()) if f.types[_other(f, li, r)] == CA):
            h = _other(f, li, r)
            hx, hy = x - 18 - 8 * t, y - 20
            sc.add_node(Node(f.names[h], hx, hy, 7, 7, "hca", devices=(h,), title=f"{f.names[h]} (HCA)",
                             label=None))
            sc.add_wire(Wire([(hx + 3.5, hy + 3.5), (x - R * 0.7, y - R * 0.7)], "wire stub", [li],
                             title=_cable_title(f, li)))
    # buses and their switches, and one stub per router cable
    dim_axis = {}  # dim -> which written coordinate varies along its lines
    for (d, lc), sws in lines.items():
        dim_axis[d] = lc.index(None)
    on_line: dict[tuple, list[int]] = {}  # (axis, the line's coords with None there) -> its routers
    for r, c in coords.items():
        for axis in set(dim_axis.values()):
            on_line.setdefault((axis, c[:axis] + (None,) + c[axis + 1:]), []).append(r)
    for (d, lc), sws in sorted(lines.items()):
        axis = dim_axis[d]
        members = on_line.get((axis, lc), [])
        if not members:
            continue
        name = _line_name(f, sws, multi)
        cls = f"d{min(d, 3)}"
        title = (f"{name}: the indirect network of dimension {d} through "
                 + ", ".join(f.names[r] for r in members[:8]) + (" ..." if len(members) > 8 else ""))
        if axis == n - 1:  # a row: the routers differ in the last coordinate
            xs = [pos[r][0] for r in members]
            y = pos[members[0]][1] + OFF
            bx = max(xs) + OFF + 14 + box_w / 2
            sc.under.append(f'<path d="M{min(xs) - 6:.1f},{y:.1f}L{bx - box_w / 2:.1f},{y:.1f}" class="bus {cls}"/>')
            sc.clear.append((min(xs) - 8, y - 2, bx - box_w / 2, y + 2))
            sw_node = sc.add_node(Node(name, bx, y, box_w, 14, "switch", label=name, size=7, devices=tuple(sws),
                                       title=title, data={"devices": " ".join(f.names[s] for s in sws)}
                                       if len(sws) > 1 else {}))
            ends = {r: (pos[r][0], y) for r in members}
            start = {r: (pos[r][0], pos[r][1] + R) for r in members}
        elif n >= 2 and axis == n - 2:  # a column
            ys = [pos[r][1] for r in members]
            x = pos[members[0]][0] + OFF
            by = max(ys) + OFF + 22
            sc.under.append(f'<path d="M{x:.1f},{min(ys) - 6:.1f}L{x:.1f},{by - 7:.1f}" class="bus {cls}"/>')
            sc.clear.append((x - 2, min(ys) - 8, x + 2, by - 7))
            sw_node = sc.add_node(Node(name, x, by, box_w, 14, "switch", label=name, size=7, devices=tuple(sws),
                                       title=title, data={"devices": " ".join(f.names[s] for s in sws)}
                                       if len(sws) > 1 else {}))
            ends = {r: (x, pos[r][1]) for r in members}
            start = {r: (pos[r][0] + R, pos[r][1]) for r in members}
        else:  # the third dimension: a panel of its own, the stubs point up-right to it
            i, j = (lc[1], lc[2]) if n == 3 else (0, 0)
            px, py = 10 + 40 + j * CELL, 24 + prow * ph + 36 + i * CELL
            sw_node = sc.add_node(Node(name, px, py, box_w, 14, "switch", label=name, size=7, devices=tuple(sws),
                                       title=title))
            ends = {r: (pos[r][0] + 17, pos[r][1] - 17) for r in members}
            start = {r: (pos[r][0] + R * 0.7, pos[r][1] - R * 0.7) for r in members}
        for s in sws:
            sc.node_of[s] = sw_node
        # cables of this line: router to one of the line's switches
        swset = set(sws)
        for r in members:
            sx, sy = start[r]
            ex, ey = ends[r]
            cables = [li for li in at.get(r, ()) if _other(f, li, r) in swset]
            for t, li in enumerate(cables):
                o = (t - (len(cables) - 1) / 2) * 3
                if axis == n - 1:
                    pts = [(sx + o, sy), (ex + o, ey)]
                elif n >= 2 and axis == n - 2:
                    pts = [(sx, sy + o), (ex, ey + o)]
                else:
                    pts = [(sx + o, sy), (ex + o, ey)]
                sc.add_wire(Wire(pts, f"stub {cls}", [li], title=_cable_title(f, li)))
    if third:
        sc.texts.append(("dimension 2: the switch at each position links the routers there in every plane",
                         14, 24 + prow * ph + 8, "title", "start"))
    for r, (x, y) in pos.items():
        sc.add_node(Node(f.names[r], x, y, 2 * R, 2 * R, "router", label=f.names[r], shape="circle",
                         size=7 if len(f.names[r]) <= 8 else 6, devices=(r,), title=f"{f.names[r]} (router)"))
    # cables between switches inside a multi-stage indirect network: drawn as part of its box
    for li in range(f.num_links):
        a, b = f.link_a[li], f.link_b[li]
        if li not in sc.wire_of and a in sc.node_of and sc.node_of.get(a) is sc.node_of.get(b):
            sc.wire_of[li] = Wire([(sc.node_of[a].x - 4, sc.node_of[a].y), (sc.node_of[a].x + 4, sc.node_of[a].y)],
                                  "wire", [li])
    sc.note = ("routers on their grid with the indirect networks of every dimension (paper 000, Fig. 7)"
               + ("; planes side by side" if n == 3 else ""))
    return sc


def port_links(f) -> dict[int, list[int]]:
    """node -> its links, by its port."""
    out: dict[int, list[tuple[int, int]]] = {}
    for li, (a, pa, b, pb) in enumerate(zip(f.link_a, f.link_pa, f.link_b, f.link_pb)):
        out.setdefault(a, []).append((pa, li))
        out.setdefault(b, []).append((pb, li))
    return {i: [li for _, li in sorted(v)] for i, v in out.items()}


def _other(f, li: int, node: int) -> int:
    return f.link_b[li] if f.link_a[li] == node else f.link_a[li]


def _line_name(f, sws: list[int], multi: bool) -> str:
    if len(sws) == 1:
        return f.names[sws[0]]
    lab = f.labels[sws[0]]
    return f"S[{lab['dim']},{f.names[sws[0]].split(',')[1]},*] ({len(sws)} sw)"


def _cable_title(f, li: int) -> str:
    return (f"{f.names[f.link_a[li]]} P{f.link_pa[li]} - {f.names[f.link_b[li]]} P{f.link_pb[li]}"
            + (f" ({f.link_rate[li]})" if f.link_rate[li] else ""))
