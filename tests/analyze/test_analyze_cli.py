"""`ibtool analyze` end to end: a KNS plan, a real ibsim run, real dumps, HTML in a real browser,
and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest
from support import FIXTURES, chromium_page, ibtool


def analyze_json(*args):
    return json.loads(ibtool("analyze", *args, "--json", check=0).stdout)


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "cellia"
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", out, check=0)
    return out


def test_kns_plan_paper_000_counts_and_distances(cellia):
    r = analyze_json(cellia)
    c = r["counts"]
    # paper 000, section 3.4: 6-ary 2-direct = 36 HCAs, 36 routers + 12 switches
    assert (c["hcas"], c["switches"]) == (36, 48) and r["params"]["topology"] == "kns"
    # routers differing in j coordinates are 2j hops apart (via j indirect switches)
    assert r["distance"]["switch"]["diameter"] == 4
    assert r["distance"]["switch"]["average"] == pytest.approx(2 * 2 * (5 / 6) * 36 / 35, abs=1e-6)
    assert r["distance"]["hca"]["diameter"] == 6
    assert r["bisection"]["exact"]
    # no layout.json: placed by the family's policy, as `ibtool cabling` places it (CELLIA's racks)
    assert r["layout"]["policy"] == "switch-rack" and r["latency"]["FR"]["max_ns"] > 0
    assert "layout" not in analyze_json(cellia, "--layout", "none")  # asked for no floor: none


def test_kns_3_ary_3_direct_has_54_switches(tmp_path):
    out = tmp_path / "k3n3"
    ibtool("topo", "kns", "--k", "3", "--n", "3", "--radix", "8", "--out", out, check=0)
    r = analyze_json(out, "--bisection", "heuristic")
    assert r["counts"]["switches"] == 54 and r["counts"]["hcas"] == 27  # paper 000: 27 routers + 27 switches
    assert r["distance"]["switch"]["diameter"] == 6
    assert r["distance"]["switch"]["average"] == pytest.approx(2 * 3 * (2 / 3) * 27 / 26, abs=1e-6)


def test_layout_saved_beside_the_plan_is_used_next_time(cellia, tmp_path):
    site = tmp_path / "cellia-site.yaml"
    site.write_text("hcas_per_cabinet: 25\n")
    lay = cellia / "layout.json"
    r = analyze_json(cellia, "--layout", "switch-rack", "--site", site, "--save-layout", lay)
    assert r["layout"]["cabinets"] == 3 and r["layout"]["policy"] == "switch-rack"
    again = analyze_json(cellia)  # PLAN_DIR/layout.json is read back
    assert again["layout"] == r["layout"] and again["latency"] == r["latency"]
    lay.unlink()


def test_layout_metrics_and_prices(cellia, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nswitch: 1000\nhca: 500\n"
                      "copper: {0.5: 10, 1: 11, 1.5: 12, 2: 13, 2.5: 14, 3: 15, 5: 20, 7: 25}\n"
                      "fiber: {10: 100, 15: 110}\ntransceiver: 50\n")
    r = analyze_json(cellia, "--layout", "cabinet-aware", "--prices", prices)
    lay = r["layout"]
    assert lay["cables"] == 108 and lay["per_medium"]["copper"]["cables"] + lay["per_medium"]["fiber"]["cables"] == 108
    assert sum(lay["per_purchasable_length"].values()) == 108
    la = r["latency"]
    assert la["FR"]["max_ns"] <= la["NR"]["max_ns"] and la["FR"]["average_ns"] <= la["NR"]["average_ns"]
    co = r["cost"]
    assert co["parts"]["switches"] == 48 * 1000 and co["parts"]["hcas"] == 36 * 500
    fiber = lay["per_medium"]["fiber"]["cables"]  # each with its two transceivers
    assert co["parts"]["fiber_cables"] >= fiber * (100 + 2 * 50)
    assert co["per_endpoint"] == pytest.approx(co["total"] / 36, abs=0.01)
    text = ibtool("analyze", cellia, "--layout", "cabinet-aware", "--prices", prices, check=0).stdout
    used = next(line for line in text.splitlines() if "prices used:" in line)
    # every price shown (no hidden prices), as a person writes them, not a Python dict
    assert "switch 1,000.00 EUR" in used and "copper 0.5 m 10.00, 1 m 11.00" in used and "{" not in used


def test_missing_cable_price_names_the_length(cellia, tmp_path):
    prices = tmp_path / "p.yaml"
    prices.write_text("switch: 1\nhca: 1\ncopper: {1: 1}\n")
    r = ibtool("analyze", cellia, "--layout", "cabinet-aware", "--prices", prices)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "p.yaml: copper: no price for a" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.ibsim
def test_analyze_an_ibsim_run_matches_the_plan(tmp_path):
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", plan, check=0)
    run = tmp_path / "run"
    ibtool("sim", "run", plan / "topology.net", "--engine", "minhop", "--out", run, check=0)
    found, planned = analyze_json(run), analyze_json(plan)
    assert found["counts"]["links"] == planned["counts"]["links"] == 27
    found["bisection"].pop("seconds"), planned["bisection"].pop("seconds")
    for key in ("distance", "bisection", "moore"):
        assert found[key] == planned[key]


def test_real_production_fat_tree_dump():
    # loginoff/infiniband_topology `topo`: ibnetdiscover of a 2014 FDR10 cluster, 8 SX6036 switches
    r = analyze_json(FIXTURES / "real" / "public" / "fdr10-sx6036-8sw.ibnetdiscover")
    c = r["counts"]
    assert (c["switches"], c["hcas"], c["radix"]) == (8, 144, {"36": 8})
    assert c["links_by_kind"]["switch-switch"] == 47
    assert r["distance"]["switch"]["diameter"] == 2 and r["distance"]["hca"]["diameter"] == 4
    assert r["distance"]["switch"]["unreachable_pairs"] == 0
    b = r["bisection"]
    assert not b["exact"] and 0 < b["links"] <= 47 and "upper bound" in b["method"]


@pytest.mark.parametrize("dump", ["real/ndr-2sw.ibnetdiscover", "real/ibsim-kns-k3-n2-hdor/ibnetdiscover.out",
                                  "ibnetdiscover/cellia-minhop.out", "ibnetdiscover/edr-2switch.out"])
def test_other_real_dumps(dump):
    r = analyze_json(FIXTURES / dump)
    assert r["counts"]["links"] > 0 and r["distance"]["switch"]["unreachable_pairs"] == 0


def test_html_report_renders_in_chromium(cellia, tmp_path):
    html = tmp_path / "report.html"
    ibtool("analyze", cellia, "--layout", "cabinet-aware", "--html", html, check=0)
    with chromium_page() as (page, errors):
        page.goto(html.as_uri())
        assert page.title() == "ibtool analyze: kns-k6-n2-s1"
        assert page.inner_text("#counts").count("48") >= 1
        dist = page.inner_text("#distances")
        assert "switch graph\t4\t3.4286" in dist and "HCA to HCA\t6\t5.4286" in dist
        assert "exact (MILP, HiGHS)" in page.inner_text("#bisection")
        assert "FR" in page.inner_text("#latency") and page.locator("svg rect.bar").count() == 4
        # each histogram with its axes and the count over each bar
        texts = page.evaluate("() => Array.from(document.querySelectorAll('svg text')).map(t => t.textContent)")
        assert texts.count("hops") == 2 and texts.count("pairs") == 2 and texts.count("900") == 2
        assert [b.get_attribute("data-count") for b in page.locator("svg rect.bar").all()] == ["360", "900"] * 2
    assert errors == []


@pytest.mark.parametrize("args, message", [
    (["--layout", "rows"], "--layout rows: neither a file nor a policy"),
    (["--site", "x.yaml"], "--site needs --layout POLICY"),
    (["--save-layout", "l.json"], "--save-layout needs a layout"),
])
def test_usage_errors_are_one_line(cellia, args, message):
    r = ibtool("analyze", cellia, *args)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"ibtool: error: {message}")


@pytest.mark.parametrize("yaml_text, message", [
    ("cabinet_hieght: 3\n", "site.yaml:1: unknown site key 'cabinet_hieght'"),
    ("cabinet_u: 1\nswitch_u: 2\n", "site.yaml:1: cabinet_u: a cabinet of 1U with 0U reserved is too small"),
    ("overhead: -1\n", "site.yaml:1: overhead: a length cannot be negative, got -1.0"),
    ("grid: [2, 2]\nswitches_per_cabinet: 4\n", "site.yaml:1: grid: R[2,4] does not fit the room: the cabinet-aware policy needs 12"),
])
def test_bad_site_is_one_line_exit_2_and_writes_nothing(cellia, tmp_path, yaml_text, message):
    site = tmp_path / "site.yaml"
    site.write_text(yaml_text)
    html = tmp_path / "r.html"
    r = ibtool("analyze", cellia, "--layout", "cabinet-aware", "--site", site, "--html", html,
               "--save-layout", tmp_path / "l.json")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not html.exists() and not (tmp_path / "l.json").exists()


def test_bad_layout_file_is_one_line(cellia, tmp_path):
    bad = tmp_path / "layout.json"
    bad.write_text('{"format": "ibtool-layout/1", "site": {}, "cabinets": [], "nodes": [["X", 0, 1, "front"]], '
                   '"cables": []}')
    r = ibtool("analyze", cellia, "--layout", bad)
    assert r.returncode == 2 and "layout.json: node 'X' is not in the fabric" in r.stderr


def test_help_teaches():
    r = ibtool("analyze", "--help", check=0)
    assert "Examples:" in r.stdout and "--layout switch-rack" in r.stdout and "--prices" in r.stdout


def test_progress_is_one_line_per_stage_on_big_fabrics(tmp_path):
    plan = tmp_path / "t32"
    ibtool("topo", "torus", "--dims", "32x32", "--out", plan, check=0)  # 2,048 nodes: past 2,000, "big"
    r = ibtool("analyze", plan, "--bisection", "heuristic", "--layout", "cabinet-aware", "--json", check=0)
    stages = [line.split(":")[0].strip() for line in r.stderr.splitlines()]
    assert stages == ["counts", "distances", "path diversity", "bisection", "latency"]
    assert json.loads(r.stdout)["counts"]["switches"] == 1024


def test_cable_totals_by_kind_paper_004_torus():
    """Paper 004's Fig. 5 counts switch-to-switch cables only (Torus(8,256,6): 31 km); analyze's
    total also has the 2,048 switch-to-HCA cables. Both are reported, by kind, and add up."""
    from ibtool.analyze.report import cables_by_kind
    from ibtool.layout import place
    from ibtool.topologies.direct import torus
    lay = place(torus(z=8, c=256, n=3), "cabinet-aware")
    k = cables_by_kind(lay)
    ss, sh = k["switch-switch"], k["switch-hca"]
    assert (ss["cables"], sh["cables"]) == (3 * 2048, 2048) and "hca-hca" not in k
    assert round(ss["length_m"] / 1000, 1) == 30.8 and round(sh["length_m"] / 1000, 1) == 4.1  # 2 m each
    total = lay.summary()
    assert ss["length_m"] + sh["length_m"] == pytest.approx(total["total_length_m"])
    assert ss["purchased_m"] + sh["purchased_m"] == pytest.approx(total["total_purchased_m"])
    for m in ("copper", "fiber"):
        assert ss["per_medium"][m]["cables"] + sh["per_medium"][m]["cables"] == total["per_medium"][m]["cables"]
    assert ss["length_m"] == pytest.approx(lay.summary(exclude_hca_links=True)["total_length_m"])
    assert sum(ss["per_purchasable_length"].values()) == ss["cables"]


def test_cable_totals_by_kind_everywhere(tmp_path):
    """Text, JSON and HTML of `ibtool analyze` carry the cable totals per link kind."""
    plan = tmp_path / "torus"
    ibtool("topo", "torus", "--dims", "4x4", "--out", plan, check=0)
    r = analyze_json(plan, "--bisection", "none")
    k = r["layout"]["by_kind"]
    assert k["switch-switch"]["cables"] == 32 and k["switch-hca"]["cables"] == 16
    assert k["switch-switch"]["length_m"] + k["switch-hca"]["length_m"] == pytest.approx(r["layout"]["total_length_m"])
    html = tmp_path / "r.html"
    text = ibtool("analyze", plan, "--bisection", "none", "--html", html, check=0).stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("switch-to-switch:"))
    assert line.strip().startswith(f"switch-to-switch: 32 cables, {k['switch-switch']['length_m']:,.1f} m")
    assert any(x.strip().startswith("switch-to-HCA: 16 cables") for x in text.splitlines())
    with chromium_page() as (page, errors):
        page.goto(html.as_uri())
        rows = page.locator("#cables-by-kind tr").all_inner_texts()
        assert [r.split("\t")[0] for r in rows[1:]] == ["switch-switch", "switch-hca"]
        assert rows[1].split("\t")[1:3] == ["32", f"{k['switch-switch']['length_m']:.1f}"]
    assert errors == []
