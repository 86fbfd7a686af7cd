"""`ibtool analyze PLAN... --plot`: paper 004's Fig. 5 (latency vs switch delay, one curve per plan)
from real `ibtool topo` plans: the file, the numbers behind it, the paper's ordering, the SVG in
real headless Chromium, and one-line errors that write nothing."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from itertools import pairwise

import pytest
from support import chromium_page, ibtool

# small instances of paper 004's families on a 4 x 4 cabinet floor, 64 switches each
PLANS = {
    "skywalk": ["--z", 4, "--c", 16, "--di", 3, "--do", 2],
    "torus": ["--z", 4, "--c", 16, "--n", 3],
    "hypercube": ["--N", 64, "--c", 16],
    "dragonfly": ["--z", 4, "--c", 16],
}
NAMES = {"skywalk": "skywalk-z4-c16-di3-do2", "torus": "torus-4x4x4", "hypercube": "hypercube-64",
         "dragonfly": "dragonfly-z4-c16"}


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    root = tmp_path_factory.mktemp("p004")
    for fam, args in PLANS.items():
        ibtool("topo", fam, *args, "--out", root / fam, check=0)
    return root


@pytest.fixture(scope="module")
def fig5(plans):
    svg = plans / "fig5.svg"
    r = ibtool("analyze", *(plans / f for f in PLANS), "--plot", svg, "--switch-delays", "0:500:20", "--json",
               check=0)
    return svg, json.loads(r.stdout), r.stderr


def test_plot_numbers_are_analyzes_model_and_monotone(plans, fig5):
    svg, data, stderr = fig5
    assert data["plot"] == str(svg) and data["routing"] == "FR" and data["metric"] == "max"
    assert data["switch_delays_ns"] == [20.0 * i for i in range(26)]
    # one curve per plan, in the order given, labelled by the plan's topology name
    assert [c["label"] for c in data["curves"]] == [NAMES[f] for f in PLANS]
    for fam, c in zip(PLANS, data["curves"]):
        x = [p["switch_ns"] for p in c["points"]]
        assert x == data["switch_delays_ns"]
        for key in ("max_ns", "average_ns"):
            y = [p[key] for p in c["points"]]
            assert all(b > a for a, b in pairwise(y)), (fam, key, y)  # every path crosses >= 1 switch
        # the 60 ns point is exactly what `ibtool analyze PLAN` reports for the plan
        one = json.loads(ibtool("analyze", plans / fam, "--json", "--bisection", "none", check=0).stdout)
        at60 = c["points"][3]
        assert at60["switch_ns"] == 60 and at60["max_ns"] == one["latency"]["FR"]["max_ns"]
        assert at60["average_ns"] == one["latency"]["FR"]["average_ns"]
        assert c["switch_cable_km"] > 0 and c["switches"] == 64
    # one progress line per plan on stderr
    assert [ln.split(":")[0].strip() for ln in stderr.splitlines()] == [NAMES[f] for f in PLANS]


def test_plot_orders_the_topologies_as_the_paper_says(fig5):
    """Paper 004, III-B: Skywalk's maximum latency is lower than Torus's and Hypercube's at every
    switch delay, and Dragonfly's is lower than Skywalk's (here on 64 switches in 16 cabinets)."""
    _, data, _ = fig5
    mx = {c["label"]: [p["max_ns"] for p in c["points"]] for c in data["curves"]}
    sky = mx[NAMES["skywalk"]]
    for other in ("torus", "hypercube"):
        assert all(s < o for s, o in zip(sky, mx[NAMES[other]])), other
    assert all(d < s for d, s in zip(mx[NAMES["dragonfly"]], sky))


def test_svg_is_valid_and_renders_in_chromium(fig5):
    svg, data, _ = fig5
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    with chromium_page() as (page, errors):
        page.goto(svg.as_uri())
        box = page.locator("svg").first.bounding_box()
        assert box["width"] > 300 and box["height"] > 200
        drawn = page.locator("text").evaluate_all("els => els.map(e => [e.textContent, e.getBBox().width])")
        assert all(w > 0 for _, w in drawn)  # laid out by the browser, not just present
        texts = " ".join(t for t, _ in drawn)
        for c in data["curves"]:  # the legend names every curve and its degree, as the paper's does
            assert f"{c['label']} (degree {c['degree']})" in texts
        assert "switch delay [ns]" in texts and "maximum latency [ns]" in texts
        # one drawn line per curve, each through all its points
        assert page.locator("g[id^='line2d'] path[clip-path]").count() >= len(data["curves"])
    assert errors == []
    # degrees as the families have them (torus 4x4x4: 6; hypercube 64: 6; dragonfly z4 c16: 3 + 4)
    assert [c["degree"] for c in data["curves"]][1:] == [6, 6, 7]
    # curves that coincide stay distinguishable: each curve its own marker and dash pattern
    styles = []
    for line in root.iter("{http://www.w3.org/2000/svg}g"):
        if line.get("id", "").startswith("line2d"):
            path = line.find("{http://www.w3.org/2000/svg}path")
            if path is not None and path.get("clip-path") and "#b0b0b0" not in path.get("style"):  # not a grid line
                styles.append(path.get("style"))
    assert len(set(styles[:len(data["curves"])])) == len(data["curves"])


def test_png_by_extension_with_the_mean(plans, tmp_path):
    png = tmp_path / "fig5.png"
    r = ibtool("analyze", plans / "skywalk", plans / "torus", "--plot", png, "--metric", "mean",
               "--switch-delays", "60,100,200", check=0)
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    assert int.from_bytes(head[16:20], "big") > 300 and int.from_bytes(head[20:24], "big") > 200
    lines = r.stdout.splitlines()
    assert lines[0].startswith("FR average latency [ns]; figure:")
    assert lines[1].split() == ["switch", "ns", NAMES["skywalk"], NAMES["torus"]]
    assert [ln.split()[0] for ln in lines[2:5]] == ["60", "100", "200"]
    assert not list(tmp_path.glob("*.tmp"))


def test_nr_routing_is_never_faster_than_fr(plans, tmp_path):
    r = [json.loads(ibtool("analyze", plans / "skywalk", "--plot", tmp_path / f"{k}.svg", "--routing", k,
                           "--switch-delays", "0:200:100", "--json", check=0).stdout)["curves"][0]
         for k in ("FR", "NR")]
    assert r[1]["routing"] == "NR"
    for fr, nr in zip(r[0]["points"], r[1]["points"]):
        assert fr["max_ns"] <= nr["max_ns"] and fr["average_ns"] <= nr["average_ns"]
        assert fr["average_hops"] >= nr["average_hops"]


@pytest.mark.parametrize("args, message", [
    (["--plot", "{d}/f.pdf"], "--plot {d}/f.pdf: the extension says the format: .svg or .png"),
    (["--plot", "{d}/no/f.svg"], "--plot {d}/no/f.svg: no directory {d}/no"),
    (["--plot", "{d}/f.svg", "--switch-delays", "500:60:20"], "--switch-delays 500:60:20: needs START <= STOP"),
    (["--plot", "{d}/f.svg", "--switch-delays", "0:500"], "--switch-delays 0:500: not START:STOP:STEP"),
    (["--plot", "{d}/f.svg", "--switch-delays", "60,x"], "--switch-delays 60,x: not START:STOP:STEP"),
    (["--plot", "{d}/f.svg", "--switch-delays", "60,-5"], "--switch-delays 60,-5: a switch delay must be"),
    (["--plot", "{d}/f.svg", "--switch-delays", "0:inf:10"], "--switch-delays 0:inf:10: a switch delay must be"),
    (["--plot", "{d}/f.svg", "--switch-delays", "100,60"], "--switch-delays 100,60: the delays must be distinct"),
    (["--plot", "{d}/f.svg", "--switch-delays", "0:1e6:1"], "--switch-delays 0:1e6:1: 1,000,001 points"),
    (["--plot", "{d}/f.svg", "--prices", "p.yaml"], "--prices applies to the report, not to --plot"),
    (["--plot", "{d}/f.svg", "--switch-delay", "60"], "--switch-delay applies to the report, not to --plot"),
    (["--plot", "{d}/f.svg", "--layout", "{d}/layout.json"], "--layout {d}/layout.json: a layout file fits one"),
    (["--metric", "mean"], "--metric applies only with --plot FILE"),
    ([], "2 PATHs: the report reads one; several only with --plot FILE"),
])
def test_bad_plot_input_is_one_line_and_writes_nothing(plans, tmp_path, args, message):
    (tmp_path / "layout.json").write_text("{}")
    args = [a.format(d=tmp_path) for a in args]
    r = ibtool("analyze", plans / "skywalk", plans / "torus", *args)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"ibtool: error: {message.format(d=tmp_path)}"), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["layout.json"]


def test_plan_without_layout_is_placed_by_its_family(plans, tmp_path):
    kns = tmp_path / "kns"
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", kns, check=0)
    out = tmp_path / "f.svg"
    r = ibtool("analyze", plans / "torus", kns, "--plot", out, "--layout", "none")
    assert r.returncode == 2 and "--layout none: the latency model needs cable lengths" in r.stderr
    assert not out.exists()
    # no layout.json: the family's policy places it, as `--layout default` and `ibtool cabling` do
    r = ibtool("analyze", kns, "--plot", out, "--switch-delays", "60", "--json", check=0)
    curve = json.loads(r.stdout)["curves"][0]
    assert curve["label"] == "kns-k3-n2-s1" and out.is_file()
    r = ibtool("analyze", kns, "--plot", out, "--layout", "default", "--switch-delays", "60", "--json", check=0)
    assert json.loads(r.stdout)["curves"][0] == curve


def test_help_teaches_the_plot():
    r = ibtool("analyze", "--help", check=0)
    assert "--plot fig5.svg --switch-delays 60:500:20 --metric max" in r.stdout
