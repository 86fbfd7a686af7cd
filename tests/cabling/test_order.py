"""What a crew orders (issue 23, items 1-4): each cable's rate from the plan, copper only within
its rate's reach at the length bought, cables long enough to reach, and one answer for `ibtool
cabling` and `ibtool analyze`."""

import json

import numpy as np
import pytest

from ordercheck import check_order, rows
from support import ibtool
from ibtool.layout import make_site, place
from ibtool.layout.cables import choose
from ibtool.topologies.kns import kns


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    d = tmp_path_factory.mktemp("cellia")
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", d / "plan", check=0)
    ibtool("cabling", d / "plan", "--preset", "cellia", "--out", d / "pkg", check=0)
    return d


def test_the_rate_comes_from_the_plan_and_decides_the_medium(cellia, tmp_path):
    """topology.net says 4xQDR: the rate column says so, and a site's default_speed (for links
    without a rate) does not turn the plan's QDR cables into another medium."""
    d = cellia
    cab = rows(d / "pkg" / "cables.csv")
    assert {r["rate"] for r in cab} == {"4xQDR"}
    check_order(d / "pkg", d / "plan")
    site = tmp_path / "site.yaml"  # CELLIA's racks, but links of unknown rate taken as NDR (2 m copper)
    site.write_text("hcas_per_cabinet: 25\ndefault_speed: NDR\n")
    ibtool("cabling", d / "plan", "--policy", "switch-rack", "--site", site, "--out", tmp_path / "pkg", check=0)
    again = rows(tmp_path / "pkg" / "cables.csv")
    assert [(r["medium"], r["purchasable_m"]) for r in again] == [(r["medium"], r["purchasable_m"]) for r in cab]
    assert any(float(r["purchasable_m"]) > 2 and r["medium"] == "copper" for r in cab)  # QDR copper reaches 7 m
    ibtool("cabling", d / "plan", "--out", tmp_path / "default", check=0)  # CELLIA without the preset
    assert check_order(tmp_path / "default", d / "plan")["placed"] == 108


def test_the_length_bought_decides_the_medium():
    """7.0-7.7 m QDR runs: a 7 m copper cable up to 7 m, beyond it a 10 m cable, which is fiber
    (QDR passive copper reaches 7 m), or active copper where the site's catalogue has it."""
    site = make_site(copper_limit={"QDR": 7, "*": 8})
    runs = [6.9, 7.0, 7.01, 7.3, 7.7]
    buy, med = choose(runs, ["QDR"] * 5, site)
    assert buy.tolist() == [7, 7, 10, 10, 10] and med.tolist() == ["copper"] * 2 + ["fiber"] * 3
    acc = make_site(copper_limit={"QDR": 7}, active_copper_limit={"QDR": 15}, optical="aoc")
    buy, med = choose([5, 7.3, 12, 16], ["QDR"] * 4, acc)
    assert med.tolist() == ["copper", "active copper", "active copper", "aoc"] and buy.tolist() == [5, 10, 15, 20]


def test_cables_reach_front_to_back_and_top_to_bottom(cellia):
    """A CELLIA cable runs from U42 front to U42 back of the 1.2 m deep switch rack: longer than
    the depth. Paper 004's flat 2 m inside a cabinet stays the model's length (its figures), but
    what is bought reaches from U42 to U1."""
    c = next(r for r in rows(cellia / "pkg" / "cables.csv")  # C0073 of the issue, before stages grew
             if (r["a_rack"], r["a_u"], r["b_rack"], r["b_u"]) == ("C0", "42", "C0", "42"))
    assert {c["a_side"], c["b_side"]} == {"front", "back"}
    assert float(c["length_m"]) > 1.2 and float(c["purchasable_m"]) >= float(c["length_m"])
    f = kns(3, 2, radix=8)
    lay = place(f, "cabinet-aware", {"switches_per_cabinet": 18})  # one cabinet, U42 down to U25, HCAs from U1
    inside = ~np.isnan(lay.length)
    assert np.all(lay.length[inside] == 2.0)  # paper 004's model, as its figures use it
    far = int(np.argmax(np.abs(lay.u[f.link_a] - lay.u[f.link_b])))
    du = abs(int(lay.u[f.link_a[far]]) - int(lay.u[f.link_b[far]]))
    assert du * 0.04445 > 1.5 and lay.purchasable[far] >= du * 0.04445 and lay.reach[far] > 2.0


def test_analyze_and_cabling_give_one_answer(tmp_path):
    """The same plan, the same site: `analyze --layout default` counts and prices the cables as
    `cabling` orders them (medium, length, price, transceivers); a missing price is an error."""
    plan = tmp_path / "plan"
    ibtool("topo", "fattree", "--k", "6", "--n", "3", "--out", plan, check=0)  # 648 cables, some fiber
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nswitch: 1000\nhca: 500\ntransceiver: {QDR: 40}\n"
                      "copper: {0.5: 10, 1: 11, 1.5: 12, 2: 13, 2.5: 14, 3: 15, 5: 20, 7: 25}\n"
                      "fiber: {10: 100, 15: 110, 20: 120}\n")
    a = json.loads(ibtool("analyze", plan, "--layout", "default", "--prices", prices, "--bisection", "none",
                          "--json", check=0).stdout)
    c = json.loads(ibtool("cabling", plan, "--prices", prices, "--out", tmp_path / "pkg", "--json", check=0).stdout)
    bom = {r["item"]: r for r in c["bom"]}
    media = {}
    for r in c["bom"]:
        if r["kind"] in ("copper", "fiber"):
            media[r["kind"]] = media.get(r["kind"], 0) + r["quantity"]
    links = a["counts"]["links"]
    assert {m: a["layout"]["per_medium"][m]["cables"] for m in media} == media and sum(media.values()) == links
    assert media["fiber"] > 0 and bom["optical transceiver QDR (2 per fiber cable)"]["quantity"] == 2 * media["fiber"]
    cables = sum(r["price"] for r in c["bom"] if r["kind"] in ("copper", "fiber", "transceiver"))
    assert a["cost"]["parts"]["copper_cables"] + a["cost"]["parts"]["fiber_cables"] == pytest.approx(cables)
    per_length = {k: v for k, v in a["layout"]["per_purchasable_length"].items()}
    assert sum(per_length.values()) == links
    for (m, length), n in {(r["kind"], r["size"]): r["quantity"] for r in c["bom"]
                           if r["kind"] in ("copper", "fiber")}.items():
        assert bom[f"{m} cable {length:g} m"]["quantity"] == n
    # a length the table lacks: the cabling run stops, names the file and the length, writes nothing
    prices.write_text("switch: 1000\nhca: 500\ncopper: {1: 11}\nfiber: {10: 100}\ntransceiver: 40\n")
    r = ibtool("cabling", plan, "--prices", prices, "--out", tmp_path / "pkg2")
    assert r.returncode == 2 and f"{prices}: copper: no price for a " in r.stderr and " m cable" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "pkg2").exists()
