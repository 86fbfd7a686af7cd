"""`ibtool cabling`: the cable list, its round trip through `cabling import`, the sheets in a real
browser, and bad input."""

import csv
import html
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from ordercheck import check_order
from support import SMALL, chromium_page, ibtool, small_args
from ibtool.formats import ibnetdiscover
from ibtool.layout import Layout, place
from ibtool.cabling.cable_list import plan_cables
from ibtool.topologies.kns import kns


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    d = tmp_path_factory.mktemp("cellia")
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", d / "plan", check=0)
    r = ibtool("cabling", d / "plan", "--preset", "cellia", "--out", d / "pkg", "--json", check=0)
    return d, json.loads(r.stdout)


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_cellia_package(cellia):
    d, s = cellia
    assert s["cables"] == 108 and s["switch_sheets"] == 48
    # the fabric grows from the SM host H[0,0] as one piece: its cable, S[0,0]'s dimension 0 network
    # (routers R[0,*]) and all of dimension 1 (every column to row 0); then the other rows; then the nodes
    assert [(x["name"], x["count"]) for x in s["stages"]] == [
        ("the SM host H[0,0]'s cable; dimension 0 indirect networks: the 6 reached from it; "
         "dimension 1 indirect networks", 43),
        ("dimension 0 indirect networks: the rest", 30), ("node cables (switch to HCA)", 35)]
    cab = rows(d / "pkg" / "cables.csv")
    assert [r["cable_id"] for r in cab] == [f"C{i:04d}" for i in range(1, 109)]
    # paper 000: all 48 switches in one switch rack cabled front and back, 36 nodes in two node racks
    racks = {}
    for r in cab:
        for t in "ab":
            racks.setdefault(r[f"{t}_rack"], set()).add((r[f"{t}_device"], r[f"{t}_type"], r[f"{t}_side"]))
    assert {k: len(v) for k, v in racks.items()} == {"C0": 48, "C1": 25, "C2": 11}
    assert {t for _, t, _ in racks["C0"]} == {"switch"} and {s for _, _, s in racks["C0"]} == {"front", "back"}
    # every port of the plan once, both labels name the cable and both ends
    ends = [(r[f"{t}_device"], r[f"{t}_port"]) for r in cab for t in "ab"]
    assert len(ends) == len(set(ends)) == 216
    for r in cab:
        assert r["a_label"].startswith(r["cable_id"] + " / ") and f"{r['b_device']} P{r['b_port']}" in r["a_label"]
    # R[4,2] is cabled to S[0,4] and S[1,2] (paper 000, section 3.2.3), in stages 2 and 3
    r42 = {(r["stage"], r["b_device"] if r["a_device"] == "R[4,2]" else r["a_device"])
           for r in cab if "R[4,2]" in (r["a_device"], r["b_device"])}
    assert r42 == {("3", "H[4,2]"), ("2", "S[0,4]"), ("1", "S[1,2]")}
    bom = {r["item"]: int(r["quantity"]) for r in rows(d / "pkg" / "bom.csv")}
    assert bom["switch, 8 ports"] == 48 and bom["HCA port (node)"] == 36
    assert sum(v for k, v in bom.items() if "cable " in k and "label" not in k) == 108
    assert bom["cable label (one per end)"] == 216


def test_round_trip_gives_the_same_plan(cellia, tmp_path):
    d, _ = cellia
    r = ibtool("cabling", "import", d / "pkg" / "cables.csv", "--out", tmp_path / "again", check=0)
    assert "108 cables" in r.stdout
    assert (tmp_path / "again" / "topology.net").read_bytes() == (d / "plan" / "topology.net").read_bytes()
    # hdor's description and the engine's options come back too (the plan's opensm.conf names hdor)
    for name in ("hdor.conf", "opensm.conf", "root-guids"):
        assert (tmp_path / "again" / name).read_text() == (d / "plan" / name).read_text(), name
    # the layout the package was made from, written by the same writer
    f = kns(6, 2, radix=8)
    want = place(f, "switch-rack", {"hcas_per_cabinet": 25})
    want.write(tmp_path / "want.json")
    got = json.loads((tmp_path / "again" / "layout.json").read_text())
    ref = json.loads((tmp_path / "want.json").read_text())
    assert got["nodes"] == ref["nodes"] and got["cables"] == ref["cables"] and got["site"] == ref["site"]
    assert got["cabinets"] == ref["cabinets"]
    # and the rebuilt plan gives the same package again
    ibtool("cabling", tmp_path / "again", "--out", tmp_path / "pkg2", check=0)
    assert (tmp_path / "pkg2" / "cables.csv").read_text() == (d / "pkg" / "cables.csv").read_text()
    assert "routing_engine hdor,nue" in (tmp_path / "again" / "opensm.conf").read_text()


def test_edited_sheet_renames_a_rack_and_moves_a_switch(cellia, tmp_path):
    d, _ = cellia
    cab = rows(d / "pkg" / "cables.csv")
    for r in cab:
        for t in "ab":
            if r[f"{t}_rack"] == "C2":
                r[f"{t}_rack"] = "N02"
            if r[f"{t}_device"] == "S[1,5]":  # from the back of the switch rack to node rack N02, U 30
                r[f"{t}_rack"], r[f"{t}_cabinet"], r[f"{t}_u"], r[f"{t}_side"] = "N02", "2", "30", "front"
    edited = tmp_path / "pkg" / "cables.csv"
    edited.parent.mkdir()
    (tmp_path / "pkg" / "cabling.json").write_text((d / "pkg" / "cabling.json").read_text())
    with open(edited, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(cab[0]))
        w.writeheader()
        w.writerows(cab)
    ibtool("cabling", "import", edited, "--out", tmp_path / "plan", check=0)
    f = ibnetdiscover.read(tmp_path / "plan" / "topology.net")
    lay = Layout.read(tmp_path / "plan" / "layout.json", f)
    s15 = f.index("S[1,5]")
    assert lay.cabinet_names == ["C0", "C1", "N02"] and lay.cabinet[s15] == 2 and lay.u[s15] == 30
    # the moved switch's cables are now between racks: longer than in the switch rack
    old = {r["cable_id"]: float(r["length_m"]) for r in cab if "S[1,5]" in (r["a_device"], r["b_device"])}
    ibtool("cabling", tmp_path / "plan", "--out", tmp_path / "pkg2", check=0)
    new = {r["cable_id"]: float(r["length_m"]) for r in rows(tmp_path / "pkg2" / "cables.csv")
           if "S[1,5]" in (r["a_device"], r["b_device"])}
    assert set(new) == set(old) and all(new[c] != old[c] for c in old)


def edit(src, tmp_path, change):
    cab = rows(src)
    cols = list(cab[0])
    cab, cols = change(cab, cols)
    p = tmp_path / "cables.csv"
    with open(p, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(cab)
    return p


def _two_on_one_port(cab, cols):
    for c in cols:  # cable 6's first end plugged where cable 5's is
        if c.startswith("a_") and c != "a_label":
            cab[5][c] = cab[4][c]
    return cab, cols


def _beyond_radix(cab, cols):
    cab[40]["b_port"] = "9"
    return cab, cols


def _duplicate_id(cab, cols):
    cab[7]["cable_id"] = "C0003"
    return cab, cols


def _missing_column(cab, cols):
    return cab, [c for c in cols if c != "b_port"]


@pytest.mark.parametrize("change, line, message", [
    (_two_on_one_port, 7, "two cables on R[0,1] port 3 (the other on line 6)"),
    (_beyond_radix, 42, "b_port: S[1,3] port 9 is beyond its 8 ports"),
    (_duplicate_id, 9, "duplicate cable ID C0003 (also on line 4)"),
    (_missing_column, 1, "missing column 'b_port'"),
])
def test_conflicting_edits_name_the_row(cellia, tmp_path, change, line, message):
    d, _ = cellia
    p = edit(d / "pkg" / "cables.csv", tmp_path, change)
    r = ibtool("cabling", "import", p, "--out", tmp_path / "plan")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"ibtool: error: {p}:{line}: {message}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "plan").exists()


def test_bad_label_format_and_site(tmp_path):
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", tmp_path / "p", check=0)
    r = ibtool("cabling", tmp_path / "p", "--label-format", "{cable} {rack} {shelf}", "--out", tmp_path / "o")
    assert r.returncode == 2 and "--label-format: unknown field {shelf}" in r.stderr
    site = tmp_path / "site.yaml"
    site.write_text("cabinet_u: 42\ngrid: [1, 1]\n")
    r = ibtool("cabling", tmp_path / "p", "--policy", "switch-rack", "--site", site, "--out", tmp_path / "o")
    assert r.returncode == 2 and "does not fit the room" in r.stderr and "Traceback" not in r.stderr
    site.write_text("cabinet_u: 42\nswitches_per_cabinet: 50\n")
    r = ibtool("cabling", tmp_path / "p", "--policy", "cabinet-aware", "--site", site, "--out", tmp_path / "o")
    assert r.returncode == 2 and f"{site}:2: switches_per_cabinet: 50 switches of 1U do not fit in 42 usable U" \
        in r.stderr
    site.write_text("racks: 3\n")
    r = ibtool("cabling", tmp_path / "p", "--site", site, "--policy", "sequential", "--out", tmp_path / "o")
    assert r.returncode == 2 and f"{site}:1: unknown site key 'racks'" in r.stderr
    assert not any((tmp_path / "o").glob("*"))


def test_policy_help_names_every_registered_policy():
    from ibtool.layout import POLICIES
    said = " ".join(ibtool("cabling", "plan", "--help", check=0).stdout.split())
    assert all(name in said for name in POLICIES) and len(POLICIES) >= 4, said


def test_a_plan_named_like_a_subcommand_is_the_plan(tmp_path):
    """Issue 37: a new user's plan directory named `plan` (or `import`): `ibtool cabling plan`
    there is that plan's package, not the subcommand missing its argument; the subcommand stays
    reachable with its argument. Run as a user runs it, in the directory holding the plan."""
    import subprocess
    from support import IBTOOL, ROOT
    for name in ("plan", "import"):
        ibtool("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", tmp_path / name, check=0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(*args):
        return subprocess.run([*IBTOOL, "cabling", *args], capture_output=True, text=True, cwd=tmp_path, env=env,
                              timeout=300)
    for name in ("plan", "import"):
        r = run(name, "--out", f"pkg-{name}", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["cables"] == 27 and (tmp_path / f"pkg-{name}" / "cables.csv").is_file()
    r = run("plan", "--json")  # the default place of the package: PLAN/cabling
    assert r.returncode == 0 and (tmp_path / "plan" / "cabling" / "index.html").is_file(), r.stderr
    r = run("plan", "import", "--out", "pkg-sub", "--json")  # the subcommand, on the plan named import
    assert r.returncode == 0 and json.loads(r.stdout)["cables"] == 27, r.stderr
    r = run("import", "pkg-plan/cables.csv", "--out", "imported")  # the subcommand: an argument follows
    assert r.returncode == 0 and (tmp_path / "imported" / "topology.net").is_file(), r.stderr


def test_stages_and_ids_are_stable():
    f = kns(4, 2, s=2, radix=8)
    a = plan_cables(place(f, "sequential"))
    b = plan_cables(place(kns(4, 2, s=2, radix=8), "sequential"))
    assert list(a.rows()) == list(b.rows())
    assert a.stage_names == ["the SM host H[0,0]'s cable; dimension 0 indirect networks: the 8 reached from it; "
                             "dimension 1 indirect networks", "dimension 0 indirect networks: the rest",
                             "node cables (switch to HCA)"]


def test_sheets_in_a_real_browser(cellia):
    """Every page renders without console errors; every cable is on the sheet of each rack it ends
    in, once; the switch sheets show both ends; the SVGs are well-formed and show every device."""
    d, _ = cellia
    pkg = d / "pkg"
    cab = rows(pkg / "cables.csv")
    with chromium_page() as (page, errors):
        page.goto((pkg / "index.html").as_uri())
        assert page.title() == "Cabling plan: kns-k6-n2-s1"
        assert "C0044 – C0073" in page.inner_text("#stages")
        assert page.locator("#racks a").count() == 3
        drawn = set(page.locator("svg [data-device]").evaluate_all("els => els.map(e => e.dataset.device)"))
        assert drawn == {r[f"{t}_device"] for r in cab for t in "ab"}  # Fig. 7's routers, switches and HCAs
        for rack in sorted((pkg / "racks").glob("*.html")):
            page.goto(rack.as_uri())
            seen = page.locator("tr.cable").evaluate_all("els => els.map(e => e.dataset.cable)")
            assert sorted(seen) == [r["cable_id"] for r in cab if rack.stem in (r["a_rack"], r["b_rack"])]
            devs = set(page.locator("svg [data-device]").evaluate_all("els => els.map(e => e.dataset.device)"))
            assert devs == {r[f"{t}_device"] for r in cab for t in "ab" if r[f"{t}_rack"] == rack.stem}
        page.goto((pkg / "switches" / "S_0_1.html").as_uri())
        ports = page.locator("tr.port").evaluate_all("els => els.map(e => [e.dataset.port, e.dataset.cable])")
        want = sorted([r["b_port"] if r["b_device"] == "S[0,1]" else r["a_port"], r["cable_id"]]
                      for r in cab if "S[0,1]" in (r["a_device"], r["b_device"]))
        assert sorted(ports) == want and len(want) == 6
        assert page.locator("tr.free").count() == 2
    assert errors == []
    for svg in (pkg / "svg").glob("*.svg"):
        ET.parse(svg)  # well-formed


def test_every_family_has_a_small_case():
    """SMALL is every registered family's first example line: each must be `ibtool topo NAME ARGS
    --out DIR` (the tests below build, cable and place it)."""
    from types import SimpleNamespace

    from ibtool.topologies import load_all
    assert set(load_all()) == set(SMALL)
    assert [name for name, args in SMALL.items() if args is None] == []
    two = "ibtool topo x --a 1 --s 'N6K2[-1,1](2)' --out d   # small\n  ibtool topo x --a 9 --out big"
    assert small_args(SimpleNamespace(name="x", example=two)) == ["--a", "1", "--s", "N6K2[-1,1](2)"]
    assert small_args(SimpleNamespace(name="y", example=two)) is None  # another family's command
    assert small_args(SimpleNamespace(name="x", example="ibtool topo x --a 1")) is None  # no --out


@pytest.mark.parametrize("family", sorted(SMALL))
def test_cabling_of_every_family(family, tmp_path):
    """Every family's plan gives a complete package: every cable once in the list, on exactly one
    rack sheet (or the floor sheet), both ends on the switch sheets, every stage numbered."""
    ibtool("topo", family, *SMALL[family], "--out", tmp_path / "p", check=0)
    r = ibtool("cabling", tmp_path / "p", "--out", tmp_path / "c", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    plan = ibnetdiscover.read(tmp_path / "p" / "topology.net")
    cab = rows(tmp_path / "c" / "cables.csv")
    assert s["cables"] == len(cab) == plan.num_links
    assert {frozenset(((r["a_device"], int(r["a_port"])), (r["b_device"], int(r["b_port"])))) for r in cab} \
        == {frozenset(c) for c in plan.link_set()}
    assert sum(st["count"] for st in s["stages"]) == len(cab) and len(s["stages"]) >= 2
    # every rack (and the floor) lists every cable that ends in it, once, and every host port in it
    for sheet in (tmp_path / "c" / "racks").glob("*.html"):
        text = sheet.read_text()
        listed = re.findall(r'<tr class="cable" data-cable="([^"]+)"', text)
        assert sorted(listed) == [r["cable_id"] for r in cab if sheet.stem in (r["a_rack"], r["b_rack"])]
        hosts = re.findall(r'<tr class="host" data-host="([^"]+)" data-port="(\d+)" data-cable="([^"]+)"', text)
        assert sorted(hosts) == sorted((html.escape(r[f"{t}_device"]), r[f"{t}_port"], r["cable_id"])
                                       for r in cab for t in "ab" if r[f"{t}_rack"] == sheet.stem
                                       and r[f"{t}_type"] == "hca")
    assert {r[f"{t}_rack"] for r in cab for t in "ab"} == {p.stem for p in (tmp_path / "c" / "racks").glob("*.html")}
    assert s["switch_sheets"] == plan.count(kind=2) == len(list((tmp_path / "c" / "switches").glob("*.html")))
    if (tmp_path / "p" / "layout.json").exists():  # the family's own floor is kept
        assert s["policy"] == json.loads((tmp_path / "p" / "layout.json").read_text())["policy"]
    # what is ordered: the plan's rates, copper within its reach, cables that reach their ports
    assert check_order(tmp_path / "c", tmp_path / "p")["placed"] > 0


@pytest.mark.parametrize("family", ["fattree", "dragonfly"])
def test_round_trip_of_other_families(family, tmp_path):
    ibtool("topo", family, *SMALL[family], "--out", tmp_path / "p", check=0)
    ibtool("cabling", tmp_path / "p", "--out", tmp_path / "c", check=0)
    ibtool("cabling", "import", tmp_path / "c" / "cables.csv", "--out", tmp_path / "again", check=0)
    assert (tmp_path / "again" / "topology.net").read_bytes() == (tmp_path / "p" / "topology.net").read_bytes()
    f = ibnetdiscover.read(tmp_path / "p" / "topology.net")
    lay = (tmp_path / "again" / "layout.json")
    from ibtool.plan import read_layout, read_plan
    fam, d, _ = read_plan(tmp_path / "p")  # the layout the package was made from
    a = read_layout(fam, d).to_dict()
    b = Layout.read(lay, f).to_dict()
    assert a["nodes"] == b["nodes"] and a["cables"] == b["cables"] and a["site"] == b["site"]
