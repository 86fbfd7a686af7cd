"""Real-world dumps parse; malformed, truncated and mismatched inputs give one line naming file
and line, exit 2, no traceback."""

import json
import shutil

import numpy as np
import pytest

from support import FIXTURES, ibtool
from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH
from ibtool.formats import hdor_dump, ibnetdiscover, lft, sl2vl
from ibtool.verify import routes
from ibtool.verify.topology import compare

REAL = FIXTURES / "real"
KNS = REAL / "ibsim-kns-k3-n2-hdor"
QOS = REAL / "ibsim-kns-k3-n2-minhop-qos"


def test_ndr_fixture_parses_with_real_world_details():
    f = ibnetdiscover.read(REAL / "ndr-2sw.ibnetdiscover")
    assert f.count(kind=SWITCH) == 2 and f.count(kind=CA) == 4 and f.num_links == 8
    a1 = f.index("MF0;ib-sw-a1:MQM9700/U1")
    assert f.nports[a1] == 65 and f.guids[a1] == 0xFC6A1C0300A1B2C0 and f.port_lids[(a1, 0)] == (1, 0)
    n1 = f.index("node01 HCA-1")
    assert f.nports[n1] == 2 and f.port_guid(n1, 2) == 0xB83FD20300112232
    assert f.port_lids[(n1, 1)] == (5, 0) and f.port_lids[(n1, 2)] == (6, 0)
    assert sorted(set(f.link_rate)) == ["2xNDR", "4xEDR", "4xHDR", "4xNDR"]
    a = lft.read(REAL / "ndr-2sw.dump_fts")
    b = lft.read(REAL / "ndr-2sw.opensm-lfts.dump")
    assert a.lft.keys() == b.lft.keys() == {0xFC6A1C0300A1B2C0, 0xFC6A1C0300A1B2D0}
    assert all(np.array_equal(a.lft[g], b.lft[g]) for g in a.lft)
    assert a.names[0xFC6A1C0300A1B2C0] == "MF0;ib-sw-a1:MQM9700/U1" and int(a.lft[0xFC6A1C0300A1B2C0][8]) == 64
    r = routes.verify(f, a)
    assert r["ok"] and r["delivered"] == r["pairs"] == 7 * 8  # 2 switches + 6 CA ports, 8 LIDs
    rep = compare(f, f).as_dict()
    assert rep["correct_cables"] == 8 and rep["miswired"] == []
    # the plan (this very dump) lists the 4xHDR and 4xEDR host links at those rates: not degraded
    assert rep["degraded_links"] == [] and rep["verdict"] == "PASS"


def test_emulated_fixtures_parse():
    s = sl2vl.read(QOS / "opensm-sl2vl.dump")
    assert len(s) == 24 and s.vl(0x0002C90000000010, 1, 2, 3) == 3 and s.kind[0x0002C90000000101] == "Channel Adapter"
    d = hdor_dump.read(KNS / "opensm-hdor.dump")
    assert d.header["k"] == 3 and d.header["n"] == 2 and d.coords[0x0002C90000000110] == (2, 2)
    assert d.dim[0x0002C90000000170] == 1 and d.role[0x0002C90000000120] == "hca"


def _one_line_error(p, path_part: str, line: int | None):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    err = [x for x in p.stderr.splitlines() if x.startswith("ibtool: error:")]
    assert len(err) == 1 and "Traceback" not in p.stderr, p.stderr
    where = f"{path_part}:{line}:" if line is not None else f"{path_part}:"
    assert where in err[0], (where, err[0])
    return err[0]


@pytest.mark.parametrize("name,cut,line", [
    ("trunc-midline", 3000, None),  # cut inside an entry line
    ("trunc-lines", "40", 40),  # cut after a whole line, before the table's 'valid lids dumped'
])
def test_truncated_dump_fts(tmp_path, name, cut, line):
    src = (KNS / "dump_fts.out").read_bytes()
    if isinstance(cut, int):
        data = src[:cut]
    else:
        data = b"".join(src.splitlines(keepends=True)[:int(cut)])
    p = tmp_path / name
    p.write_bytes(data)
    r = ibtool("verify", "routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", p)
    msg = _one_line_error(r, name, line)
    assert "truncated" in msg or "malformed" in msg


def test_lft_dump_of_another_fabric(tmp_path):
    r = ibtool("verify", "routes", "--fabric", REAL / "ndr-2sw.ibnetdiscover", "--lfts", KNS / "dump_fts.out")
    msg = _one_line_error(r, "dump_fts.out", 1)
    assert "another fabric" in msg


def test_lft_dump_of_another_run(tmp_path):
    """Same GUIDs, other LIDs: the switches do not route their own LIDs to port 0."""
    text = (KNS / "ibnetdiscover.out").read_text()
    f = ibnetdiscover.read(KNS / "ibnetdiscover.out")
    # shift every LID by 100, as another OpenSM run might have numbered them
    import re
    moved = re.sub(r"\blid (\d+)", lambda m: f"lid {int(m.group(1)) + 100}" if int(m.group(1)) else m.group(0), text)
    p = tmp_path / "other-run.ibnetdiscover"
    p.write_text(moved)
    assert f.num_nodes == ibnetdiscover.read(p).num_nodes
    r = ibtool("verify", "routes", "--fabric", p, "--lfts", KNS / "dump_fts.out")
    msg = _one_line_error(r, "dump_fts.out", None)
    assert "different runs" in msg


@pytest.mark.parametrize("fname,text,line", [
    ("bad.lft", "Unicast lids [0x0-0x2] of switch Lid 1 guid 0x0002c90000000010 ('R'):\n0x0001 000\n0x0002 9999\n", 3),
    ("bad2.lft", "hello world\n", 1),
    ("empty.lft", "", None),
])
def test_malformed_lft_via_cli(tmp_path, fname, text, line):
    p = tmp_path / fname
    p.write_text(text)
    r = ibtool("verify", "routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", p)
    _one_line_error(r, fname, line)


@pytest.mark.parametrize("fname,text,line,opt", [
    ("bad.sl2vl", 'Switch 0x0002c90000000010, base LID 1, "R[0,0]"\n0   1   : 0  1  2\n', 2, "--sl2vl"),
    ("other.sl2vl",
     'Switch 0x0000000000abc000, base LID 1, "X"\n0   1   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7\n',
     1, "--sl2vl"),
])
def test_malformed_or_foreign_sl2vl(tmp_path, fname, text, line, opt):
    p = tmp_path / fname
    p.write_text(text)
    r = ibtool("verify", "routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", KNS / "dump_fts.out", opt, p)
    _one_line_error(r, fname, line)


def test_malformed_hdor_dump_and_fabric(tmp_path):
    d = tmp_path / "opensm-hdor.dump"
    text = (KNS / "opensm-hdor.dump").read_text()
    d.write_text(text.replace("router 0x0002c90000000090 [1,1]", "router 0x0002c90000000090 [1,x]"))
    r = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--dump", d)
    _one_line_error(r, "opensm-hdor.dump", 6)
    bad = tmp_path / "bad.ibnetdiscover"
    lines = (KNS / "ibnetdiscover.out").read_text().splitlines()
    lines[20] = "[2]\tgarbage here"
    bad.write_text("\n".join(lines) + "\n")
    r = ibtool("verify", "topology", "--plan", REAL / "plan-kns-k3-n2.net", "--discovered", bad)
    _one_line_error(r, "bad.ibnetdiscover", 21)


def test_plan_without_lids_as_fabric():
    r = ibtool("verify", "routes", "--fabric", REAL / "plan-kns-k3-n2.net", "--lfts", KNS / "dump_fts.out")
    assert "no LIDs" in _one_line_error(r, "plan-kns-k3-n2.net", None)


def test_verify_all_on_a_directory_that_is_not_a_run(tmp_path):
    r = ibtool("verify", "all", tmp_path)
    _one_line_error(r, str(tmp_path), None)
    shutil.copy(KNS / "ibnetdiscover.out", tmp_path)
    (tmp_path / "summary.json").write_text('{"net": "x",\n oops}')
    r = ibtool("verify", "all", tmp_path)
    _one_line_error(r, "summary.json", 2)
    # valid JSON, but not a run summary; bytes that are no text
    for data in (b"[1, 2]\n", b'{"net": 5}\n', b"\x00\xff\xfe\x80 garbage"):
        (tmp_path / "summary.json").write_bytes(data)
        _one_line_error(ibtool("verify", "all", tmp_path), "summary.json", None)


def test_html_and_json_reports(tmp_path):
    html = tmp_path / "r.html"
    r = ibtool("verify", "routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", KNS / "dump_fts.out",
               "--expect", "hdor", "--json", "--html", html)
    assert r.returncode == 0, r.stdout[-2000:]
    rep = json.loads(r.stdout)
    assert rep["schema"] == "ibtool-verify/1" and rep["ok"]
    assert set(rep) >= {"schema", "ok", "inputs", "checks", "routes"}
    assert set(rep["routes"]) >= {"pairs", "delivered", "undelivered", "length_histogram", "extra_hops_histogram",
                                  "deadlock", "balance", "expect"}
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "routes: deadlock freedom" in page and "PASS" in page


def test_opensm_fdbs_is_read_like_the_other_dumps(tmp_path):
    """opensm.fdbs (what ibdmchk reads): same tables as dump_fts; UNREACHABLE entries are no route."""
    text = ("dump_ucast_routes: Switch 0x0002c90000000010\nLID    : Port : Hops : Optimal\n"
            "0x0001 : 000  : 00   : yes\n0x000A : 002  : 01   : yes\n0x000B : UNREACHABLE\n"
            "dump_ucast_routes: Switch 0x0002c90000000020\nLID    : Port : Hops : Optimal\n"
            "0x0001 : 003  : 01   : yes\n")
    p = tmp_path / "opensm.fdbs"
    p.write_text(text)
    t = lft.read(p)
    a = t.lft[0x0002C90000000010]
    assert int(a[1]) == 0 and int(a[10]) == 2 and t.max_lid == 10 and int(t.lft[0x0002C90000000020][1]) == 3
    p.write_text(text.replace("0x000A : 002", "0x000A : 0x2"))
    with pytest.raises(InputError) as e:
        lft.read(p)
    assert "opensm.fdbs:4:" in str(e.value)


def test_opensm_subnet_lst_gives_the_same_fabric_and_verdict(tmp_path):
    """From OpenSM's dumps alone (ibdmchk's inputs): the same fabric as ibnetdiscover saw."""
    from ibtool.formats import opensm_subnet_lst
    a = opensm_subnet_lst.read(KNS / "opensm-subnet.lst")
    b = ibnetdiscover.read(KNS / "ibnetdiscover.out")
    assert a.link_set() == b.link_set() and a.num_links == 27 and set(a.link_rate) == {"4xQDR"}
    assert {a.names[n]: lid for (n, p), lid in a.port_lids.items()} == \
        {b.names[n]: lid for (n, p), lid in b.port_lids.items()}
    r = ibtool("verify", "routes", "--fabric", KNS / "opensm-subnet.lst", "--lfts", KNS / "opensm-lfts.dump",
               "--expect", "hdor", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["routes"]["pairs"] == 552
    bad = tmp_path / "opensm-subnet.lst"
    bad.write_text((KNS / "opensm-subnet.lst").read_text().replace("PN:01 }", "PN:01", 1))
    _one_line_error(ibtool("verify", "routes", "--fabric", bad, "--lfts", KNS / "dump_fts.out"),
                    "opensm-subnet.lst", 1)


def test_switch_without_a_table_fails_delivery(tmp_path):
    """A switch missing from the dump (dump_fts could not read it): named, and its routes are holes."""
    blocks = (KNS / "dump_fts.out").read_text().split("Unicast lids")
    gone = [b for b in blocks if "(S[0,1]):" in b.split("\n", 1)[0]]
    assert len(gone) == 1
    p = tmp_path / "partial.dump_fts"
    p.write_text("Unicast lids".join(b for b in blocks if b is not gone[0]))
    r = ibtool("verify", "routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", p, "--json")
    assert r.returncode == 1
    rep = json.loads(r.stdout)["routes"]
    assert rep["switches_without_table"] == ["S[0,1]"]
    assert rep["undelivered"]["black hole (no LFT entry)"] > 0


@pytest.mark.parametrize("cmd", [["routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", KNS / "dump_fts.out"],
                                 ["all", KNS]])
def test_negative_permutations_is_a_usage_error(cmd):
    r = ibtool("verify", *cmd, "--permutations", "-1")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--permutations" in r.stderr, r.stderr


@pytest.mark.parametrize("where", ["a-directory", "no-such-dir/r.html"])
def test_html_report_that_cannot_be_written(tmp_path, where):
    (tmp_path / "a-directory").mkdir()
    r = ibtool("verify", "routes", "--fabric", KNS / "ibnetdiscover.out", "--lfts", KNS / "dump_fts.out",
               "--html", tmp_path / where)
    says = "a directory, not a regular file" if where == "a-directory" else "cannot write"
    assert says in _one_line_error(r, where, None)


def test_hdor_dump_of_another_fabric(tmp_path):
    """Every GUID of the dump unknown to the fabric: an input error naming the first, not 48 findings."""
    d = tmp_path / "opensm-hdor.dump"
    d.write_text((KNS / "opensm-hdor.dump").read_text().replace("0x0002c9", "0x00aaaa"))
    r = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--dump", d)
    assert "another fabric" in _one_line_error(r, "opensm-hdor.dump", 2)


@pytest.mark.parametrize("keep,line", [(20, 20), (5, 5)])
def test_hdor_dump_cut_at_a_line_boundary(tmp_path, keep, line):
    """The header's counts say so (not 'devices missing from the dump')."""
    d = tmp_path / "opensm-hdor.dump"
    d.write_text("".join((KNS / "opensm-hdor.dump").read_text().splitlines(keepends=True)[:keep]))
    r = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--dump", d)
    assert "truncated" in _one_line_error(r, "opensm-hdor.dump", line)


def test_a_lid_assigned_twice(tmp_path):
    """Two ports with one LID: an input error naming both (was a PASS, one port's routes unchecked)."""
    lines = (KNS / "ibnetdiscover.out").read_text().splitlines(keepends=True)
    assert '"S[0,0]" enhanced port 0 lid 7 lmc 0' in lines[126] and '"H[2,2]" lid 5 ' in lines[10]
    lines[126] = lines[126].replace("lid 7 lmc", "lid 5 lmc")
    p = tmp_path / "dup-lid.ibnetdiscover"
    p.write_text("".join(lines))
    r = ibtool("verify", "routes", "--fabric", p, "--lfts", KNS / "dump_fts.out")
    msg = _one_line_error(r, "dup-lid.ibnetdiscover", None)
    assert "LID 5 is assigned to both" in msg and "S[0,0]" in msg and "H[2,2] port 1" in msg
