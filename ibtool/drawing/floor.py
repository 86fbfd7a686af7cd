"""Cabinets on the machine-room floor, and the cables between them as routed bundles.

Cabinets stand on the layout's grid with an aisle around each; cables between cabinets run in the
aisles as they would in cable trays: out of the bottom of their cabinet into the aisle below its
row, along it to the aisle beside the far cabinet's column, along that to the aisle below the far
cabinet's row, and up into it. Nothing runs under a cabinet it does not end in. Each piece of
aisle carries every cable routed through it: drawn once, as wide as its count (logarithmic), with
the count on it. A cabinet names its devices and its cables out; its tooltip (and `data-peers`)
lists the cabinets it is cabled to, and in a sheet it links to its rack sheet.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter

import numpy as np

from ibtool.drawing.scene import Node, Scene, Wire, shape
from ibtool.fabric import SWITCH

CW, CH = 72, 46  # cabinet
GAP = 34  # aisle width


def _x(col: int) -> float:
    return 20 + GAP + col * (CW + GAP) + CW / 2


def _y(row: int) -> float:
    return 20 + GAP + row * (CH + GAP) + CH / 2


def _aisle_y(t: int) -> float:
    """The aisle above row t (t = rows: below the last)."""
    return 20 + GAP / 2 + t * (CH + GAP)


def _aisle_x(u: int) -> float:
    return 20 + GAP / 2 + u * (CW + GAP)


def route(ra: int, ca: int, rb: int, cb: int) -> list[tuple[float, float]]:
    """The tray route from cabinet (ra, ca) to cabinet (rb, cb), as a polyline of aisle points."""
    xa, xb = _x(ca), _x(cb)
    ya = _aisle_y(ra + 1)
    yb = _aisle_y(rb + 1)
    pts = [(xa, _y(ra) + CH / 2), (xa, ya)]
    if ra == rb:
        pts += [(xb, ya)]
    else:
        u = cb if cb > ca else cb + 1  # the aisle beside the far column, on the near side
        if ca == cb:
            u = cb + 1
        xu = _aisle_x(u)
        pts += [(xu, ya), (xu, yb), (xb, yb)]
    pts.append((xb, _y(rb) + CH / 2))
    return pts


@shape("floor", rank=30, summary="the cabinets on the floor (a layout of more than one cabinet), cables along the aisles")
def _draw(f, layout=None, links=None) -> Scene | None:
    return scene(layout, links) if layout is not None and layout.num_cabinets > 1 else None


def scene(layout, links=None) -> Scene:
    f = layout.fabric
    rows, cols = layout.grid
    ncab = layout.num_cabinets
    width = 40 + GAP + cols * (CW + GAP)
    height = 40 + GAP + rows * (CH + GAP)
    a = layout.cabinet[np.asarray(f.link_a, dtype=np.int64)]
    b = layout.cabinet[np.asarray(f.link_b, dtype=np.int64)]
    placed = (a >= 0) & (b >= 0)
    between = placed & (a != b)
    pairs: dict[tuple[int, int], list[int]] = {}
    for li in np.flatnonzero(between).tolist():
        x, y = int(a[li]), int(b[li])
        pairs.setdefault((min(x, y), max(x, y)), []).append(li)
    inside = Counter(a[placed & (a == b)].tolist())
    out_of = Counter()
    peers: dict[int, Counter] = {c: Counter() for c in range(ncab)}
    for (x, y), lis in pairs.items():
        out_of[x] += len(lis)
        out_of[y] += len(lis)
        peers[x][y] += len(lis)
        peers[y][x] += len(lis)
    unplaced = int((~placed).sum())
    sc = Scene(f, width, height, f"floor: {ncab} cabinets, {sum(len(v) for v in pairs.values())} cables between "
                                 f"cabinets")
    R, C = layout.cabinet_row, layout.cabinet_col
    # the aisles: each cut at every point a route turns or a cabinet drops in; every piece holds
    # the cables routed along it (its count, and the links a heat map colours it by)
    hstops = {t: sorted({_aisle_x(u) for u in range(cols + 1)} | {_x(c) for c in range(cols)}) for t in range(rows + 1)}
    vstops = {u: sorted({_aisle_y(t) for t in range(rows + 1)}) for u in range(cols + 1)}
    hseg: dict[tuple[int, int], list[int]] = {}
    vseg: dict[tuple[int, int], list[int]] = {}
    hrow = {_aisle_y(t): t for t in range(rows + 1)}
    vcol = {_aisle_x(u): u for u in range(cols + 1)}
    for (x, y), lis in pairs.items():
        pts = route(int(R[x]), int(C[x]), int(R[y]), int(C[y]))
        for (x1, y1), (x2, y2) in zip(pts[1:-1], pts[2:-1]):
            if y1 == y2 and x1 != x2:
                t = hrow[y1]
                i, j = sorted((bisect_left(hstops[t], x1), bisect_left(hstops[t], x2)))
                for k in range(i, j):
                    hseg.setdefault((t, k), []).extend(lis)
            elif x1 == x2 and y1 != y2:
                u = vcol[x1]
                i, j = sorted((bisect_left(vstops[u], y1), bisect_left(vstops[u], y2)))
                for k in range(i, j):
                    vseg.setdefault((u, k), []).extend(lis)
    for (t, k), lis in sorted(hseg.items()):
        y, n = _aisle_y(t), len(lis)
        # not through add_wire: a cable runs along several pieces, and a mark follows its own route
        sc.wires.append(Wire([(hstops[t][k], y), (hstops[t][k + 1], y)], "tray", lis, title=f"{n} cables in this aisle",
                             label=f"{n:,}", width=_w(n), data={"count": n}))
    for (u, k), lis in sorted(vseg.items()):
        x, n = _aisle_x(u), len(lis)
        sc.wires.append(Wire([(x, vstops[u][k]), (x, vstops[u][k + 1])], "tray", lis, title=f"{n} cables in this aisle",
                             label=f"{n:,}", width=_w(n), data={"count": n}))
    # each cabinet's drop into the aisle below it
    for c in range(ncab):
        if out_of[c]:
            x, y = _x(int(C[c])), _y(int(R[c]))
            sc.add_wire(Wire([(x, y + CH / 2), (x, _aisle_y(int(R[c]) + 1))], "drop", [],
                             title=f"{layout.cabinet_names[c]}: {out_of[c]} cables to other cabinets",
                             width=_w(out_of[c]), data={"cabinet": layout.cabinet_names[c]}))
    # the cabinets
    devs_of: dict[int, list[int]] = {}
    for i, c in enumerate(layout.cabinet.tolist()):
        if c >= 0:
            devs_of.setdefault(c, []).append(i)
    for c in range(ncab):
        devs = devs_of.get(c, [])
        nsw = sum(1 for i in devs if f.types[i] == SWITCH)
        name = layout.cabinet_names[c]
        top = ", ".join(f"{layout.cabinet_names[p]} ({k})" for p, k in peers[c].most_common(12))
        more = len(peers[c]) - 12
        title = (f"{name}: {nsw} switches, {len(devs) - nsw} HCAs; {inside[c]} cables inside, {out_of[c]} to "
                 f"{len(peers[c])} other cabinets" + (f": {top}" + (f" and {more} more" if more > 0 else "")
                                                       if peers[c] else ""))
        sub = f"{nsw} sw {len(devs) - nsw} hca" if devs else "empty"
        sc.add_node(Node(name, _x(int(C[c])), _y(int(R[c])), CW, CH, f"cab-{layout.cabinet_kind[c]}", label=name,
                         size=8, devices=tuple(devs), title=title, sub=sub + (f", {out_of[c]} out" if out_of[c] else ""),
                         href=(links or {}).get(c),
                         data={"cabinet": name,
                               "peers": " ".join(layout.cabinet_names[p] for p in sorted(peers[c]))}))
    sc.router = lambda na, nb: route(*_rc(layout, na), *_rc(layout, nb))
    sc.note = (f"the cabinet floor ({rows} x {cols}); the {sum(len(v) for v in pairs.values()):,} cables between "
               f"cabinets routed along the aisles, each piece of aisle with the number of cables in it"
               + (f"; {unplaced:,} cables to devices the layout does not place are not drawn" if unplaced else ""))
    return sc


def _rc(layout, node: Node) -> tuple[int, int]:
    c = layout.cabinet_names.index(node.key)
    return int(layout.cabinet_row[c]), int(layout.cabinet_col[c])


def _w(n: int) -> float:
    return min(9.0, 1.0 + 1.3 * math.log2(n)) if n > 0 else 0.0
