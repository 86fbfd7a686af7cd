"""hdor tables from the Python reference, loaded into a real OpenSM by its `file` engine under ibsim."""

import json

import pytest

from support import ibtool
from hdor_helpers import walk
from ibtool.formats import ibnetdiscover, lft
from ibtool.routing import hdor

pytestmark = pytest.mark.ibsim


@pytest.mark.parametrize("args,pairs", [
    (("--k", "4", "--n", "2"), 0),
    (("--k", "4", "--n", "3", "--hcas-per-router", "2", "--multiplicity", "2"), 192),
    (("--k", "4", "--n", "2", "--s", "2", "--radix", "8"), 0),
], ids=["k4n2", "k4n3h2m2", "k4n2s2"])
def test_file_engine_programs_the_reference_tables(tmp_path, args, pairs):
    plan = tmp_path / "plan"
    ibtool("topo", "kns", *args, "--out", plan, check=0)
    net = plan / "topology.net"
    # 1. discover the fabric (any engine; we only need LIDs and links)
    run1 = tmp_path / "run1"
    ibtool("sim", "run", net, "--engine", "minhop", "--out", run1, check=0)
    # 2. the reference tables, as an LFT file
    lfts = (tmp_path / "hdor.lft").resolve()
    r = ibtool("route", "hdor", "--fabric", run1 / "ibnetdiscover.out", "--out", lfts, "--dump",
               tmp_path / "opensm-hdor.dump", "--json", check=0)
    s = json.loads(r.stdout)
    assert s["spread"]["pairs"] == pairs
    # 3. OpenSM's file engine loads them
    run2 = tmp_path / "run2"
    r = ibtool("sim", "run", net, "--engine", "file", "--conf", f"lfts_file={lfts}", "--out", run2, check=0)
    assert "tables configured by file" in r.stdout
    summary = json.loads((run2 / "summary.json").read_text())
    assert summary["engine"] == "file" and summary["ok"] and not summary["fallback"]
    # 4. what the switches hold equals what we computed, entry by entry (for the LIDs of run 2)
    f2 = ibnetdiscover.read(run2 / "ibnetdiscover.out")
    want = hdor.compute(f2).tables
    assert hdor.compare_tables(lft.read(run2 / "osm" / "opensm-lfts.dump"), want) == []
    got = lft.read(run2 / "dump_fts.out")
    top = want.max_lid
    if top % 64 == 0:
        # dump_fts (infiniband-diags, under ibsim) never prints the top LID when it opens a new
        # 64-entry block (seen with minhop too): `sim run` reads it with smpdump and merges it
        raw = lft.read(run2 / "dump_fts.raw.out")
        assert all(row[top] == 255 for row in raw.lft.values() if len(row) > top)
        assert json.loads((run2 / "summary.json").read_text())["dump_fts_top_lid"]["lid"] == top
    assert hdor.compare_tables(got, want) == []
    assert hdor.compare_tables(lft.read(lfts), hdor.compute(ibnetdiscover.read(run1 / "ibnetdiscover.out")).tables) == []
    owners = f2.lid_owners()
    hca_lids = [L for L, (x, _) in owners.items() if f2.types[x] == 1]
    for L in hca_lids[:8]:
        src = f2.peer(*owners[L])[0]
        for M in hca_lids:
            walk(f2, got, src, M, owners)
