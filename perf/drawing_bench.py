"""Drawing benchmark (BENCHMARKS.md, "Drawings at scale", issue 26): the 2,048-switch Skywalk(8,256,7,4)
floor and KNS 12^3 (floor and paper 000's grid of 12 planes): the SVG written by ibtool.drawing
(seconds in Python, size) and the page opened in headless Chromium (Debian's, through playwright):
from navigation to the second animation frame after the load event (laid out and painted), median
of 3. No stock tool draws fabrics; the reference in
the same run is Chromium opening an empty SVG page the same way (its own floor).

    .venv/bin/python perf/drawing_bench.py [OUT] [--quick]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _plans(out: Path, quick: bool):
    import subprocess
    todo = [("skywalk", ["skywalk", "--z", "8", "--c", "256", "--di", "7", "--do", "4"]),
            ("kns-12-3", ["kns", "--k", "12", "--n", "3"])]
    if quick:
        todo = [("kns-6-2", ["kns", "--k", "6", "--n", "2", "--radix", "8"])]
    for name, args in todo:
        d = out / name
        if not (d / "topology.net").exists():
            subprocess.run([sys.executable, "-m", "ibtool.cli.main", "topo", *args, "--out", str(d)], check=True,
                           capture_output=True)
        yield name, d


def main(out: Path, quick: bool = False) -> list[dict]:
    from playwright.sync_api import sync_playwright

    from ibtool import drawing
    from ibtool.plan import read_layout, read_plan
    out.mkdir(parents=True, exist_ok=True)
    files = []
    rows = []
    for name, d in _plans(out, quick):
        f, pd, _ = read_plan(d)
        lay = read_layout(f, pd)
        for what, make in (("floor", lambda: drawing.floor_plan(lay)), ("topology", lambda: drawing.topology(lay)[0])):
            t = time.perf_counter()
            svg = make()
            py = time.perf_counter() - t
            p = out / f"{name}-{what}.svg"
            p.write_text(drawing.standalone(svg))
            files.append((f"{name} {what}", p, py, svg.count("<text"), f.count(kind=2)))
    empty = out / "empty.svg"
    empty.write_text(drawing.standalone(drawing.svg.document(100, 100, "empty", [])))
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--headless", "--disable-gpu"])
        page = b.new_page(viewport={"width": 1600, "height": 1000})

        def load(p: Path) -> float:
            times = []
            for _ in range(3):
                page.goto("about:blank")
                t = time.perf_counter()
                page.goto(p.as_uri(), wait_until="load")
                # laid out and painted: two animation frames after the load event
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                times.append(time.perf_counter() - t)
            return statistics.median(times)

        ref = load(empty)
        for what, p, py, labels, switches in files:
            if what.endswith("topology") and p.read_text() == (out / p.name.replace("topology", "floor")).read_text():
                continue  # the family's drawing is its floor
            c = load(p)
            rows.append({"what": what, "switches": switches, "labels": labels, "svg_mib": round(p.stat().st_size / 2**20, 2),
                         "python_s": round(py, 2), "chromium_s": round(c, 2), "empty_page_s": round(ref, 3),
                         "under_3s": c < 3.0, "load": os.getloadavg()[0]})
        b.close()
    (out / "drawing.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    for r in main(Path(args[0]) if args else ROOT / "perf" / "out" / "drawing", "--quick" in sys.argv):
        print(json.dumps(r))
