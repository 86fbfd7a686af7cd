"""`ibtool route hdor --baseline` (the Python reference on a degraded KNS, with its SL2VL tables
and path SLs) and `ibtool verify routes --before-fabric/--before-lfts` (routes a fault did not
touch unchanged; dimension-order violations accepted only on detours the scheme moves off SL 0),
on fabrics discovered from ibsim after real faults (`sim run --faults`, minhop keeps the subnet up)."""

import json

import numpy as np
import pytest
from support import ibtool

from ibtool.formats import ibnetdiscover, lft, pathrecord, sl2vl
from ibtool.routing import hdor


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """KNS 3-ary 2-direct on ibsim: step 1 one router-switch cable down, step 2 an indirect switch down
    instead. minhop routes it (the fabric discovered at each step is what the reference needs); the
    tables before the faults are hdor's (the reference of step 0, written as step-0/hdor.lft)."""
    d = tmp_path_factory.mktemp("faults")
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", d / "plan", check=0)
    sc = d / "faults.yaml"
    sc.write_text("steps:\n  - down: ['R[1,1] 3']\n  - up: ['R[1,1] 3']\n    down: ['S[0,1]']\n")
    ibtool("sim", "run", d / "plan" / "topology.net", "--engine", "minhop", "--path-sls", "--faults", sc, "--out", d / "run",
           check=0)
    ibtool("route", "hdor", "--fabric", d / "run" / "step-0" / "ibnetdiscover.out", "--out",
           d / "run" / "step-0" / "hdor.lft", check=0)
    return d / "run"


def _route(steps, k, out, *extra, check=0):
    return ibtool("route", "hdor", "--fabric", steps / f"step-{k}" / "ibnetdiscover.out", "--baseline",
                  steps / "step-0" / "ibnetdiscover.out", "--out", out / "hdor.lft", "--sl2vl", out / "sl2vl.dump",
                  "--path-sls", out / "paths.out", *extra, check=check)


def _verify(steps, k, lfts, *extra):
    return ibtool("verify", "routes", "--fabric", steps / f"step-{k}" / "ibnetdiscover.out", "--lfts", lfts,
                  "--before-fabric", steps / "step-0" / "ibnetdiscover.out", "--before-lfts",
                  steps / "step-0" / "hdor.lft", "--expect", "hdor", "--json", *extra)


def _checks(r):
    return {c["name"]: c for c in json.loads(r.stdout)["checks"]}


@pytest.mark.ibsim
@pytest.mark.parametrize("k", [1, 2])
def test_reference_on_a_degraded_kns_passes_verify_per_vl_with_its_sls(steps, tmp_path, k):
    r = _route(steps, k, tmp_path, "--json")
    s = json.loads(r.stdout)
    assert s["vls"] >= 2 and s["sls"] >= 2 and s["extra_hops"]["detoured"] > 0 and s["faults"]
    # the files read back as what the reference computed
    f = ibnetdiscover.read(steps / f"step-{k}" / "ibnetdiscover.out")
    f0 = ibnetdiscover.read(steps / "step-0" / "ibnetdiscover.out")
    ref = hdor.compute(f, baseline=(f0, hdor.compute(f0)))
    assert dict(pathrecord.read(tmp_path / "paths.out")) == dict(ref.path_sls)
    back = sl2vl.read(tmp_path / "sl2vl.dump")
    for g, rows in ref.sl2vl.items():
        for key, vls in rows.items():
            assert back[g][key] == vls
    assert all(v == (0,) * 16 for g, rows in back.items() for key, v in rows.items()
               if key not in ref.sl2vl.get(g, {}))
    v = _verify(steps, k, tmp_path / "hdor.lft", "--sl2vl", tmp_path / "sl2vl.dump", "--path-sls",
                tmp_path / "paths.out")
    c = _checks(v)
    assert v.returncode == 0, v.stdout
    assert c["routes: hdor tables"]["ok"] and c["routes: unaffected unchanged"]["ok"]
    assert "besides" in c["routes: dimension order"]["summary"]  # detours that turn back, accepted
    assert "path SLs + SL2VL dump" in c["routes: deadlock freedom"]["summary"]
    assert "VL1" in c["routes: deadlock freedom"]["summary"]


@pytest.mark.ibsim
def test_without_the_sls_the_detours_are_violations_and_minhop_fails(steps, tmp_path):
    _route(steps, 1, tmp_path)
    # the same tables with every path on SL 0: the turns back are on VL 0, not the scheme's
    zero = tmp_path / "zero.out"
    pathrecord.write({key: 0 for key in pathrecord.read(tmp_path / "paths.out")}, zero)
    c = _checks(_verify(steps, 1, tmp_path / "hdor.lft", "--sl2vl", tmp_path / "sl2vl.dump", "--path-sls", zero))
    assert not c["routes: dimension order"]["ok"] and not c["routes: deadlock freedom"]["ok"]
    # minhop's real tables of that step (with its real PathRecords): a credit loop, not hdor's tables
    m = _verify(steps, 1, steps / "step-1" / "dump_fts.out", "--path-sls", steps / "step-1" / "saquery-paths.out")
    c = _checks(m)
    assert m.returncode == 1 and not c["routes: deadlock freedom"]["ok"] and not c["routes: hdor tables"]["ok"]


@pytest.mark.ibsim
def test_a_moved_unaffected_route_is_named(steps, tmp_path):
    _route(steps, 1, tmp_path)
    t = lft.read(tmp_path / "hdor.lft")
    f = ibnetdiscover.read(steps / "step-1" / "ibnetdiscover.out")
    f0 = ibnetdiscover.read(steps / "step-0" / "ibnetdiscover.out")
    # R[0,0]'s entry for H[2,2]'s LID: its fault-free route (R[1,1]'s cable to S[1,1] is down) is intact
    x = f.index("R[0,0]")
    lid = f.port_lids[(f.index("H[2,2]"), 1)][0]
    before = lft.read(steps / "step-0" / "hdor.lft").lft[f0.guids[f0.index("R[0,0]")]][lid]
    assert t.lft[f.guids[x]][lid] == before
    other = next(p for p, _, _ in f.neighbors(x) if p != before)
    t.lft[f.guids[x]] = np.array(t.lft[f.guids[x]])
    t.lft[f.guids[x]][lid] = other
    lft.write_file_engine(t, tmp_path / "moved.lft")
    c = _checks(_verify(steps, 1, tmp_path / "moved.lft"))
    u = c["routes: unaffected unchanged"]
    assert not u["ok"] and f"R[0,0] LID {lid} (H[2,2]): port {before} before, {other} now" in u["summary"]


@pytest.mark.ibsim
def test_route_hdor_baseline_bad_input(steps, tmp_path):
    plan = steps.parent / "plan" / "topology.net"
    cases = [
        (["--baseline", plan], 2, "--baseline: no LIDs in this file"),
        (["--baseline", steps / "step-1" / "ibnetdiscover.out"], 2, "--baseline: not a complete KNS"),
        (["--sl2vl", tmp_path / "nowhere" / "x"], 2, "--sl2vl"),
    ]
    for extra, code, msg in cases:
        r = ibtool("route", "hdor", "--fabric", steps / "step-1" / "ibnetdiscover.out", "--out", tmp_path / "h.lft",
                   *extra)
        assert r.returncode == code and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "h.lft").exists()
    # too few VLs for the failures: declined with the reason, nothing written
    r = _route(steps, 1, tmp_path, "--vls", "1", check=None)
    assert r.returncode == 1 and "the failures need 2 VLs, the ports offer 1" in r.stderr
    assert not (tmp_path / "hdor.lft").exists() and not (tmp_path / "paths.out").exists()
