"""What the crew holds (issue 23, items 6, 8, 15, 16, 17): rack sheets listing every cable that
ends in the rack with a per-host end view and a kit list; places with front and back; labels that
fit a real label; labels.csv for label printers; NetBox's bulk-import CSV columns; planned GUIDs
marked as placeholders."""

import csv
import html
import json
import re
import shutil

import pytest

from support import FIXTURES, ibtool
from ibtool.cabling.cable_list import plan_cables
from ibtool.layout import place
from ibtool.topologies.kns import kns


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    d = tmp_path_factory.mktemp("cellia")
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", d / "plan", check=0)
    ibtool("cabling", d / "plan", "--preset", "cellia", "--out", d / "pkg", check=0)
    return d / "pkg"


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_rack_sheet_lists_its_cables_hosts_and_kit(cellia):
    """Node racks no longer say '0 cables start here': every cable that ends in C1 is there with its
    place, and each host's port with its cable and the label at that end; the switch rack's kit
    counts what starts there by medium and length."""
    cab = rows(cellia / "cables.csv")
    c1 = (cellia / "racks" / "C1.html").read_text()
    mine = [r for r in cab if "C1" in (r["a_rack"], r["b_rack"])]
    assert len(mine) == 25 and "25 cables end in this rack" in c1
    for r in mine:
        t = "a" if r["a_rack"] == "C1" else "b"
        row = re.search(rf'<tr class="host" data-host="{re.escape(html.escape(r[t + "_device"]))}" data-port="1" '
                        rf'data-cable="{r["cable_id"]}">(.*?)</tr>', c1).group(1)
        for line in r[f"{t}_label"].split(" / "):  # the label at the host's end, line by line
            assert f'<span class="id">{html.escape(line)}</span>' in row
        assert f'C1 U{int(r[t + "_u"]):02d} front' in row
    c0 = (cellia / "racks" / "C0.html").read_text()
    kit = dict(re.findall(r'<tr><td class="id">copper</td><td class="num">([\d.]+) m</td><td class="num">(\d+)</td>', c0))
    want = {}
    for r in cab:
        if r["a_rack"] == "C0" and r["medium"] == "copper":
            want[r["purchasable_m"]] = want.get(r["purchasable_m"], 0) + 1
    assert {k: int(v) for k, v in kit.items()} == want and sum(want.values()) == 108


def test_places_say_front_or_back_and_are_unique(cellia):
    """Two devices share C0 U42: a place with its face is unique, on the sheets, in the list and
    on the labels."""
    cab = rows(cellia / "cables.csv")
    at = {}
    for r in cab:
        for t in "ab":
            assert r[f"{t}_side"] in ("front", "back")
            at.setdefault((r[f"{t}_rack"], r[f"{t}_u"], r[f"{t}_side"]), set()).add(r[f"{t}_device"])
    assert all(len(v) == 1 for v in at.values())
    u42 = {k[2]: v.pop() for k, v in at.items() if k[:2] == ("C0", "42")}
    assert set(u42) == {"front", "back"}
    labels = {r[f"{t}_label"].split(" / ")[1] for r in cab for t in "ab" if (r[f"{t}_rack"], r[f"{t}_u"]) == ("C0", "42")}
    assert {x.split()[0] for x in labels} == {"C0-U42F", "C0-U42B"}
    c0 = (cellia / "racks" / "C0.html").read_text()
    assert '<td class="id">C0 U42 front</td>' in c0 and '<td class="id">C0 U42 back</td>' in c0


def test_default_labels_fit_a_real_label():
    """Three lines of at most 20 characters, also where the names are long (KNS 12-ary: H[11,11]
    in rack C16): the device name gives way, the place still names the port; one line on request."""
    f = kns(12, 2, radix=16)
    cp = plan_cables(place(f, "switch-rack", {"hcas_per_cabinet": 10}))
    lab = [r[f"{t}_lines"] for r in cp.rows() for t in "ab"]
    assert all(len(x) == 3 and max(map(len, x)) <= 20 for x in lab), max(lab, key=lambda x: max(map(len, x)))
    assert any("R[" in x[1] for x in lab) and any(re.fullmatch(r">?C\d+-U\d\d[FB] P\d+", y) for x in lab for y in x)
    one = plan_cables(place(f, "switch-rack", {"hcas_per_cabinet": 10}), label_format="one-line")
    assert all(len(r["a_lines"]) == 1 for r in one.rows())


def test_labels_csv_for_label_printers(cellia):
    """One row per cable end, each label line in its own column (P-touch Editor takes a cell's
    text up to its first line break), the cable ID again for the barcode."""
    cab = rows(cellia / "cables.csv")
    raw = (cellia / "labels.csv").read_bytes()
    assert raw.startswith(b"cable_id,end,stage,line1,line2,line3,barcode,") and b"\r\n" in raw
    lab = rows(cellia / "labels.csv")
    assert len(lab) == 2 * len(cab)
    by = {(x["cable_id"], x["end"]): x for x in lab}
    for r in cab:
        for t in "ab":
            x = by[r["cable_id"], t.upper()]
            assert [x["line1"], x["line2"], x["line3"]] == r[f"{t}_label"].split(" / ")
            assert x["barcode"] == r["cable_id"] and (x["rack"], x["u"], x["side"]) == \
                (r[f"{t}_rack"], r[f"{t}_u"], r[f"{t}_side"])
    assert not any("\n" in v for x in lab for v in x.values())


# NetBox's bulk-import forms (netbox/dcim/forms/bulk_import.py of netbox-community/netbox, the
# Meta.fields of each ImportForm), and the choices the values must come from (dcim/choices.py)
NETBOX = {
    "1-manufacturers.csv": ({"name", "slug", "description", "tags"}, {"name", "slug"}),
    "2-device-types.csv": ({"manufacturer", "default_platform", "model", "slug", "part_number", "u_height",
                            "exclude_from_utilization", "is_full_depth", "subdevice_role", "airflow", "description",
                            "weight", "weight_unit", "comments", "tags"}, {"manufacturer", "model", "slug"}),
    "3-device-roles.csv": ({"name", "slug", "color", "vm_role", "config_template", "description", "tags"},
                           {"name", "slug"}),
    "4-sites.csv": ({"name", "slug", "status", "region", "group", "tenant", "facility", "time_zone", "description",
                     "physical_address", "shipping_address", "latitude", "longitude", "comments", "tags"},
                    {"name", "slug", "status"}),
    "5-racks.csv": ({"site", "location", "name", "facility_id", "tenant", "status", "role", "form_factor", "serial",
                     "asset_tag", "width", "u_height", "desc_units", "outer_width", "outer_depth", "outer_unit",
                     "mounting_depth", "airflow", "weight", "max_weight", "weight_unit", "description", "comments",
                     "tags"}, {"site", "name", "status", "width"}),
    "6-devices.csv": ({"name", "role", "tenant", "manufacturer", "device_type", "platform", "serial", "asset_tag",
                       "status", "site", "location", "rack", "position", "face", "latitude", "longitude", "parent",
                       "device_bay", "airflow", "virtual_chassis", "vc_position", "vc_priority", "cluster",
                       "description", "config_template", "comments", "tags"},
                      {"role", "manufacturer", "device_type", "status", "site"}),
    "7-interfaces.csv": ({"device", "name", "label", "parent", "bridge", "lag", "type", "speed", "duplex", "enabled",
                          "mark_connected", "wwn", "vdcs", "mtu", "mgmt_only", "description", "poe_mode", "poe_type",
                          "mode", "vrf", "rf_role", "rf_channel", "rf_channel_frequency", "rf_channel_width",
                          "tx_power", "tags"}, {"device", "name", "type"}),
    "8-cables.csv": ({"side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                      "type", "status", "tenant", "label", "color", "length", "length_unit", "description",
                      "comments", "tags"},
                     {"side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name"}),
}
CABLE_TYPES = {"cat3", "cat5", "cat5e", "cat6", "cat6a", "cat7", "cat7a", "cat8", "dac-active", "dac-passive",
               "mrj21-trunk", "coaxial", "mmf", "mmf-om1", "mmf-om2", "mmf-om3", "mmf-om4", "mmf-om5", "smf",
               "smf-os1", "smf-os2", "aoc", "power"}
IB_TYPES = {f"infiniband-{s}" for s in ("sdr", "ddr", "qdr", "fdr10", "fdr", "edr", "hdr", "ndr", "xdr")}


def test_netbox_bulk_import_files(cellia):
    """Each file's columns are fields of NetBox's import form for it (the required ones there),
    every value from NetBox's choices, every reference to an object of an earlier file, and no
    two devices in one rack position and face (NetBox refuses that)."""
    nb = cellia / "netbox"
    assert sorted(p.name for p in nb.iterdir()) == sorted(NETBOX)
    data = {}
    for name, (allowed, required) in NETBOX.items():
        with open(nb / name, newline="") as fh:
            reader = csv.DictReader(fh)
            assert set(reader.fieldnames) <= allowed and required <= set(reader.fieldnames), name
            data[name] = list(reader)
    dev = {d["name"]: d for d in data["6-devices.csv"]}
    types = {(t["manufacturer"], t["model"]) for t in data["2-device-types.csv"]}
    racks = {r["name"] for r in data["5-racks.csv"]}
    assert all((d["manufacturer"], d["device_type"]) in types and d["rack"] in racks and d["status"] == "planned"
               and d["face"] in ("front", "rear") and d["role"] in {r["name"] for r in data["3-device-roles.csv"]}
               for d in dev.values())
    slots = [(d["rack"], d["position"], d["face"]) for d in dev.values()]
    assert len(slots) == len(set(slots)) == 84
    ifaces = {(i["device"], i["name"]) for i in data["7-interfaces.csv"]}
    assert {i["type"] for i in data["7-interfaces.csv"]} <= IB_TYPES
    cab = rows(cellia / "cables.csv")
    assert len(data["8-cables.csv"]) == len(cab)
    for c, r in zip(data["8-cables.csv"], cab):
        assert (c["side_a_device"], c["side_a_name"]) in ifaces and (c["side_b_device"], c["side_b_name"]) in ifaces
        assert c["side_a_type"] == c["side_b_type"] == "dcim.interface" and c["status"] == "planned"
        assert c["type"] in CABLE_TYPES and c["label"] == r["cable_id"]
        assert (c["length"], c["length_unit"]) == (r["purchasable_m"], "m")


def test_planned_guids_are_placeholders(cellia, tmp_path):
    """A plan's GUIDs are the builder's numbers: the switch sheet says so. A plan that is a
    discovered fabric (a real ibnetdiscover dump) shows its switches' own GUIDs."""
    sheet = (cellia / "switches" / "S_0_1.html").read_text()
    assert "placeholder: planned, not the switch" in sheet
    dump = tmp_path / "real.ibnetdiscover"
    shutil.copy(FIXTURES / "real" / "public" / "fdr10-sx6036-8sw.ibnetdiscover", dump)
    ibtool("cabling", dump, "--out", tmp_path / "pkg", check=0)
    one = next((tmp_path / "pkg" / "switches").glob("*.html")).read_text()
    assert "placeholder: planned" not in one and re.search(r'GUID <span class="id guid">0x[0-9a-f]{16}</span>', one)
    assert not (tmp_path / "cable-ids.json").exists()  # a dump is no plan directory: nothing written beside it


def test_bom_prices_transceivers(tmp_path):
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", plan, check=0)
    prices = tmp_path / "prices.yaml"
    prices.write_text("switch: 1000\nhca: 500\ncopper: {1: 5, 1.5: 6, 2: 7, 2.5: 8, 3: 9, 5: 10, 7: 12}\n"
                      "fiber: {10: 80, 15: 90}\ntransceiver: {QDR: 40}\n")
    site = tmp_path / "site.yaml"  # node racks far enough for fiber
    site.write_text("hcas_per_cabinet: 6\n")
    s = json.loads(ibtool("cabling", plan, "--policy", "switch-rack", "--site", site, "--prices", prices,
                          "--out", tmp_path / "pkg", "--json", check=0).stdout)
    bom = {r["item"]: r for r in s["bom"]}
    fiber = sum(r["quantity"] for r in s["bom"] if r["kind"] == "fiber")
    t = bom["optical transceiver QDR (2 per fiber cable)"]
    assert fiber > 0 and t["quantity"] == 2 * fiber and t["unit_price"] == 40 and t["price"] == 80 * fiber
