"""SVG drawings for the cabling sheets: rack elevations, the topology, and the floor.

Each function returns one self-contained <svg> element (text). Every device drawn carries
`data-device="<name>"`, so a test (or a script) can check that a drawing shows every device.
"""

from __future__ import annotations

from collections import Counter
from html import escape

import numpy as np

from ibtool.fabric import CA, SWITCH
from ibtool.layout.model import FLOOR

U_PX = 14  # one rack unit on the sheet
MAX_DRAWN = 3000  # devices beyond which the topology drawing is left out (unreadable, and slow to print)


def _svg(w: float, h: float, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
            f'viewBox="0 0 {w:.0f} {h:.0f}" role="img" aria-label="{escape(title)}">'
            f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def rack_elevation(layout, cabinet: int) -> str:
    """Front and back of one cabinet, U 1 at the bottom; each device a box with its name."""
    f, site = layout.fabric, layout.site
    nodes = np.flatnonzero(layout.cabinet == cabinet)
    faces = sorted(set(int(layout.side[i]) for i in nodes)) or [0]
    cu = site.cabinet_u
    col_w, top, left = 240, 24, 34
    w = left + len(faces) * (col_w + 20)
    h = top + cu * U_PX + 10
    body = []
    for k, face in enumerate(faces):
        x0 = left + k * (col_w + 20)
        body.append(f'<text x="{x0 + col_w / 2}" y="16" text-anchor="middle" class="face">'
                    f'{"front" if face == 0 else "back"}</text>')
        body.append(f'<rect x="{x0}" y="{top}" width="{col_w}" height="{cu * U_PX}" class="rack"/>')
        for u in range(1, cu + 1):
            y = top + (cu - u) * U_PX
            if k == 0:
                body.append(f'<text x="{left - 4}" y="{y + U_PX - 3}" text-anchor="end" class="u">{u}</text>')
            if u <= site.reserved_u:
                body.append(f'<rect x="{x0}" y="{y}" width="{col_w}" height="{U_PX}" class="reserved"/>')
        for i in nodes:
            if int(layout.side[i]) != face:
                continue
            size = site.switch_u if f.types[i] == SWITCH else site.hca_u
            u = int(layout.u[i])
            y = top + (cu - (u + size - 1)) * U_PX
            cls = "switch" if f.types[i] == SWITCH else "hca"
            name = escape(f.names[i])
            body.append(f'<g data-device="{name}"><rect x="{x0 + 2}" y="{y + 1}" width="{col_w - 4}" '
                        f'height="{size * U_PX - 2}" class="{cls}"/><text x="{x0 + 8}" y="{y + size * U_PX - 4}" '
                        f'class="dev">U{u} {name}</text></g>')
    return _svg(w, h, body, f"rack {layout.cabinet_names[cabinet]}")


def _kns_drawing(f) -> str | None:
    """Paper 000 Fig. 7: routers on the grid of their first two coordinates, dimension 0's
    switches at the end of each row, dimension 1's below each column; one panel per value of
    the higher coordinates (at most 16 panels)."""
    routers = [i for i in range(f.num_nodes) if f.roles[i] == "router"]
    n = len(f.labels[routers[0]]["coords"])
    k = max(max(f.labels[r]["coords"]) for r in routers) + 1
    panels = sorted({tuple(f.labels[r]["coords"][:-2]) for r in routers}) if n > 2 else [()]
    if len(panels) > 16:
        return None
    cell, pad = 56, 40
    pw = (k + 1) * cell + pad
    ph = (k + 1) * cell + pad if n >= 2 else 2 * cell + pad
    body = []
    drawn_sw = set()
    for pi, hi in enumerate(panels):
        ox, oy = (pi % 4) * pw + 10, (pi // 4) * ph + 24
        if n > 2:
            body.append(f'<text x="{ox}" y="{oy - 8}" class="panel">[{",".join(map(str, hi))},*,*]</text>')
        pos = {}
        for r in routers:
            c = f.labels[r]["coords"]
            if tuple(c[:-2]) != hi and n > 2:
                continue
            x = ox + pad + c[-1] * cell
            y = oy + pad + (c[-2] * cell if n >= 2 else 0)
            pos[r] = (x, y)
        for r, (x, y) in pos.items():
            for (_, sw, _) in f.neighbors(r):
                lab = f.labels[sw]
                if f.types[sw] != SWITCH or "dim" not in lab or lab["dim"] > 1:
                    continue
                if lab["dim"] == 0:  # a row's switch, right of the row
                    sx, sy = ox + pad + k * cell, y
                else:
                    sx, sy = x, oy + pad + k * cell
                body.append(f'<line x1="{x}" y1="{y}" x2="{sx}" y2="{sy}" class="d{lab["dim"]}"/>')
                if sw not in drawn_sw:
                    drawn_sw.add(sw)
                    body.append(f'<g data-device="{escape(f.names[sw])}"><rect x="{sx - 18}" y="{sy - 9}" width="36" '
                                f'height="18" class="switch"/><text x="{sx}" y="{sy + 4}" text-anchor="middle" '
                                f'class="small">{escape(f.names[sw])}</text></g>')
        for r, (x, y) in pos.items():
            body.append(f'<g data-device="{escape(f.names[r])}"><circle cx="{x}" cy="{y}" r="14" class="router"/>'
                        f'<text x="{x}" y="{y + 4}" text-anchor="middle" class="small">{escape(f.names[r])}</text></g>')
    cols = min(4, len(panels))
    rows = -(-len(panels) // 4)
    return _svg(cols * pw + 20, rows * ph + 30, body, f"{f.name}: routers and indirect switches")


def _tree_drawing(f, key: str) -> str:
    """Switches in rows by level (top level at the top), HCAs below their switch; one line per cable."""
    levels: dict[int, list[int]] = {}
    for i in range(f.num_nodes):
        if f.types[i] == SWITCH and key in f.labels[i]:
            levels.setdefault(int(f.labels[i][key]), []).append(i)
    hcas = [i for i in range(f.num_nodes) if f.types[i] == CA]
    width = max([len(v) for v in levels.values()] + [1])
    sx = max(46, min(90, 1400 / width))
    w = width * sx + 40
    pos = {}
    ordered = sorted(levels, reverse=True)
    for row, lv in enumerate(ordered):
        nodes = levels[lv]
        off = (w - len(nodes) * sx) / 2
        for j, i in enumerate(nodes):
            pos[i] = (off + j * sx + sx / 2, 30 + row * 90)
    hy = 30 + len(ordered) * 90
    step = (w - 40) / max(1, len(hcas))
    for j, i in enumerate(hcas):
        pos[i] = (20 + j * step + step / 2, hy)
    body = []
    for a, b in zip(f.link_a, f.link_b):
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            body.append(f'<line x1="{x1:.1f}" y1="{y1}" x2="{x2:.1f}" y2="{y2}" class="cable"/>')
    for i, (x, y) in pos.items():
        name = escape(f.names[i])
        if f.types[i] == SWITCH:
            body.append(f'<g data-device="{name}"><rect x="{x - 20:.1f}" y="{y - 9}" width="40" height="18" '
                        f'class="switch"/><text x="{x:.1f}" y="{y + 4}" text-anchor="middle" class="small">{name}'
                        f'</text></g>')
        else:
            body.append(f'<g data-device="{name}"><circle cx="{x:.1f}" cy="{y}" r="4" class="hca"/></g>')
    return _svg(w, hy + 30, body, f"{f.name}: {key}s")


def floor_plan(layout) -> str:
    """The machine-room grid: every cabinet, and one line per pair of cabinets cabled together,
    as wide as the number of cables between them."""
    f = layout.fabric
    rows, cols = layout.grid
    cw, ch, gap = 70, 46, 16
    body = []
    centre = {}
    for c in range(layout.num_cabinets):
        x = 20 + int(layout.cabinet_col[c]) * (cw + gap)
        y = 20 + int(layout.cabinet_row[c]) * (ch + gap)
        centre[c] = (x + cw / 2, y + ch / 2)
        devs = np.flatnonzero(layout.cabinet == c)
        names = " ".join(escape(f.names[i]) for i in devs[:200])
        body.append(f'<g data-cabinet="{escape(layout.cabinet_names[c])}" data-devices="{names}">'
                    f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" class="cab-{layout.cabinet_kind[c]}"/>'
                    f'<text x="{x + cw / 2}" y="{y + 18}" text-anchor="middle" class="small">'
                    f'{escape(layout.cabinet_names[c])}</text><text x="{x + cw / 2}" y="{y + 34}" '
                    f'text-anchor="middle" class="tiny">{len(devs)} devices</text></g>')
    a = layout.cabinet[np.asarray(f.link_a, dtype=np.int64)]
    b = layout.cabinet[np.asarray(f.link_b, dtype=np.int64)]
    sel = (a != b) & (a != FLOOR) & (b != FLOOR)
    pairs = Counter(zip(np.minimum(a[sel], b[sel]).tolist(), np.maximum(a[sel], b[sel]).tolist()))
    lines = []
    for (x, y), count in pairs.most_common(4000):
        (x1, y1), (x2, y2) = centre[x], centre[y]
        lines.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" class="inter" '
                     f'stroke-width="{min(6.0, 0.6 + np.log2(count)):.1f}"><title>{count} cables</title></line>')
    return _svg(40 + cols * (cw + gap), 40 + rows * (ch + gap), lines + body,
                f"floor: {layout.num_cabinets} cabinets, {sum(pairs.values())} cables between cabinets")


def topology(layout) -> tuple[str | None, str]:
    """(svg or None, what it shows): KNS grid, tree levels, or the cabinet floor."""
    f = layout.fabric
    big = f.num_nodes > MAX_DRAWN
    if not big and any(r == "router" for r in f.roles) and all(
            "coords" in f.labels[i] for i in range(f.num_nodes) if f.roles[i] == "router"):
        svg = _kns_drawing(f)
        if svg:
            return svg, "routers on their grid with the indirect switches of dimensions 0 and 1 (paper 000, Fig. 7)"
    if not big:
        for key in ("level", "stage"):
            sw = [i for i in range(f.num_nodes) if f.types[i] == SWITCH]
            if sw and all(key in f.labels[i] for i in sw):
                return _tree_drawing(f, key), f"switches by {key}, nodes below"
    if layout.num_cabinets > 1:
        return floor_plan(layout), "the cabinet floor with the cables between cabinets"
    return None, f"no drawing: {f.num_nodes:,} devices in one cabinet"
