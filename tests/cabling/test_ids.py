"""Cable IDs that never move and an edited cable list taken back (issue 23, items 5, 9, 10): a
re-plan after a port swap keeps every ID and stage, new cables get new IDs, deleted rows retire
theirs, measured lengths are kept or refused, impossible placements refused, spreadsheet CSV read."""

import csv
import json

import pytest

from support import ibtool


@pytest.fixture(scope="module")
def cellia(tmp_path_factory):
    d = tmp_path_factory.mktemp("cellia")
    ibtool("topo", "kns", "--k", "6", "--n", "2", "--radix", "8", "--out", d / "plan", check=0)
    ibtool("cabling", d / "plan", "--preset", "cellia", "--out", d / "plan" / "cabling", check=0)
    return d


def rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def save(cab, path, delimiter=",", bom=False, crlf=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(cab[0]), delimiter=delimiter,
                           lineterminator="\r\n" if crlf else "\n")
        w.writeheader()
        w.writerows(cab)
    return path


def edited(cellia, tmp_path, change):
    """The package's cable list changed by `change(rows)`, beside its cabling.json."""
    pkg = cellia / "plan" / "cabling"
    cab = rows(pkg / "cables.csv")
    cab = change(cab) or cab
    out = save(cab, tmp_path / "edit" / "cables.csv")
    (tmp_path / "edit" / "cabling.json").write_text((pkg / "cabling.json").read_text())
    return out


def by_id(path):
    return {r["cable_id"]: r for r in rows(path)}


def end_at(r, dev):
    return "a" if r["a_device"] == dev else "b"


def test_a_port_swap_keeps_every_id_and_the_three_stages(cellia, tmp_path):
    """Two cables of S[0,0] swap their switch ports in the sheet; re-planned, all 108 cables keep
    their IDs (the two with their new ports) and their stages, still three."""
    before = by_id(cellia / "plan" / "cabling" / "cables.csv")
    on_s00 = sorted(c for c, r in before.items() if "S[0,0]" in (r["a_device"], r["b_device"]))[:2]

    def swap(cab):
        x, y = (next(r for r in cab if r["cable_id"] == c) for c in on_s00)
        tx, ty = end_at(x, "S[0,0]"), end_at(y, "S[0,0]")
        x[f"{tx}_port"], y[f"{ty}_port"] = y[f"{ty}_port"], x[f"{tx}_port"]
    csv_file = edited(cellia, tmp_path, swap)
    ibtool("cabling", "import", csv_file, "--out", tmp_path / "plan2", check=0)
    r = ibtool("cabling", tmp_path / "plan2", "--out", tmp_path / "pkg2", "--json", check=0)
    s = json.loads(r.stdout)
    assert len(s["stages"]) == 3 and s["new_ids"] == [] and s["retired"] == []
    after = by_id(tmp_path / "pkg2" / "cables.csv")
    assert set(after) == set(before) and len(after) == 108
    for cid, r in before.items():
        assert after[cid]["stage"] == r["stage"], cid
        ends = lambda x: {(x["a_device"], x["a_port"]), (x["b_device"], x["b_port"])}  # noqa: E731
        if cid in on_s00:
            other = on_s00[1 - on_s00.index(cid)]
            s_port = before[other][f"{end_at(before[other], 'S[0,0]')}_port"]
            assert ("S[0,0]", s_port) in ends(after[cid])  # the cable went where the sheet put it
        else:
            assert ends(after[cid]) == ends(r) and after[cid]["a_label"] == r["a_label"]


def test_new_cables_get_new_ids_and_removed_ones_are_retired(cellia, tmp_path):
    before = by_id(cellia / "plan" / "cabling" / "cables.csv")
    gone = "C0050"

    def change(cab):
        cab = [r for r in cab if r["cable_id"] != gone]
        new = dict(next(r for r in cab if r["a_device"] == "R[0,0]" or r["b_device"] == "R[0,0]"))
        for t, dev in (("a", "R[0,0]"), ("b", "R[0,1]")):  # a new cable between two free router ports
            src = next(r for r in cab if dev in (r["a_device"], r["b_device"]))
            e = end_at(src, dev)
            for k in ("site", "room", "rack", "cabinet", "u", "side", "device", "type", "role", "ports", "guid"):
                new[f"{t}_{k}"] = src[f"{e}_{k}"]
            new[f"{t}_port"] = "4"
        new.update(cable_id="", stage="", stage_name="", length_m="", purchasable_m="", medium="",
                   a_label="", b_label="")
        return cab + [new]
    csv_file = edited(cellia, tmp_path, change)
    r = ibtool("cabling", "import", csv_file, "--out", tmp_path / "plan2", check=0)
    g = before[gone]
    assert (f"removed planned cable {gone} ({g['a_device']} port {g['a_port']} - {g['b_device']} port "
            f"{g['b_port']}): its row was deleted; the ID is retired") in r.stdout
    assert "1 new cable without an ID" in r.stdout
    s = json.loads(ibtool("cabling", tmp_path / "plan2", "--out", tmp_path / "pkg2", "--json", check=0).stdout)
    assert s["new_ids"] == ["C0109"]  # not C0050: a retired ID is never given again
    after = by_id(tmp_path / "pkg2" / "cables.csv")
    assert gone not in after and set(after) - set(before) == {"C0109"}
    assert {(after["C0109"]["a_device"], after["C0109"]["b_device"])} == {("R[0,0]", "R[0,1]")}
    assert all(after[c]["stage"] == before[c]["stage"] for c in after if c != "C0109")
    record = json.loads((tmp_path / "plan2" / "cable-ids.json").read_text())
    assert [x[0] for x in record["retired"]] == [gone]
    # the retired ID cannot come back through the sheet
    cab = rows(tmp_path / "pkg2" / "cables.csv")
    cab[0]["cable_id"] = gone
    again = save(cab, tmp_path / "edit2" / "cables.csv")
    (tmp_path / "edit2" / "cabling.json").write_text((tmp_path / "pkg2" / "cabling.json").read_text())
    r = ibtool("cabling", "import", again, "--out", tmp_path / "plan3")
    assert r.returncode == 2 and f"{again}:2: cable ID {gone} was retired" in r.stderr


def test_measured_lengths_are_kept_or_refused(cellia, tmp_path):
    before = by_id(cellia / "plan" / "cabling" / "cables.csv")
    node = next(c for c, r in before.items() if r["b_rack"] == "C2")  # switch rack to the far node rack

    def measured(cab):
        for r in cab:
            if r["cable_id"] == node:
                r["length_m"] = "9.4"  # measured on site: longer than the model
    csv_file = edited(cellia, tmp_path, measured)
    r = ibtool("cabling", "import", csv_file, "--out", tmp_path / "plan2", check=0)
    assert f"kept 1 measured length (the model's in brackets): {node} 9.4 m ({float(before[node]['length_m']):.2f} m)" \
        in r.stdout
    ibtool("cabling", tmp_path / "plan2", "--out", tmp_path / "pkg2", check=0)
    after = by_id(tmp_path / "pkg2" / "cables.csv")
    assert (after[node]["length_m"], after[node]["purchasable_m"], after[node]["medium"]) == ("9.4", "10", "fiber")
    assert all(after[c]["length_m"] == before[c]["length_m"] for c in before if c != node)

    def too_short(cab):
        for r in cab:
            if r["cable_id"] == node:
                r["length_m"] = "0.5"
            if r["cable_id"] == "C0001":
                r["medium"] = "fiber" if r["medium"] != "fiber" else "copper"
    csv_file = edited(cellia, tmp_path / "x", too_short)
    r = ibtool("cabling", "import", csv_file, "--out", tmp_path / "plan3")
    line = 2 + [x["cable_id"] for x in rows(csv_file)].index(node)
    assert r.returncode == 2 and f"{csv_file}:{line}: length_m: {node} is 0.5 m, shorter than the " in r.stderr
    assert "m straight line between" in r.stderr and not (tmp_path / "plan3").exists()

    def medium_only(cab):
        cab[0]["medium"] = "fiber" if cab[0]["medium"] != "fiber" else "copper"
    r = ibtool("cabling", "import", edited(cellia, tmp_path / "y", medium_only), "--out", tmp_path / "plan4", check=0)
    assert "edits in C0001 are recomputed" in r.stdout


def _move(dev, rack=None, cabinet=None, u=None, side=None):
    def change(cab):
        for r in cab:
            for t in "ab":
                if r[f"{t}_device"] == dev:
                    for k, v in (("rack", rack), ("cabinet", cabinet), ("u", u), ("side", side)):
                        if v is not None:
                            r[f"{t}_{k}"] = v
    return change


def _first_line(csv_file, dev):
    return 2 + next(i for i, r in enumerate(rows(csv_file)) if dev in (r["a_device"], r["b_device"]))


@pytest.mark.parametrize("change, dev, message", [
    (_move("R[0,0]", u="43"), "R[0,0]", "u: R[0,0] at C0 U43 is beyond the rack's 42 U"),
    (_move("H[0,1]", u="1"), "H[0,1]", "u: H[0,1] at C1 U1 front takes U1 front, where H[0,0] is"),
    (_move("H[0,1]", u="1", side="back"), "H[0,1]", "u: H[0,1] at C1 U1 back takes U1 front, where H[0,0] is"),
    (_move("S[1,5]", u="42", side="front"), "S[1,5]", "u: S[1,5] at C0 U42 front takes U42 front, where R[0,0] is"),
])
def test_impossible_placements_are_refused(cellia, tmp_path, change, dev, message):
    csv_file = edited(cellia, tmp_path, change)
    r = ibtool("cabling", "import", csv_file, "--out", tmp_path / "plan")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{csv_file}:" in r.stderr and message in r.stderr, r.stderr
    assert not (tmp_path / "plan").exists()


def test_switches_share_a_u_front_and_back(cellia):
    """CELLIA itself: R[0,0] on the front of U42, a half-depth switch on its back."""
    cab = rows(cellia / "plan" / "cabling" / "cables.csv")
    at42 = {(r[f"{t}_device"], r[f"{t}_side"]) for r in cab for t in "ab" if (r[f"{t}_rack"], r[f"{t}_u"]) == ("C0", "42")}
    assert {s for _, s in at42} == {"front", "back"} and len(at42) == 2


def test_spreadsheet_csv_is_read(cellia, tmp_path):
    """What a spreadsheet saves (a byte-order mark, `;` separators, CRLF) gives the same plan."""
    pkg = cellia / "plan" / "cabling"
    cab = rows(pkg / "cables.csv")
    csv_file = save(cab, tmp_path / "edit" / "cables.csv", delimiter=";", bom=True, crlf=True)
    (tmp_path / "edit" / "cabling.json").write_text((pkg / "cabling.json").read_text())
    assert csv_file.read_bytes().startswith(b"\xef\xbb\xbfcable_id;stage;")
    ibtool("cabling", "import", csv_file, "--out", tmp_path / "plan", check=0)
    assert (tmp_path / "plan" / "topology.net").read_bytes() == (cellia / "plan" / "topology.net").read_bytes()
    again = json.loads(ibtool("cabling", tmp_path / "plan", "--out", tmp_path / "pkg", "--json", check=0).stdout)
    assert again["new_ids"] == [] and rows(tmp_path / "pkg" / "cables.csv") == cab
