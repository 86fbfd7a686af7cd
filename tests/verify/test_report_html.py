"""The verification report drawn (`verify all|topology --html`) and as JUnit XML (`--junit`), on
real ibsim runs of CELLIA's KNS: a swapped switch pair, a swapped host pair and a removed cable
drawn on their cables, the fix texts whole on A4 paper; minhop's credit loop drawn channel by
channel; JUnit files read back by junitparser with the right counts."""

import csv
import json
import math
import re

import pytest

from support import chromium_page, ibtool
from verify_fabrics import Cabling, write_net
from ibtool.formats import ibnetdiscover

pytestmark = pytest.mark.ibsim

SWAPS = [("R[1,0]", 2, "R[1,1]", 2),  # the ends of two router cables swapped on switch S[0,1]
         ("R[3,3]", 1, "R[3,4]", 1)]  # hosts H[3,3] and H[3,4] each on the other's router
REMOVED = ("R[4,2]", 3)  # the cable R[4,2] - S[1,2]


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    d = tmp_path_factory.mktemp("cellia")
    plan = d / "plan"
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", plan, check=0)
    ibtool("cabling", plan, "--preset", "cellia", check=0)
    with open(plan / "cabling" / "cables.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    m = Cabling(ibnetdiscover.read(plan / "topology.net"))
    for a, pa, b, pb in SWAPS:
        m.swap(a, pa, b, pb)
    m.remove(*REMOVED)
    write_net(m.build(disguise=False), d / "miswired.net")
    ibtool("sim", "run", d / "miswired.net", "--engine", "minhop", "--out", d / "bad", check=0)
    ibtool("sim", "run", plan / "topology.net", "--engine", "hdor", "--out", d / "good", check=0)
    return d, plan, rows


def cable_at(rows, dev, port):
    return next(r for r in rows if (r["a_device"], r["a_port"]) == (dev, str(port))
                or (r["b_device"], r["b_port"]) == (dev, str(port)))


def wire_d(page, r) -> str:
    """The path of the planned cable of row r on the drawing (its tooltip names both ends)."""
    names = [f"{r['a_device']} P{r['a_port']} - {r['b_device']} P{r['b_port']}",
             f"{r['b_device']} P{r['b_port']} - {r['a_device']} P{r['a_port']}"]
    ds = page.evaluate("""names => Array.from(document.querySelectorAll('svg.ibd path:not(.m)')).filter(
        p => { const t = p.querySelector('title'); return t && names.some(n => t.textContent.startsWith(n)); }
        ).map(p => p.getAttribute('d'))""", names)
    assert len(ds) == 1, (names, ds)
    return ds[0]


def marks(page, kind):
    return page.evaluate("""k => Array.from(document.querySelectorAll('svg.ibd path.m.' + k)).map(
        p => [p.dataset.label || '', p.getAttribute('d'), p.dataset.ref || ''])""", kind)


def drawing_fills_page_1(pdf: bytes, bottom_label: str) -> bool:
    """Page 1 of the printed report holds the drawing (down to its bottom row's label) and is
    filled to at least 70 % of its height (the drawing no longer leaves it for page 2)."""
    import io
    import pypdf
    page = pypdf.PdfReader(io.BytesIO(pdf)).pages[0]
    ys: list[float] = []
    text = page.extract_text(visitor_text=lambda t, cm, tm, *_: ys.append(cm[1] * tm[4] + cm[3] * tm[5] + cm[5])
                             if t.strip() else None)  # the text's y on the page
    height = float(page.mediabox.height)
    return bottom_label in text and (height - min(ys)) / height >= 0.7


def lab(css: str) -> tuple[float, float, float]:
    """CIE L*a*b* of a computed colour 'rgb(r, g, b)'."""
    rgb = [int(v) / 255 for v in re.findall(r"\d+", css)[:3]]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


# every finding a cable mark draws, and the indirect networks' buses of the four dimensions
MARK_KINDS = ("miswired", "found", "missing", "extra", "degraded", "health", "cycle", "down", "detour")
STROKES = """kinds => { const svg = document.querySelector('svg.ibd'); const out = {};
  for (const c of kinds) { const p = document.createElementNS('http://www.w3.org/2000/svg', 'path');
    p.setAttribute('class', c); svg.appendChild(p); const st = getComputedStyle(p);
    out[c] = [st.stroke, parseFloat(st.strokeWidth), st.strokeDasharray]; p.remove(); }
  return out; }"""


def test_miswired_cellia_report_draws_the_findings_on_their_cables(cellia, tmp_path):
    d, plan, rows = cellia
    html = tmp_path / "report.html"
    r = ibtool("verify", "topology", "--plan", plan, "--discovered", d / "bad" / "ibnetdiscover.out", "--html", html,
               "--json")
    assert r.returncode == 1, r.stderr
    t = json.loads(r.stdout)
    swapped = [cable_at(rows, a, pa) for a, pa, _, _ in SWAPS] + [cable_at(rows, b, pb) for _, _, b, pb in SWAPS]
    removed = cable_at(rows, *REMOVED)
    fix_texts = [x["text"] for x in t["fixes"] + t["missing_cables"]]
    assert len(t["fixes"]) == 2 and len(t["missing_cables"]) == 1
    with chromium_page() as (page, errors):
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(html.as_uri())
        assert page.title() == "ibtool verify: FAIL"
        meta = page.inner_text(".meta")
        assert str(plan) in meta and "made 20" in meta and "by ibtool" in meta
        # each miswired cable drawn (in red) on its planned cable, with its cable ID beside it
        mis = {label: dd for label, dd, _ in marks(page, "miswired")}
        for c in swapped:
            assert mis.get(c["cable_id"]) == wire_d(page, c), c["cable_id"]
        # the removed cable drawn (dashed orange) where it belongs
        miss = marks(page, "missing")
        assert [(label, dd) for label, dd, _ in miss] == [(removed["cable_id"], wire_d(page, removed))]
        shown = set(page.evaluate("() => Array.from(document.querySelectorAll('svg.ibd text.mark'))"
                                  ".map(t => t.textContent)"))
        assert {c["cable_id"] for c in swapped} | {removed["cable_id"]} <= shown
        # the hosts on the wrong routers are outlined and named; as found, dashed to where they are
        assert set(page.evaluate("() => Array.from(document.querySelectorAll('svg.ibd .mdev.misplaced'))"
                                 ".map(e => e.dataset.label)")) == {"H[3,3]", "H[3,4]"}
        assert len(marks(page, "found")) >= 4
        # a mark leads to its finding in the list, whose row names the same cables
        for label, _, ref in marks(page, "miswired") + miss:
            assert label in page.inner_text(f"#{ref}")
        # where a cable belongs: a hollow line (a white core on it), a line no bus is, and no finding
        # in a colour near a dimension's (CIE76 distance 40 or more)
        assert page.locator("svg.ibd path.m.core").count() == len(mis) == 4
        st = page.evaluate(STROKES, [f"bus d{k}" for k in range(4)] + [f"m {k}" for k in MARK_KINDS] + ["m core"])
        assert lab(st["m core"][0]) == lab("rgb(255, 255, 255)") and st["m core"][1] < st["m miswired"][1] / 2
        for k in MARK_KINDS:
            for d in range(4):
                assert math.dist(lab(st[f"m {k}"][0]), lab(st[f"bus d{d}"][0])) >= 40, (k, d, st)
        assert "double" in page.locator(".legend i").first.get_attribute("style")
        # the ports' labels (P1, P2, ...) never sit on a bus line
        ports = page.evaluate("""() => { const buses = [...document.querySelectorAll('svg.ibd path.bus')].map(p => p.getBBox());
            return [...document.querySelectorAll('svg.ibd text.mark')].filter(t => /^P\\d+$/.test(t.textContent))
              .map(t => { const b = t.getBBox(); return [t.textContent, buses.some(u => b.x < u.x + u.width + 1.5
                && u.x - 1.5 < b.x + b.width && b.y < u.y + u.height + 1.5 && u.y - 1.5 < b.y + b.height)]; }); }""")
        assert len(ports) >= 6 and [p for p, on_bus in ports if on_bus] == []
        # the fix texts read as text, not as a narrow column, on common screen widths
        for width in (1024, 1280, 1400):
            page.set_viewport_size({"width": width, "height": 1000})
            chars = page.evaluate("""() => { const c = document.createElement('canvas').getContext('2d');
                return [...document.querySelectorAll('#findings td.text')].map(td => { const st = getComputedStyle(td);
                  c.font = st.fontSize + ' ' + st.fontFamily;
                  return (td.clientWidth - 2 * parseFloat(st.paddingLeft)) / (c.measureText('abcdefghijklmnopqrstuvwxyz').width / 26); }); }""")
            assert len(chars) == 3 and min(chars) >= 38, (width, chars)
        # printed on A4: every fix text whole, wrapped inside the page
        page.emulate_media(media="print")
        page.set_viewport_size({"width": 703, "height": 1000})  # A4's 210 mm less 2 x 12 mm margins, at 96 dpi
        cells = page.evaluate("""() => Array.from(document.querySelectorAll('#findings td.text')).map(
            e => [e.innerText, e.scrollWidth <= e.clientWidth + 1, e.getBoundingClientRect().right])""")
        for text in fix_texts:
            cell = [c for c in cells if c[0].strip() == text]
            assert cell, text
            assert cell[0][1] and cell[0][2] <= 703, cell
        assert page.evaluate("document.documentElement.scrollWidth") <= 703
        printed = {paper: page.pdf(format=paper) for paper in ("A4", "Letter")}
    assert errors == []
    for paper, pdf in printed.items():
        assert pdf[:5] == b"%PDF-" and drawing_fills_page_1(pdf, "R[5,5]"), paper


def points(d: str) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in re.findall(r"-?[\d.]+,-?[\d.]+", d)]


def seg_dist(p, a, b) -> float:
    """Distance from point p to the segment a-b."""
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / ((dx * dx + dy * dy) or 1)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def test_minhop_credit_loop_drawn_channel_by_channel(tmp_path):
    """Each channel of the credit loop is an arrow in its own direction (4 of minhop's 8 channels
    run switch -> router), read from the order of its path's points, beside its cable: it covers
    neither end of the cable (the ports) nor a router."""
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", plan, check=0)
    ibtool("sim", "run", plan / "topology.net", "--engine", "minhop", "--out", tmp_path / "run", check=0)
    html = tmp_path / "r.html"
    r = ibtool("verify", "all", tmp_path / "run", "--html", html, "--json")
    assert r.returncode == 1
    cycle = json.loads(r.stdout)["routes"]["deadlock"]["cycle"]
    assert cycle
    with chromium_page() as (page, errors):
        page.goto(html.as_uri())
        drawn = marks(page, "cycle")
        assert [label for label, _, _ in drawn] == [str(i + 1) for i in range(len(cycle))]
        tips = page.evaluate("() => Array.from(document.querySelectorAll('svg.ibd path.m.cycle')).map("
                             "p => [p.querySelector('title').textContent, p.getAttribute('marker-end')])")
        for (tip, arrow), ch in zip(tips, cycle):
            assert tip.endswith(ch) and arrow == "url(#arrow)"
        routers = {d: (float(x), float(y), float(rr)) for d, x, y, rr in page.evaluate(
            """() => Array.from(document.querySelectorAll('svg.ibd g[data-device] > circle.router')).map(
                c => [c.parentNode.dataset.device, c.getAttribute('cx'), c.getAttribute('cy'), c.getAttribute('r')])""")}
        towards = set()
        for (label, dd, _), ch in zip(drawn, cycle):
            a, b = ch.split(" (VL")[0].split(" -> ")
            (da, pa), (db, pb) = (x.rsplit("[", 1) for x in (a, b))
            wire = points(wire_d(page, {"a_device": da, "a_port": pa[:-1], "b_device": db, "b_port": pb[:-1]}))
            arrow = points(dd)
            start, tip = arrow[0], arrow[-1]
            router = da if da in routers else db
            rx, ry, rr = routers[router]
            # the arrow's direction: away from the router when the router sends, towards it when it receives
            away = math.hypot(tip[0] - rx, tip[1] - ry) > math.hypot(start[0] - rx, start[1] - ry)
            assert away == (router == da), (ch, dd)
            towards.add(router == db)
            # beside its cable, clear of the cable's ends (the ports) and of every router
            assert all(seg_dist(e, start, tip) >= 3 for e in (wire[0], wire[-1])), (ch, dd, wire)
            for p in arrow:
                assert 3 <= min(seg_dist(p, u, v) for u, v in zip(wire, wire[1:])) <= 7, (ch, dd, wire)
                assert all(math.hypot(p[0] - x, p[1] - y) >= r0 for x, y, r0 in routers.values()), (ch, dd)
        assert towards == {True, False}  # both directions are in this loop
        assert "credit loop" in page.inner_text("#findings")
        # the heat map: the inter-switch cables coloured by the routes they carry, with a legend
        assert page.locator("svg.ibd path[data-h0]").count() > 0
        assert "routes per link" in page.locator("svg.ibd g.legend").first.text_content()
        printed = {paper: page.pdf(format=paper) for paper in ("A4", "Letter")}
    assert errors == []
    for paper, pdf in printed.items():
        assert drawing_fills_page_1(pdf, "R[2,2]"), paper


def test_junit_of_a_failing_and_a_passing_cellia_run(cellia, tmp_path):
    from junitparser import Failure, JUnitXml
    d, plan, rows = cellia
    bad, good = tmp_path / "bad.xml", tmp_path / "good.xml"
    r = ibtool("verify", "all", d / "bad", "--plan", plan / "topology.net", "--junit", bad, "--json")
    assert r.returncode == 1
    rep = json.loads(r.stdout)
    xml = JUnitXml.fromfile(str(bad))
    suites = list(xml)
    assert len(suites) == 1
    cases = list(suites[0])
    assert [c.name for c in cases] == [c["name"] for c in rep["checks"]]
    failed = {c.name: c.result[0] for c in cases if c.result and isinstance(c.result[0], Failure)}
    assert set(failed) == {c["name"] for c in rep["checks"] if not c["ok"] and not c.get("info")}
    assert "topology" in failed and xml.failures == suites[0].failures == len(failed)
    for name, fl in failed.items():
        assert fl.message == next(c["summary"] for c in rep["checks"] if c["name"] == name)
    body = failed["topology"].text
    for x in rep["topology"]["fixes"] + rep["topology"]["missing_cables"]:
        assert x["text"] in body  # each finding with its fix
    r = ibtool("verify", "all", d / "good", "--junit", good)
    assert r.returncode == 0, r.stdout
    ok = JUnitXml.fromfile(str(good))
    assert ok.tests == sum(len(list(s)) for s in ok) >= 8 and ok.failures == 0 and ok.errors == 0


def test_fault_scenario_drawn_step_by_step(tmp_path):
    from junitparser import JUnitXml
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", plan, check=0)
    ibtool("sim", "run", plan / "topology.net", "--engine", "hdor", "--fail", "R[1,1] 3", "--out", tmp_path / "run",
           check=0)
    html, xml = tmp_path / "steps.html", tmp_path / "steps.xml"
    r = ibtool("verify", "all", tmp_path / "run", "--html", html, "--junit", xml)
    assert r.returncode == 0, r.stdout
    suites = list(JUnitXml.fromfile(str(xml)))
    assert [s.name.rsplit("/", 1)[1] for s in suites] == ["step-0", "step-1"] and all(s.failures == 0 for s in suites)
    with chromium_page() as (page, errors):
        page.goto(html.as_uri())
        assert page.locator("section.step").count() == 2
        s0, s1 = page.locator("section.step").nth(0), page.locator("section.step").nth(1)
        assert "down R[1,1] 3" in s1.locator("h2").first.inner_text()
        assert s0.locator("svg.ibd path.m").count() == 0  # before any fault: nothing marked
        down = s1.locator("svg.ibd path.m.down")
        assert down.count() == 1 and down.locator("title").text_content().startswith("cable R[1,1] P3 - S[1,1] P")
        assert s1.locator("svg.ibd path.m.detour").count() > 0  # the links the detours moved routes onto
    assert errors == []
