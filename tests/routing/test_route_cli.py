"""`ibtool route hdor` on real ibnetdiscover dumps (fixtures), as a user runs it."""

import json
import re

import numpy as np

from support import FIXTURES, ibtool
from hdor_helpers import walk
from ibtool.formats import ibnetdiscover, lft
from ibtool.routing import hdor

CELLIA = FIXTURES / "ibnetdiscover" / "cellia-minhop.out"


def test_route_hdor_on_real_cellia_dump(tmp_path):
    out, dump = tmp_path / "hdor.lft", tmp_path / "opensm-hdor.dump"
    r = ibtool("route", "hdor", "--fabric", CELLIA, "--out", out, "--dump", dump, check=0)
    assert r.stdout.splitlines()[0] == (f"hdor: KNS 6-ary 2-direct 1-indirect: 36 routers, 12 switches, 36 HCAs, "
                                        f"84 LIDs; LFT file {out}, dump {dump}")
    assert "spread: no parallel router-switch links" in r.stdout
    f = ibnetdiscover.read(CELLIA)
    res = hdor.compute(f)
    # the file engine's rules: every switch, every LID with its port GUID, trailing newline
    text = out.read_text()
    assert text.endswith("\n")
    assert text.count("Unicast lids") == 48
    owners = f.lid_owners()
    entries = re.findall(r"^(0x[0-9a-f]{4}) (\d{3}) portguid (0x[0-9a-f]{16})$", text, re.M)
    assert len(entries) == 48 * len(owners) == len(text.splitlines()) - 48
    for lid, _, pg in entries[:len(owners)]:
        node, port = owners[int(lid, 16)]
        assert int(pg, 16) == f.port_guid(node, port)
    back = lft.read(out)
    assert hdor.compare_tables(back, res.tables) == []
    # names in the real dump are the node descriptions the builder wrote: coordinates match them
    for x in res.routers + res.hcas:
        assert f.names[x][1:] == "[" + ",".join(map(str, res.coords[x])) + "]"
    lines = dump.read_text().splitlines()
    assert lines[0] == "# hdor k=6 n=2 routers=36 switches=12 hcas=36 lids=84"
    assert len(lines) == 1 + 84
    # every HCA pair delivered by the written file
    hca_lids = [L for L, (x, _) in owners.items() if f.types[x] == 1]
    for L in hca_lids:
        src = f.peer(*owners[L])[0]
        for M in hca_lids:
            walk(f, back, src, M, owners)


def test_route_hdor_json_with_parallel_links(tmp_path):
    from ibtool.routing.lids import assign_lids
    from ibtool.topologies.kns import kns

    f = kns(4, 2, multiplicity=3)
    assign_lids(f)
    net = tmp_path / "fabric.out"
    ibnetdiscover.write(f, net)
    # the writer prints 'lid 0'; put the assigned LIDs in, as ibnetdiscover would
    text = net.read_text()
    r = ibtool("route", "hdor", "--fabric", net, "--out", tmp_path / "x.lft", check=2)
    err = [ln for ln in r.stderr.splitlines() if not ln.startswith("  ")]  # indented lines: progress
    assert len(err) == 1 and "no LIDs" in err[0] and "Traceback" not in r.stderr
    lines = []
    node = None
    for ln in text.splitlines():
        m = re.match(r'^(Switch|Ca)\s+\d+ "([SH]-([0-9a-f]+))"', ln)
        if m:
            node = f.by_guid(int(m.group(3), 16))
            if m.group(1) == "Switch":
                ln = ln.replace("port 0 lid 0 lmc 0", f"port 0 lid {f.port_lids[(node, 0)][0]} lmc 0")
        elif ln.startswith("[1](") and node is not None and f.types[node] == 1:
            ln = ln.replace("# lid 0 lmc 0", f"# lid {f.port_lids[(node, 1)][0]} lmc 0")
        lines.append(ln)
    net.write_text("\n".join(lines) + "\n")
    r = ibtool("route", "hdor", "--fabric", net, "--out", tmp_path / "x.lft", "--json", check=0)
    s = json.loads(r.stdout)
    assert (s["k"], s["n"], s["s"], s["routers"], s["switches"], s["hcas"], s["lids"]) == (4, 2, 1, 16, 8, 16, 40)
    assert s["spread"]["pairs"] == 32 and s["spread"]["ports"] == 96 and s["spread"]["max_imbalance"] <= 1
    res = hdor.compute(ibnetdiscover.read(net))
    assert hdor.compare_tables(lft.read(tmp_path / "x.lft"), res.tables) == []
    per = res.spread[(f.index("R[0,0]"), 1)]
    assert sorted(per) == [5, 6, 7] and max(per.values()) - min(per.values()) <= 1
    r = ibtool("route", "hdor", "--fabric", net, "--out", tmp_path / "y.lft", check=0)
    assert re.search(r"^spread: 32 router-dimension pairs with parallel links, \d+\.\.\d+ LIDs per port, "
                     r"max imbalance [01]$", r.stdout, re.M)


def test_route_hdor_declines_non_kns(tmp_path):
    r = ibtool("route", "hdor", "--fabric", FIXTURES / "ibnetdiscover" / "edr-2switch.out",
               "--out", tmp_path / "x.lft", check=1)
    err = [ln for ln in r.stderr.splitlines() if not ln.startswith("  ")]  # indented lines: progress
    assert len(err) == 1 and err[0].startswith("ibtool: error: hdor: not a KNS fabric: ")
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.lft").exists()


def test_route_hdor_unreadable_input(tmp_path):
    r = ibtool("route", "hdor", "--fabric", tmp_path / "missing.out", "--out", tmp_path / "x.lft", check=2)
    assert "cannot read" in r.stderr and "Traceback" not in r.stderr


def test_cellia_fixture_tables_are_dimension_ordered():
    """Spot check against paper 000 3.2.4 on the real dump: R[0,0] reaches H[5,5] through its
    dimension-0 switch S[0,0] first (coordinates differ in r_0), H[5,0] through S[1,0]."""
    f = ibnetdiscover.read(CELLIA)
    res = hdor.compute(f)
    owners = f.lid_owners()
    lid_of = {f.names[x]: L for L, (x, _) in owners.items()}
    r00 = f.index("R[0,0]")
    row = res.tables.lft[f.guids[r00]]
    via = {f.names[f.peer(r00, p)[0]] for p in (int(row[lid_of["H[5,5]"]]),)}
    assert via == {"S[0,0]"}
    assert f.names[f.peer(r00, int(row[lid_of["H[5,0]"]]))[0]] == "S[1,0]"
    assert f.names[f.peer(r00, int(row[lid_of["H[0,5]"]]))[0]] == "S[0,0]"
    assert np.count_nonzero(row == 0) == 1


def test_route_hdor_unwritable_outputs(tmp_path):
    """--out/--dump that cannot be written (a directory, under a missing directory or a file) are
    one-line input errors before any work, and nothing is left behind; a write that fails late
    (/proc refuses new files) too."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    ok = tmp_path / "ok.lft"
    for args in (["--out", tmp_path / "adir"], ["--out", tmp_path / "missing" / "x.lft"],
                 ["--out", tmp_path / "afile" / "x.lft"], ["--out", ok, "--dump", tmp_path / "adir"],
                 ["--out", ok, "--dump", tmp_path / "afile" / "d"], ["--out", "/proc/ibtool-x.lft"]):
        r = ibtool("route", "hdor", "--fabric", CELLIA, *args, check=2)
        err = [ln for ln in r.stderr.splitlines() if not ln.startswith("  ")]  # indented lines: progress
        assert len(err) == 1 and err[0].startswith(f"ibtool: error: {args[-2]} "), r.stderr
        assert "Traceback" not in r.stderr
        assert not ok.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]
    assert list((tmp_path / "adir").iterdir()) == []


def test_route_hdor_json_on_a_fabric_that_is_not_kns_prints_the_error_object(tmp_path):
    """Issue 8 item 8: a --json command that fails still prints JSON on stdout (the hand-written
    two-switch NDR dump of fixtures/real: not a KNS)."""
    out = tmp_path / "hdor.lft"
    r = ibtool("route", "hdor", "--fabric", FIXTURES / "real" / "ndr-2sw.ibnetdiscover", "--out", out, "--json")
    assert r.returncode == 1
    err = json.loads(r.stdout)
    assert err["ok"] is False and err["exit_code"] == 1 and "not a KNS fabric" in err["error"]
    assert r.stderr.startswith("ibtool: error: ") and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_every_json_command_prints_the_error_object_on_bad_input(tmp_path):
    bad = tmp_path / "bad.out"
    bad.write_text("this is not a dump\n")
    for args in (("verify", "routes", "--fabric", bad, "--lfts", bad, "--json"),
                 ("verify", "topology", "--plan", bad, "--discovered", bad, "--json"),
                 ("route", "hdor", "--fabric", bad, "--out", tmp_path / "x.lft", "--json"),
                 ("sim", "run", bad, "--out", tmp_path / "run", "--timeout", "0", "--json")):
        r = ibtool(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        err = json.loads(r.stdout)
        assert err == {"ok": False, "error": r.stderr.strip().removeprefix("ibtool: error: "), "exit_code": 2}
