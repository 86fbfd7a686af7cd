"""The drawing room: the fabric drawn, for the cabling sheets and the verification reports alike.

One module per family shape, each turning a Fabric (and its Layout) into a Scene of nodes and
wires: `kns` (paper 000's Fig. 7 grid), `tree` (switches by level), `floor` (cabinets on the floor,
cables routed along the aisles as counted bundles); `rack` draws one rack's elevation and `chart`
a histogram with its axes. A shape registers itself (`@shape(name, rank=...)`, scene.SHAPES, the
one Registry): `scene_for` tries them by rank, so a new drawing is one module. A Scene takes marks (findings, in plain words: a cable by its ends, a
device by its name, a channel) and heat layers (a value per link), and `scene.render` writes it as
one self-contained SVG (`svg`: styles inside, labels that never overlap).

    from ibtool import drawing
    svg, note = drawing.topology(layout)            # the shape that fits the family
    sc = drawing.scene_for(fabric, layout)          # ... as a Scene, to mark findings on
    sc.marks.append(Mark("missing", "C0043", "...", ends=(("R[1,0]", 2), ("S[0,1]", 2))))
    svg = drawing.render(sc)

It imports only the fabric and the layout: what it draws on comes in as plain data.
"""

from __future__ import annotations

from ibtool.drawing import floor, rack
from ibtool.drawing.scene import SHAPES, Heat, Mark, Scene, render
from ibtool.drawing.svg import PRINT, made_at

__all__ = ["Heat", "Mark", "Scene", "floor_plan", "made_at", "rack_elevation", "render", "scene_for",
           "standalone", "topology"]


def scene_for(fabric, layout=None, links: dict[int, str] | None = None) -> Scene | None:
    """The drawing that fits the fabric: the registered shapes by rank (the KNS grid, the tree
    levels, the cabinet floor with a layout of more than one cabinet, levels by hop distance from
    the HCAs), the first that draws it; None when none does."""
    for s in sorted((s for _, s in SHAPES.items()), key=lambda s: (s.rank, s.name)):
        sc = s.draw(fabric, layout, links)
        if sc is not None:
            return sc
    return None


def topology(layout, desc: str = "", links: dict[int, str] | None = None) -> tuple[str | None, str]:
    """(svg or None, what it shows): the family's drawing of layout.fabric, for the sheets (links:
    as for floor_plan, when the drawing is the floor)."""
    sc = scene_for(layout.fabric, layout, links)
    if sc is None:
        return None, f"no drawing: {layout.fabric.num_nodes:,} devices in one cabinet"
    return render(sc, desc=desc), sc.note


def floor_plan(layout, desc: str = "", links: dict[int, str] | None = None) -> str:
    """The cabinet floor with the cables between cabinets routed along the aisles; `links`:
    cabinet -> the page a click on it opens (its rack sheet)."""
    return render(floor.scene(layout, links), desc=desc)


def rack_elevation(layout, cabinet: int, desc: str = "") -> str:
    return rack.elevation(layout, cabinet, desc=desc)


def standalone(svg: str) -> str:
    """The file of a drawing rendered for a page: the same drawing, with an XML declaration and
    its own print layout (landscape paper, scaled to fit)."""
    head, sep, tail = svg.partition("</style>")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + head + PRINT + sep + tail
