"""The sheets on paper (issue 23, item 7): CELLIA's rack sheets (the switch rack and a node rack),
a switch sheet and the fixes of a real verification (`verify topology --html`, its findings table),
opened in headless Chromium and printed to A4 (and Letter) PDF: the table header on every page (of
the report: on every page with findings), no identifier broken over two lines, no column past the
page, the switch rack on at most 3 pages."""

import io
import sys
from pathlib import Path

import pypdf
import pytest

from support import chromium_page, ibtool
from ibtool.formats import ibnetdiscover

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verify"))
from verify_fabrics import Cabling, write_net  # noqa: E402

pytestmark = pytest.mark.ibsim

# the header of each table the sheets print: one of them heads every printed page of a sheet, and
# every page of the verify report that holds findings
HEADERS = {"cables": "other end", "hosts": "HCA port", "ports": "label at this port", "findings": "what to do"}
PAGE = {"A4": 210 - 2 * 12, "Letter": 215.9 - 2 * 12}  # printable width in mm (@page margin 12 mm)


@pytest.fixture(scope="module")
def sheets(tmp_path_factory):
    d = tmp_path_factory.mktemp("cellia")
    plan = d / "plan"
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", plan, check=0)
    ibtool("cabling", plan, "--preset", "cellia", "--out", plan / "cabling", check=0)
    m = Cabling(ibnetdiscover.read(plan / "topology.net"))
    m.move("R[1,0]", 2, to_port=7)
    m.swap("S[1,1]", 1, "S[1,1]", 2)
    m.swap("R[2,0]", 1, "R[2,1]", 1)
    write_net(m.build(disguise=False), d / "cabled.net")
    ibtool("sim", "run", d / "cabled.net", "--engine", "minhop", "--out", d / "run", check=0)
    r = ibtool("verify", "topology", "--plan", plan, "--discovered", d / "run" / "ibnetdiscover.out",
               "--html", d / "fixes.html")
    assert r.returncode == 1, r.stderr
    pkg = plan / "cabling"
    return {"C0": pkg / "racks" / "C0.html", "C1": pkg / "racks" / "C1.html", "C2": pkg / "racks" / "C2.html",
            "S[0,1]": pkg / "switches" / "S_0_1.html", "fixes": d / "fixes.html"}


def pages(pdf: bytes) -> list[str]:
    return [p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pdf)).pages]


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_printed_sheets(sheets, paper):
    printed = {}
    with chromium_page() as (page, errors):
        for name, path in sheets.items():
            page.emulate_media(media="print")
            width_px = round(PAGE[paper] / 25.4 * 96)
            page.set_viewport_size({"width": width_px, "height": 1100})
            page.goto(path.as_uri())
            heads = page.evaluate("() => [...document.querySelectorAll('table')].filter(t => t.tHead)"
                                  ".map(t => t.id).filter(i => i != 'kit')")
            rows = page.evaluate("() => [...document.querySelectorAll('#findings tbody tr td.text')]"
                                 ".map(t => t.textContent.slice(0, 24))")
            assert heads, name
            broken = page.evaluate("() => [...document.querySelectorAll('.id')]"
                                   ".filter(e => e.getClientRects().length > 1).map(e => e.textContent)")
            assert broken == [], f"{name}: identifiers broken over two lines on {paper}: {broken[:5]}"
            over = page.evaluate("() => document.documentElement.scrollWidth")
            assert over <= width_px, f"{name}: {over} px wide on a {width_px} px {paper} page"
            printed[name] = (pages(page.pdf(format=paper, print_background=True)), heads, rows)
    assert errors == []
    for name, (texts, heads, rows) in printed.items():
        for k, text in enumerate(texts, 1):
            flat = " ".join(text.split())
            if name == "fixes" and not any(" ".join(r.split()) in flat for r in rows):
                continue  # a page of the report without findings (its drawing, its details)
            assert any(HEADERS[h] in text for h in heads), f"{name}, {paper} page {k}: no table header"
    c0 = printed["C0"][0]
    assert 2 <= len(c0) <= 3, f"the switch rack C0 prints on {len(c0)} {paper} pages"
    assert len(printed["C1"][0]) <= 3 and len(printed["fixes"][2]) == 3
    # what a technician looks for is on the page: the places, with front and back
    assert "C0 U42 front" in c0[0] and "C0 U42 back" in "".join(c0)
    fixes = " ".join(" ".join(printed["fixes"][0]).split())
    assert "as its labels say" in fixes and "hosts H[2," in fixes


def test_the_index_prints_no_empty_heading(sheets):
    """On paper the index's every heading has something under it: the files for the crew's tools
    (links, not printed) take their heading with them."""
    index = sheets["C0"].parents[1] / "index.html"
    with chromium_page() as (page, errors):
        page.emulate_media(media="print")
        page.goto(index.as_uri())
        empty = page.evaluate("""() => [...document.querySelectorAll('h2')].filter(h => h.getClientRects().length)
            .filter(h => { let n = h.nextElementSibling;
              while (n && !n.getClientRects().length) n = n.nextElementSibling;
              return !n || n.tagName == 'H2' || (n.firstElementChild && n.firstElementChild.tagName == 'H2'); })
            .map(h => h.textContent)""")
        printed = " ".join(pages(page.pdf(format="A4")))
    assert errors == []
    assert empty == [] and "Files for the tools around the crew" not in printed
    assert "Wiring order" in printed and "Bill of materials" in printed  # the headings that have content do print
