"""The what-if page in real headless Chromium: the ranking drawn on the fabric (every cable and
switch of a failure in its class's colour, the top rows numbered), the table in the fix sheet's
words, a row opening its details and pointing at its element, an element pointing at its row; and
it prints on A4."""

import json

from support import chromium_page, ibtool

from ibtool.whatif.page import COLOURS
from ibtool.whatif.rank import CLASSES


def test_the_ranking_drawn_and_clickable(tmp_path):
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", 4, "--n", 2, "--radix", 8, "--out", plan, check=0)
    ibtool("cabling", plan, "--out", plan / "cabling", check=0)
    out = tmp_path / "wi"
    ibtool("whatif", "run", plan, "--out", out, "--top", 0, check=0)
    res = json.loads((out / "results.json").read_text())
    rows = res["rows"]
    with chromium_page() as (page, errors):
        page.set_viewport_size({"width": 1300, "height": 900})
        page.goto((out / "whatif.html").as_uri())
        # every failure's elements on the drawing, in its class's colour
        marks = page.eval_on_selector_all("svg.ibd [data-mark]:not(text)", "es => es.map(e => [e.getAttribute("
                                          "'data-ref'), e.getAttribute('data-mark'), getComputedStyle(e).stroke])")
        by_ref = {}
        for ref, kind, stroke in marks:
            by_ref.setdefault(ref, set()).add((kind, stroke))
        assert len(by_ref) == len(rows)  # every row has its element drawn
        for r in rows:
            i = CLASSES.index(r["class"])
            rgb = tuple(int(COLOURS[i][j:j + 2], 16) for j in (1, 3, 5))
            assert by_ref[f"r{r['rank']}"] == {(f"c{i}", f"rgb({rgb[0]}, {rgb[1]}, {rgb[2]})")}, r["id"]
        # the top rows numbered on the drawing
        labels = page.eval_on_selector_all("svg.ibd text[data-mark]", "es => es.map(e => e.textContent)")
        assert {f"#{r['rank']}" for r in rows[:10]} <= set(labels)
        # the table: the ranking in order, in the fix sheet's words
        cells = page.eval_on_selector_all("#ranking tbody tr", "rs => rs.map(r => [r.id, r.cells[1].innerText, "
                                          "r.cells[8].innerText])")
        assert [c[0] for c in cells] == [f"r{r['rank']}" for r in rows[:50]]
        assert all(c[1].split("\n")[0] == r["id"] and c[2] == r["advice"] for c, r in zip(cells, rows))
        assert any(c[2].startswith("keep a spare for ") for c in cells)
        assert any(c[2].startswith("inspect C0") for c in cells)
        # a row opens its details and points at its element; an element points at its row
        page.click("#r3")
        assert page.eval_on_selector("#d3", "d => d.open")
        assert page.eval_on_selector_all('svg.ibd .sel', "es => es.length") >= 1
        assert all(r == "r3" for r in page.eval_on_selector_all("svg.ibd .sel", "es => es.map(e => e.getAttribute("
                                                                "'data-ref'))"))
        ref = next(f"r{r['rank']}" for r in rows if r["kind"] == "cable")
        page.dispatch_event(f'svg.ibd path[data-ref="{ref}"]', "click")
        assert page.eval_on_selector(f"#{ref}", "r => r.classList.contains('sel')")
        assert not page.eval_on_selector("#r3", "r => r.classList.contains('sel')")
        assert errors == []
        page.screenshot(path=str(tmp_path / "screen.png"))
        # A4: the drawing and the table fit the paper's width
        page.emulate_media(media="print")
        page.set_viewport_size({"width": 718, "height": 1000})  # A4 less 12 mm margins, at 96 dpi
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 718, width
        pdf = page.pdf(format="A4")
        assert pdf.startswith(b"%PDF") and len(pdf) > 10000
