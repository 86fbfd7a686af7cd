"""ibtool.drawing: the drawings of the cabling package stand alone, and stay legible at scale —
no two labels overlap (measured by Chromium), no cable or bundle runs under a cabinet it does not
end in (from the SVG's own geometry)."""

import io
import re
import xml.etree.ElementTree as ET

import pytest

from support import chromium_page, ibtool
from ibtool import drawing
from ibtool.plan import read_layout, read_plan

SVG = "{http://www.w3.org/2000/svg}"

# the boxes of every <text> as Chromium lays it out (rotation included)
BOXES = """() => Array.from(document.querySelectorAll('svg text')).map(t => {
  const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, t.textContent]; })"""


def overlaps(boxes, tol=0.5):
    """Pairs of label boxes that overlap by more than `tol` px both ways (a grid of buckets)."""
    grid, out = {}, []
    for k, (x0, y0, x1, y1, s) in enumerate(boxes):
        if x1 - x0 <= 0 or y1 - y0 <= 0:
            continue
        cells = [(i, j) for i in range(int(x0 // 50), int(x1 // 50) + 1) for j in range(int(y0 // 50), int(y1 // 50) + 1)]
        for c in cells:
            for m in grid.get(c, ()):
                a0, b0, a1, b1, t = boxes[m]
                if min(x1, a1) - max(x0, a0) > tol and min(y1, b1) - max(y0, b0) > tol:
                    out.append((s, t))
            grid.setdefault(c, []).append(k)
    return sorted(set(out))


def _segments(d: str):
    pts = [tuple(map(float, p.split(","))) for p in re.findall(r"-?[\d.]+,-?[\d.]+", d)]
    return list(zip(pts, pts[1:]))


def _crosses(seg, rect, inset=0.5) -> bool:
    """Does an axis-parallel or straight segment enter the inside of rect (x0, y0, x1, y1)?"""
    (x1, y1), (x2, y2) = seg
    rx0, ry0, rx1, ry1 = rect[0] + inset, rect[1] + inset, rect[2] - inset, rect[3] - inset
    # Liang-Barsky clipping
    t0, t1 = 0.0, 1.0
    dx, dy = x2 - x1, y2 - y1
    for p, q in ((-dx, x1 - rx0), (dx, rx1 - x1), (-dy, y1 - ry0), (dy, ry1 - y1)):
        if p == 0:
            if q < 0:
                return False
        else:
            t = q / p
            if p < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
    return t0 < t1


def under_cabinets(svg: str) -> list[str]:
    """Cables and bundles of a floor drawing that run under a cabinet they do not end in."""
    root = ET.fromstring(svg)
    cabs = {}
    for g in root.iter(f"{SVG}g"):
        name = g.get("data-cabinet")
        r = g.find(f"{SVG}rect")
        if name and r is not None:
            x, y, w, h = (float(r.get(k)) for k in ("x", "y", "width", "height"))
            cabs[name] = (x, y, x + w, y + h)
    assert cabs
    bad = []
    paths = [p for p in root.iter(f"{SVG}path") if {"tray", "drop", "bundle", "m"} & set(p.get("class", "").split())]
    assert paths
    for p in paths:
        own = p.get("data-cabinet")
        for seg in _segments(p.get("d")):
            for name, rect in cabs.items():
                if name != own and _crosses(seg, rect):
                    bad.append(f"{p.get('class')} {seg} under {name}")
    return bad


def _changed(a, b, dx: int, dy: int) -> int:
    """Pixels that differ (by more than 48 of 255) between a and b shifted by (dx, dy)."""
    from PIL import ImageChops
    w, h = min(a.size[0], b.size[0]), min(a.size[1], b.size[1])
    A = a.crop((max(0, dx), max(0, dy), w + min(0, dx), h + min(0, dy)))
    B = b.crop((max(0, -dx), max(0, -dy), w + min(0, -dx), h + min(0, -dy)))
    return sum(ImageChops.difference(A, B).convert("L").histogram()[49:])


def render_check(page, svg_text: str, tmp_path, name: str):
    f = tmp_path / f"{name}.svg"
    f.write_text(drawing.standalone(svg_text))
    page.goto(f.as_uri())
    boxes = page.evaluate(BOXES)
    return boxes


@pytest.fixture(scope="module")
def skywalk_plan(tmp_path_factory):
    d = tmp_path_factory.mktemp("skywalk") / "plan"
    ibtool("topo", "skywalk", "--z", "8", "--c", "256", "--di", "7", "--do", "4", "--out", d, check=0)
    return d


@pytest.fixture(scope="module")
def skywalk(skywalk_plan):
    f, pd, _ = read_plan(skywalk_plan)
    return read_layout(f, pd)


@pytest.fixture(scope="module")
def kns12(tmp_path_factory):
    d = tmp_path_factory.mktemp("kns12") / "plan"
    ibtool("topo", "kns", "--k", "12", "--n", "3", "--out", d, check=0)
    f, pd, _ = read_plan(d)
    return read_layout(f, pd)


def zoom_and_pan(page, index, section: str, level: int) -> dict:
    """Open a cabling index and zoom its drawing `section` (Topology, Floor) to `level` (2: 200 %):
    what it shows fitted, zoomed and after a drag, and on paper."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(index.as_uri())
    sec = page.locator("section.drawing", has=page.locator(f"h2:text-is('{section}')"))
    box, bar = sec.locator(".zoom"), sec.locator(".zoombar")
    svg = box.locator("svg.ibd")
    natural = float(svg.get_attribute("width"))
    label = ("() => Math.max(...[...document.querySelectorAll('.zoom svg.ibd text')].slice(0, 50)"
             ".map(t => t.getBoundingClientRect().height))")
    out = {"bar": bar.inner_text(), "file": bar.locator("a").get_attribute("href"),
           "fit": svg.bounding_box()["width"] / natural, "fit_px": svg.bounding_box()["width"],
           "box": box.evaluate("b => b.clientWidth"), "fit_text": page.evaluate(label)}
    bar.locator(f"button[data-zoom='{level}']").click()
    out["zoomed"] = svg.bounding_box()["width"] / natural
    out["zoomed_text"] = page.evaluate(label)
    out["said"] = bar.locator(".zoomnow").inner_text()
    out["room"] = box.evaluate("b => [b.scrollWidth - b.clientWidth, b.scrollHeight - b.clientHeight]")
    b = box.bounding_box()
    box.evaluate("b => b.scrollTo(0, 0)")
    before = box.evaluate("b => [b.scrollLeft, b.scrollTop]")
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + 300)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2 - 200, b["y"] + 150, steps=8)
    page.mouse.up()
    after = box.evaluate("b => [b.scrollLeft, b.scrollTop]")
    out["dragged"] = [after[0] - before[0], after[1] - before[1]]
    page.emulate_media(media="print")
    out["printed"] = (svg.bounding_box()["width"], page.evaluate("document.documentElement.clientWidth"))
    page.emulate_media(media="screen")
    return out


def check_zoom(z: dict, index, level: int):
    assert "To read its labels, zoom in" in z["bar"] and "drag or scroll to move around" in z["bar"]
    assert (index.parent / z["file"]).is_file()  # the drawing by itself, at full size
    assert z["fit"] <= 1.001 and z["fit_px"] <= z["box"] + 1  # fitted: never wider than the page
    assert abs(z["zoomed"] - level) < 0.01 and z["said"] == f"Now at {level * 100} %."
    assert z["zoomed_text"] >= 0.95 * level * z["fit_text"] / z["fit"]  # its labels as much larger
    assert z["room"][0] > 200 and z["room"][1] > 150  # larger than its box: ...
    assert z["dragged"] == [pytest.approx(200, abs=2), pytest.approx(150, abs=2)]  # ... moved by dragging
    assert z["printed"][0] <= z["printed"][1]  # on paper, fitted again


@pytest.mark.slow
def test_skywalk_floor_of_2048_switches_is_legible(skywalk, tmp_path):
    lay = skywalk
    assert lay.fabric.count(kind=2) == 2048 and lay.num_cabinets == 256
    svg = drawing.floor_plan(lay)
    assert under_cabinets(svg) == []
    root = ET.fromstring(svg)
    trays = [p for p in root.iter(f"{SVG}path") if p.get("class") == "tray"]
    # the bundles carry every cable between cabinets: each cabinet's drop counts its own
    drops = {p.get("data-cabinet"): p for p in root.iter(f"{SVG}path") if p.get("class") == "drop"}
    assert len(drops) == 256 and trays
    labels = {t.text for t in root.iter(f"{SVG}text")}
    assert all(f"{int(p.get('data-count')):,}" in labels for p in trays)  # the count on each bundle
    with chromium_page() as (page, errors):
        boxes = render_check(page, svg, tmp_path, "floor")
    assert len(boxes) > 800
    assert overlaps(boxes) == []
    assert errors == []


@pytest.mark.slow
def test_skywalk_floor_on_the_cabling_index_zooms_and_pans(skywalk_plan, tmp_path):
    """The 2,048-switch floor on the index is fitted to the page (about 77 % of its size, its labels
    too small to read): the page says so and how to zoom; at 200 % it is twice its size, and a drag
    moves around it."""
    ibtool("cabling", skywalk_plan, "--out", tmp_path / "pkg", check=0)
    index = tmp_path / "pkg" / "index.html"
    with chromium_page() as (page, errors):
        z = zoom_and_pan(page, index, "Topology", 2)
    assert z["fit"] < 0.9 and f"Now at {round(z['fit'] * 100)} %." in z["bar"]
    check_zoom(z, index, 2)
    assert errors == []


@pytest.mark.slow
def test_kns_12_cubed_floor_and_grid_are_legible(kns12, tmp_path):
    lay = kns12
    floor = drawing.floor_plan(lay)
    assert under_cabinets(floor) == []
    grid, note = drawing.topology(lay)
    assert "Fig. 7" in note and "planes side by side" in note
    root = ET.fromstring(grid)
    drawn = {g.get("data-device") for g in root.iter(f"{SVG}g") if g.get("data-device")}
    f = lay.fabric
    assert {f.names[i] for i in range(f.num_nodes) if f.roles[i] == "router"} <= drawn
    with chromium_page() as (page, errors):
        fb = render_check(page, floor, tmp_path, "floor")
        gb = render_check(page, grid, tmp_path, "grid")
    assert overlaps(fb) == [] and overlaps(gb) == []
    # every router of the 12 planes is labelled, and every indirect switch
    texts = {b[4] for b in gb}
    assert {f.names[i] for i in range(f.num_nodes) if f.types[i] == 2} <= texts
    assert errors == []


def test_label_placement_refuses_overlap():
    from ibtool.drawing.svg import Labels
    lab = Labels()
    assert lab.place("R[0,0]", [(10, 10, "start")]) == (10, 10)
    assert lab.place("S[1,2]", [(12, 11, "start")]) is None  # on top of the first: left out
    assert lab.place("S[1,2]", [(12, 11, "start"), (12, 30, "start")]) == (12, 30)


def test_no_label_outside_the_drawing(tmp_path):
    """Labels of marks at the edges of a drawing (the hosts left of KNS's first column) are placed
    inside its viewBox, so none is cut off, on screen or on paper: every text box measured by
    Chromium lies inside the drawing's box."""
    from ibtool.drawing import Mark
    from ibtool.topologies.kns import kns
    f = kns(6, 2, radix=8)
    sc = drawing.scene_for(f)
    edge = [f"H[{i},0]" for i in range(6)] + [f"H[0,{j}]" for j in range(6)]
    sc.marks = [Mark("misplaced", h, f"{h} is on the wrong port", device=h) for h in edge]
    sc.marks += [Mark("miswired", f"C00{i}", "", ends=((f"R[{i},0]", 2), (f"S[0,{i}]", 1))) for i in range(6)]
    svg = drawing.render(sc)
    inside = """() => { const s = document.querySelector('svg').getBoundingClientRect();
      return Array.from(document.querySelectorAll('svg text')).filter(t => { const r = t.getBoundingClientRect();
        return r.left < s.left - 0.5 || r.top < s.top - 0.5 || r.right > s.right + 0.5 || r.bottom > s.bottom + 0.5; })
        .map(t => t.textContent); }"""
    with chromium_page() as (page, errors):
        boxes = render_check(page, svg, tmp_path, "edge")
        assert set(edge) <= {b[4] for b in boxes}  # every host named ...
        assert page.evaluate(inside) == []  # ... and whole
        page.emulate_media(media="print")
        page.set_viewport_size({"width": 1047, "height": 716})  # A4 landscape less 10 mm margins, at 96 dpi
        assert page.evaluate(inside) == []
    assert errors == []


def test_cabling_svgs_render_alone_as_in_their_page(tmp_path):
    """Each SVG of cabling/svg/ looks the same opened alone as inside its HTML page (screenshots
    compared pixel by pixel), because its styles are inside it."""
    from PIL import Image
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", tmp_path / "plan", check=0)
    ibtool("cabling", tmp_path / "plan", "--preset", "cellia", "--out", tmp_path / "pkg", check=0)
    pkg = tmp_path / "pkg"
    files = sorted((pkg / "svg").glob("*.svg"))
    assert {p.name for p in files} >= {"topology.svg", "floor.svg", "rack-C0.svg"}
    with chromium_page() as (page, errors):
        page.set_viewport_size({"width": 1800, "height": 1200})
        for svg in files:
            root = ET.parse(svg).getroot()
            assert root.find(f"{SVG}style") is not None and "svg.ibd" in root.find(f"{SVG}style").text
            label = root.get("aria-label")
            page.goto(svg.as_uri())
            alone = Image.open(io.BytesIO(page.locator("svg").first.screenshot())).convert("RGB")
            # its own print layout: one landscape A4 page, the drawing scaled to it
            pdf = page.pdf(prefer_css_page_size=True)
            assert re.findall(rb"/MediaBox \[0 0 (\d+)[.\d]* (\d+)", pdf) == [(b"841", b"594")], svg.name
            host = pkg / ("racks/" + svg.stem[5:] + ".html" if svg.stem.startswith("rack-") else "index.html")
            page.goto(host.as_uri())
            inline = page.locator(f'svg[aria-label="{label}"]').first
            assert inline.count() == 1, (svg.name, label)
            inside = Image.open(io.BytesIO(inline.screenshot())).convert("RGB")
            # the same size, but for a row or column of pixels the page's layout rounds off: compared at
            # the best of the one-pixel shifts
            assert all(abs(a - b) <= 1 for a, b in zip(alone.size, inside.size)), (svg.name, alone.size, inside.size)
            changed = min(_changed(alone, inside, dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1))
            assert changed <= 0.001 * alone.size[0] * alone.size[1], (svg.name, changed)
            # and not blank: the drawing has its colours alone (boxes filled, lines drawn)
            assert len(alone.getcolors(1 << 16) or []) > 5, svg.name
        z = zoom_and_pan(page, pkg / "index.html", "Topology", 4)
    assert errors == []
    check_zoom(z, pkg / "index.html", 4)


def test_fat_tree_k8_n3_switch_labels_do_not_overlap(tmp_path):
    from ibtool.layout import place
    from ibtool.topologies import load_all
    f = load_all()["fattree"].build(k=8, n=3)
    svg, note = drawing.topology(place(f))
    assert note.startswith("switches by level")
    with chromium_page() as (page, errors):
        boxes = render_check(page, svg, tmp_path, "fattree")
    assert overlaps(boxes) == []
    assert {f.names[i] for i in range(f.num_nodes) if f.types[i] == 2} <= {b[4] for b in boxes}  # every switch named
    assert errors == []


# a drawing of its own, as a new drawing module registers it: every switch in one row
RING_DRAWING = '''
from ibtool.drawing.scene import Node, Scene, shape
from ibtool.fabric import SWITCH


@shape("one-row", rank=15, summary="every switch in one row (a test's drawing)")
def draw(f, layout=None, links=None):
    if not f.name.startswith("ring"):
        return None
    sc = Scene(f, 40 * f.num_nodes, 60, f.name, note="one row")
    for i in range(f.num_nodes):
        if f.types[i] == SWITCH:
            sc.nodes.append(Node(f"n{i}", 20 + 40 * i, 30, 30, 20, "switch", label=f.names[i], devices=(i,)))
    return sc
'''

BOOT = """import sys, json, ibtool.drawing as d; d.__path__.append(sys.argv[1])
from ibtool.drawing.scene import SHAPES
from ibtool.fabric import SWITCH, Fabric
from ibtool.topologies.kns import kns
ring = Fabric("ring-3")
for i in range(3):
    ring.add_node(SWITCH, f"S{i}", 8, "switch")
for i in range(3):
    ring.add_link(i, (i + 1) % 3)
print(json.dumps({"shapes": SHAPES.names(), "ring": d.scene_for(ring).note, "kns": d.scene_for(kns(3, 2, radix=8)).note,
                  "svg": d.render(d.scene_for(ring)).count("<rect")}))"""


def test_a_drawing_is_one_module_on_the_package_path(tmp_path):
    """Drawings register as every other room's kinds do (issue 37): a throwaway drawing module,
    written to a temporary directory on the path of `ibtool.drawing` (the source tree untouched),
    is tried by `scene_for` in its rank's place — before the tree levels, after the KNS grid."""
    import json
    import subprocess
    import sys
    from support import ROOT
    from ibtool.drawing.scene import SHAPES
    assert "one-row" not in SHAPES and set(SHAPES.names()) == {"kns", "tree", "floor", "levels"}
    (tmp_path / "one_row.py").write_text(RING_DRAWING)
    r = subprocess.run([sys.executable, "-c", BOOT, str(tmp_path)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["shapes"] == ["floor", "kns", "levels", "one-row", "tree"]
    assert got["ring"] == "one row" and got["svg"] >= 3  # its three switches drawn by render
    assert got["kns"].startswith("routers on their grid")  # a KNS still gets its grid (rank 10 < 15)


def test_the_same_plan_draws_the_same_in_every_process(tmp_path):
    """A tree whose switches of one level are cabled to each other (MIKANT) is drawn the same by
    two processes: which end of such a cable is drawn where followed the nodes' memory addresses."""
    import subprocess
    import sys
    from support import ROOT, SMALL
    ibtool("topo", "mikant", *SMALL["mikant"], "--out", tmp_path / "p", check=0)
    code = ("import sys; from ibtool import drawing; from ibtool.plan import read_layout, read_plan; "
            "f, p, _ = read_plan(sys.argv[1]); print(drawing.topology(read_layout(f, p))[0])")
    svgs = {subprocess.run([sys.executable, "-c", "x = [0] * %d; " % n + code, str(tmp_path / "p")], cwd=ROOT,
                           capture_output=True, text=True, check=True, timeout=120).stdout for n in (1, 50000, 3)}
    assert len(svgs) == 1 and "S[0,0,0] P3 - S[1,0,0] P3" in svgs.pop()


def test_a_cables_port_labels_sit_at_their_own_ends_whichever_way_it_is_named():
    """A miswired cable's "P<port>" labels are placed at the end each port is on, whether the
    finding names the cable from its lower or its upper switch (the tree drawing's wires run in
    its own order, not the finding's): each label is nearer its own switch than the other."""
    from ibtool.drawing import Mark
    from ibtool.topologies import load_all
    f = load_all()["fattree"].build(k=4, n=2)
    li = next(li for li in range(f.num_links) if f.types[f.link_a[li]] == f.types[f.link_b[li]] == 2
              and f.link_pa[li] != f.link_pb[li])
    a = (f.names[f.link_a[li]], f.link_pa[li])
    b = (f.names[f.link_b[li]], f.link_pb[li])
    for ends in ((a, b), (b, a)):
        sc = drawing.scene_for(f)
        sc.marks = [Mark("miswired", "C0001", "", ends=ends)]
        root = ET.fromstring(drawing.render(sc))
        at = {t.text: (float(t.get("x")), float(t.get("y"))) for t in root.iter("{http://www.w3.org/2000/svg}text")
              if (t.text or "").startswith("P") and "miswired" in (t.get("class") or "")}
        for dev, port in ends:
            other = b[0] if dev == a[0] else a[0]
            near, far = (sc.node_of[sc.device(d)] for d in (dev, other))
            x, y = at[f"P{port}"]
            assert (x - near.x) ** 2 + (y - near.y) ** 2 < (x - far.x) ** 2 + (y - far.y) ** 2, (ends, dev, port)
