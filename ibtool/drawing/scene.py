"""A drawing before it is SVG: nodes (a device, or a group of devices drawn as one) and wires (a
cable, or a bundle of cables drawn as one), placed by a shape module (kns, tree, floor); marks
(findings) and heat (link loads) laid over them; then written out by `render`.

The marks are plain data, what a verification report says in words: a cable by its two ends
(device name, port), a device by its name, a directed channel. A mark on a planned cable is drawn
on that cable's wire (or on the bundle that carries it); a cable that is not in the plan (as found,
extra) between the nodes of its two devices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

from ibtool.drawing.svg import HEAT, Labels, document, ring, text_width
from ibtool.registry import Registry


@dataclass(frozen=True)
class Shape:
    """A drawing registered by its module: `draw(fabric, layout, links)` is its Scene, or None when
    the fabric is not of its shape; `drawing.scene_for` tries the shapes by `rank` (lowest first)
    and the first that draws wins."""
    name: str
    rank: int
    draw: Callable
    summary: str


SHAPES = Registry("drawing", "ibtool.drawing")


def shape(name: str, *, rank: int, summary: str):
    """Register a drawing (`@shape("kns", rank=10, summary=...)` above its function): a new
    drawing is one module of ibtool/drawing/ and no list to edit."""
    def wrap(fn):
        SHAPES.add(name, Shape(name, rank, fn, summary))
        return fn
    return wrap


@dataclass
class Node:
    """A drawn device, or a group of devices drawn as one box (centre x, y; size w, h)."""
    key: str
    x: float
    y: float
    w: float
    h: float
    cls: str
    label: str | None = None
    shape: str = "rect"  # rect | circle
    size: float = 8.0  # label font size
    vertical: bool = False  # label rotated to read upwards
    devices: tuple[int, ...] = ()
    title: str = ""
    href: str | None = None
    data: dict = field(default_factory=dict)
    sub: str = ""  # a second, smaller line under the label (groups: "8 switches")

    def box(self):
        return (self.x - self.w / 2, self.y - self.h / 2, self.x + self.w / 2, self.y + self.h / 2)


@dataclass
class Wire:
    """A drawn cable, or a bundle of cables (links: fabric link indices), as a polyline."""
    points: list[tuple[float, float]]
    cls: str
    links: list[int]
    title: str = ""
    label: str | None = None  # shown on the wire (a bundle's count)
    width: float | None = None
    data: dict = field(default_factory=dict)


@dataclass
class Mark:
    """A finding to draw. kind: miswired, found, missing, extra, degraded, health, cycle, down,
    detour (cables and channels); notfound, misplaced, extra, health, down (devices).
    ends: a cable ((device, port), (device, port)), ports None when unknown; device: a device name;
    arrow: a channel, drawn from ends[0] to ends[1]; label: what the drawing shows beside it (a
    cable ID, a step number); text: the whole finding (its tooltip); ref: the id of the finding
    in the page's list, for a link from the drawing."""
    kind: str
    label: str = ""
    text: str = ""
    ends: tuple | None = None
    device: str | None = None
    arrow: bool = False
    ref: str = ""
    drawn: bool = field(default=False, compare=False)  # set by render: found on the drawing


@dataclass
class Heat:
    """A value per fabric link (a heat map layer): name (the legend's title), values {link: v},
    details {link: text} for the tooltips."""
    name: str
    values: dict[int, float]
    details: dict[int, str] = field(default_factory=dict)


class Scene:
    def __init__(self, fabric, width: float, height: float, title: str, note: str = ""):
        self.fabric = fabric
        self.width, self.height = width, height
        self.title, self.note = title, note
        self.nodes: list[Node] = []
        self.wires: list[Wire] = []
        self.texts: list[tuple] = []  # (text, x, y, cls, anchor): titles placed before anything else
        self.under: list[str] = []  # raw SVG drawn below the wires (frames, buses)
        self.clear: list[tuple] = []  # boxes (x0, y0, x1, y1) the marks' labels keep off (the buses)
        self.node_of: dict[int, Node] = {}  # device -> the node that shows it
        self.wire_of: dict[int, Wire] = {}  # link -> the wire that shows it
        self.marks: list[Mark] = []
        self.heat: list[Heat] = []
        self.router = None  # (node_a, node_b) -> points: how a cable between two nodes runs (floors)
        self._names: dict[str, int] | None = None
        self._links: dict[tuple[int, int], int] | None = None

    # ---------------------------------------------------------------- building
    def add_node(self, node: Node) -> Node:
        self.nodes.append(node)
        for d in node.devices:
            self.node_of[d] = node
        return node

    def add_wire(self, wire: Wire) -> Wire:
        self.wires.append(wire)
        for li in wire.links:
            self.wire_of[li] = wire
        return wire

    def route(self, a: Node, b: Node) -> list[tuple[float, float]]:
        """Where a cable between two nodes runs: the shape's own routing, else straight between
        the nodes' borders."""
        if self.router is not None:
            return self.router(a, b)
        return [_border(a, b.x, b.y), _border(b, a.x, a.y)]

    # ---------------------------------------------------------------- lookups
    def device(self, name: str) -> int | None:
        if self._names is None:
            self._names = {n: i for i, n in enumerate(self.fabric.names)}
        return self._names.get(name)

    def link(self, a: tuple, b: tuple) -> int | None:
        """The fabric link between two ends (device name, port), or, with a port unknown, the
        first link between the two devices."""
        i, j = self.device(a[0]), self.device(b[0])
        if i is None or j is None:
            return None
        f = self.fabric
        for p, nb, q in f.neighbors(i):
            if nb == j and (a[1] is None or p == a[1]) and (b[1] is None or q == b[1]):
                return self._link_index(i, p)
        return None

    def _link_index(self, i: int, p: int) -> int | None:
        if self._links is None:
            f = self.fabric
            self._links = {}
            for li, (x, px, y, py) in enumerate(zip(f.link_a, f.link_pa, f.link_b, f.link_pb)):
                self._links[x, px] = li
                self._links[y, py] = li
        return self._links.get((i, p))


def _border(n: Node, tx: float, ty: float) -> tuple[float, float]:
    """The point where the line from n's centre towards (tx, ty) leaves n's box (or circle)."""
    dx, dy = tx - n.x, ty - n.y
    if dx == 0 and dy == 0:
        return n.x, n.y
    if n.shape == "circle":
        r = n.w / 2
        d = (dx * dx + dy * dy) ** 0.5
        return n.x + dx * r / d, n.y + dy * r / d
    sx = (n.w / 2) / abs(dx) if dx else float("inf")
    sy = (n.h / 2) / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return n.x + dx * s, n.y + dy * s


def _path(points) -> str:
    return "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _mid(points) -> tuple[float, float, float, float]:
    """The middle of a polyline's longest segment, and that segment's direction (dx, dy)."""
    best = None
    for (x1, y1), (x2, y2) in zip(points, points[1:]):
        d = abs(x2 - x1) + abs(y2 - y1)
        if best is None or d > best[0]:
            best = (d, (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1)
    if best is None:
        x, y = points[0]
        return x, y, 1.0, 0.0
    return best[1], best[2], best[3], best[4]


def _attrs(d: dict) -> str:
    return "".join(f' data-{k}="{escape(str(v))}"' for k, v in d.items() if v is not None and v != "")


def heat_bin(v: float, vmin: float, vmax: float) -> int:
    """The colour of v on the scale from the layer's least to its greatest value."""
    if vmax <= vmin:
        return 0
    return min(len(HEAT) - 1, int((v - vmin) / (vmax - vmin) * len(HEAT)))


def render(scene: Scene, standalone: bool = False, desc: str = "") -> str:
    """The scene as one self-contained SVG document (see ibtool.drawing.svg)."""
    labels = Labels(bounds=(0, 0, scene.width, scene.height))  # no label cut off at the drawing's edge
    avoid = Labels()  # node boxes: mark labels keep off them
    buses = Labels()  # and port labels off the buses too
    for box in scene.clear:
        buses.take(box)
    out: list[str] = []
    f = scene.fabric
    extra_h = 0.0
    legend: list[str] = []
    if scene.heat:
        extra_h = 28.0 * len(scene.heat) + 6
        legend = _heat_legend(scene, scene.height + 6)
    for t in scene.texts:
        text, x, y, cls, anchor = t
        labels.place(text, [(x, y, anchor)], size=11 if cls == "title" else 8, cls=cls)
    out += scene.under
    # the wires, heat-coloured where a heat layer gives them a value
    layers = []
    for h in scene.heat:
        layers.append((h, min(h.values.values(), default=0), max(h.values.values(), default=0)))
    for w in scene.wires:
        cls = w.cls
        data = dict(w.data)
        tip = w.title
        for k, (h, vmin, vmax) in enumerate(layers):
            vals = [h.values[li] for li in w.links if li in h.values]
            if not vals:
                continue
            b = heat_bin(max(vals), vmin, vmax)
            data[f"h{k}"] = b
            if k == 0:
                cls += f" h{b}"
            det = "; ".join(h.details[li] for li in w.links[:4] if li in h.details)
            tip += f"\n{h.name}: {max(vals):g}" + (f" ({det})" if det else "")
        sw = f' stroke-width="{w.width:.2f}"' if w.width else ""
        title = f"<title>{escape(tip)}</title>" if tip else ""
        out.append(f'<path d="{_path(w.points)}" class="{cls}"{sw}{_attrs(data)}>{title}</path>')
    # the nodes
    for n in scene.nodes:
        x0, y0, x1, y1 = n.box()
        avoid.take((x0 - 1, y0 - 1, x1 + 1, y1 + 1))
        shape = (f'<circle cx="{n.x:.1f}" cy="{n.y:.1f}" r="{n.w / 2:.1f}" class="{n.cls}"/>' if n.shape == "circle"
                 else f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" class="{n.cls}"/>')
        data = dict(n.data)
        if len(n.devices) == 1 and "device" not in data:
            data["device"] = f.names[n.devices[0]]
        title = f"<title>{escape(n.title)}</title>" if n.title else ""
        g = f'<g{_attrs(data)}>{title}{shape}</g>'
        if n.href:
            g = f'<a href="{escape(n.href)}">{g}</a>'
        out.append(g)
    # the marks: over everything, their labels placed first
    marked = _marks(scene, out, labels, avoid, buses)
    # node labels, then wire labels (counts)
    for n in scene.nodes:
        if not n.label:
            continue
        spots = ([(n.x + n.size * 0.35, n.y, "middle", True)] if n.vertical else
                 [(n.x, n.y + n.size * 0.33 - (n.size * 0.55 if n.sub else 0), "middle")])
        if n.shape != "circle" and not n.vertical and text_width(n.label, n.size) > n.w:
            spots.append((n.x, n.y + n.h / 2 + n.size + 1, "middle"))
        labels.place(n.label, spots, size=n.size, cls="halo" if n.shape == "circle" or
                     text_width(n.label, n.size) > n.w else ("small" if n.size < 8 else ""))
        if n.sub and not n.vertical:
            labels.place(n.sub, [(n.x, n.y + n.size * 0.33 + 4.5, "middle")], size=6, cls="tiny")
    for w in scene.wires:
        if not w.label:
            continue
        x, y, dx, dy = _mid(w.points)
        spots = [(x, y + 2.5, "middle"), (x, y - 3, "middle"), (x, y + 9, "middle"), (x + 3, y + 2.5, "start"),
                 (x - 3, y + 2.5, "end")]
        labels.place(w.label, spots, size=7, cls="count halo")
    out += marked
    out += labels.out
    out += legend
    return document(scene.width, scene.height + extra_h, scene.title, out, standalone=standalone, desc=desc,
                    extra=f'<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" '
                          f'markerWidth="{HEAD}" markerHeight="{HEAD}" orient="auto"><path d="M0,0L10,5L0,10z"/>'
                          f'</marker></defs>' if any(m.arrow for m in scene.marks) else "")


def _heat_legend(scene: Scene, y: float) -> list[str]:
    """One row per heat layer: its name, the colours from its least to its greatest value."""
    out = []
    for k, h in enumerate(scene.heat):
        vmin, vmax = min(h.values.values(), default=0), max(h.values.values(), default=0)
        yk = y + 28 * k
        g = [f'<g class="legend" data-layer="h{k}"><text x="10" y="{yk + 9:.0f}" class="axis">{escape(h.name)}</text>']
        x0 = 10 + max(text_width(x.name, 9) for x in scene.heat) + 8
        for i, c in enumerate(HEAT):
            lo = vmin + (vmax - vmin) * i / len(HEAT)
            hi = vmin + (vmax - vmin) * (i + 1) / len(HEAT)
            g.append(f'<rect x="{x0 + i * 16:.0f}" y="{yk:.0f}" width="16" height="10" fill="{c}">'
                     f'<title>{lo:.4g} .. {hi:.4g}</title></rect>')
        g.append(f'<text x="{x0:.0f}" y="{yk + 19:.0f}" class="tiny">{vmin:g}</text>'
                 f'<text x="{x0 + len(HEAT) * 16:.0f}" y="{yk + 19:.0f}" text-anchor="end" class="tiny">'
                 f'{vmax:g}</text></g>')
        out += g
    return out


def _marks(scene: Scene, out: list[str], labels: Labels, avoid: Labels, buses: Labels) -> list[str]:
    """Draw every mark: a cable's wire (or bundle) in the mark's colour, a device's outline; and
    its label near it, off other labels and off the nodes. Returns the SVG; sets Mark.drawn."""
    res: list[str] = []
    f = scene.fabric
    for m in scene.marks:
        attrs = _attrs({"mark": m.kind, "ref": m.ref, "label": m.label})
        tip = f"<title>{escape(m.text)}</title>" if m.text else ""
        anchor = None
        if m.ends is not None:
            a, b = m.ends
            li = scene.link(a, b)
            pts = None
            if li is not None and li in scene.wire_of:
                pts = scene.wire_of[li].points
            else:
                ia, ib = scene.device(a[0]), scene.device(b[0])
                na = scene.node_of.get(ia) if ia is not None else None
                nb = scene.node_of.get(ib) if ib is not None else None
                if na is not None and nb is not None and na is not nb:
                    pts = scene.route(na, nb)
                    if m.kind == "found":  # beside the planned wire it may share a path with
                        pts = [(x + 3, y + 3) for x, y in pts]
                elif na is not None or nb is not None:  # one end not drawn: mark the other's node
                    n = na or nb
                    res.append(_outline(n, m.kind, attrs, tip))
                    anchor = (n.x, n.y, n.w / 2 + 4, n.h / 2 + 4)
                    m.drawn = True
            if pts and m.arrow:  # a channel: an arrow beside its cable, from sender to receiver
                pts = _arrow(_towards(pts, scene, a, b), scene, a, b)
            if pts:
                arrow = ' marker-end="url(#arrow)"' if m.arrow else ""
                res.append(f'<path d="{_path(pts)}" class="m {m.kind}"{arrow}{attrs}>{tip}</path>')
                if m.kind == "miswired":  # a hollow line: no bus is drawn so
                    res.append(f'<path d="{_path(pts)}" class="m core"/>')
                x, y, _, _ = _mid(pts)
                anchor = (x, y, 5, 5)
                m.drawn = True
                if li is not None and m.kind not in ("cycle", "detour", "down") and pts:
                    # the ports at both ends, where they are told apart on the drawing (the wire's
                    # points run in the drawing's own order: turned to run from a to b)
                    ab = _towards(pts, scene, a, b)
                    for (dev, port), (px, py) in ((a, ab[0]), (b, ab[-1])):
                        if port is not None and f.types[scene.device(dev)] == 2:
                            _place_off(labels, (avoid, buses), f"P{port}", ring(px, py, 5, size=7, rings=3), 7,
                                       f"mark {m.kind} halo")
        elif m.device is not None:
            i = scene.device(m.device)
            n = scene.node_of.get(i) if i is not None else None
            if n is not None:
                res.append(_outline(n, m.kind, attrs, tip))
                anchor = (n.x, n.y, n.w / 2 + 4, n.h / 2 + 4)
                m.drawn = True
        if anchor is not None and m.label:
            x, y, rx, ry = anchor
            _place_off(labels, (avoid,), m.label, ring(x, y, max(rx, 6), size=8, rings=8), 8, f"mark {m.kind} halo",
                       attrs)
    return res


HEAD = 6.0  # a channel's arrowhead, px
BESIDE = 5.0  # a channel's arrow runs this far beside its cable's line, on its right-hand side


def _node(scene: Scene, end: tuple) -> Node | None:
    i = scene.device(end[0])
    return scene.node_of.get(i) if i is not None else None


def _towards(pts, scene: Scene, a: tuple, b: tuple):
    """The wire's points in the order of the channel a -> b: the end nearer a's node first."""
    na, nb = _node(scene, a), _node(scene, b)
    if na is None or nb is None or na is nb:
        return pts

    def d(p, n):
        return ((p[0] - n.x) ** 2 + (p[1] - n.y) ** 2) ** 0.5
    as_is = d(pts[0], na) + d(pts[-1], nb)
    return pts if as_is <= d(pts[-1], na) + d(pts[0], nb) else pts[::-1]


def _inside(n: Node, x: float, y: float, pad: float) -> bool:
    if n.shape == "circle":
        return (x - n.x) ** 2 + (y - n.y) ** 2 < (n.w / 2 + pad) ** 2
    x0, y0, x1, y1 = n.box()
    return x0 - pad < x < x1 + pad and y0 - pad < y < y1 + pad


def _arrow(pts, scene: Scene, a: tuple, b: tuple):
    """A channel drawn as an arrow: the longest segment of its cable's line (in channel order),
    moved BESIDE it to its right-hand side (so a -> b and b -> a fall on opposite sides) and cut
    where it would enter either end's node, so it covers neither the cable's ends (the ports) nor
    the devices."""
    (x1, y1), (x2, y2) = max(zip(pts, pts[1:]), key=lambda s: abs(s[1][0] - s[0][0]) + abs(s[1][1] - s[0][1]))
    length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
    if length == 0:
        return pts
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    ox, oy = -uy * BESIDE, ux * BESIDE
    ends = [n for n in (_node(scene, a), _node(scene, b)) if n is not None]
    steps = 40
    free = [k for k in range(steps + 1)
            if not any(_inside(n, x1 + ox + ux * length * k / steps, y1 + oy + uy * length * k / steps, 1.5)
                       for n in ends)]
    lo, hi = (free[0], free[-1]) if free else (0, steps)
    t0, t1 = length * lo / steps, length * hi / steps - 1.0
    if t1 - t0 < HEAD + 1:  # too short to show a shaft: keep the head's length at least
        t1 = t0 + HEAD + 1
    return [(x1 + ox + ux * t0, y1 + oy + uy * t0), (x1 + ox + ux * t1, y1 + oy + uy * t1)]


def _place_off(labels: Labels, avoid: tuple[Labels, ...], text: str, spots, size: float, cls: str,
               attrs: str = "") -> None:
    """A mark's label: at the first spot off other labels and off the nodes, else off labels only."""
    for s in spots:
        bx = labels.box(text, s[0], s[1], size, s[2])
        if labels.free(bx) and all(a.free(bx) for a in avoid):
            labels.place(text, [s], size=size, cls=cls, attrs=attrs)
            return
    labels.place(text, spots, size=size, cls=cls, attrs=attrs)


def _outline(n: Node, kind: str, attrs: str, tip: str) -> str:
    if n.shape == "circle":
        return (f'<circle cx="{n.x:.1f}" cy="{n.y:.1f}" r="{n.w / 2 + 3:.1f}" class="mdev {kind}"{attrs}>'
                f'{tip}</circle>')
    x0, y0, _, _ = n.box()
    return (f'<rect x="{x0 - 3:.1f}" y="{y0 - 3:.1f}" width="{n.w + 6:.1f}" height="{n.h + 6:.1f}" '
            f'class="mdev {kind}"{attrs}>{tip}</rect>')
