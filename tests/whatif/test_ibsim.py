"""Issue 39's done-when: for a held sample of failures on KNS 4^3 and 6^3 and on a fat tree, each
what-if row equals what `sim run` + `verify all` measure under ibsim for the same failure.

The operator's way is run here as `sim run --faults` with one step per failure (step k takes
failure k down and brings failure k-1 back, so each step is the fabric with that failure alone,
as `sim run --fail` makes it; one ibsim start for the sample keeps the runtime down, as the fault
matrix does). Then `verify all` on every step, and `ibtool whatif run` on the run's step 0 with
--only the same failures. Per failure:

* the same tables: KNS, hdor offline (the Python reference whatif routes with) against the C
  engine's tables OpenSM configured in the step (dump_fts); the fat tree, the tables whatif's own
  OpenSM on ibsim configured against the step's (two OpenSM runs, the same tables);
* the same HCAs lost and the same undelivered pairs by kind (verify's delivery tally);
* the same loads: routes per link, the all-to-all and the worst permutation's max link load;
* the same dependency graph: deadlock freedom and the dependencies per VL (the SL2VL tables
  OpenSM dumped and the SA's path SLs in the step, what-if's own for the reference).
"""

import itertools
import json

import pytest
import yaml
from support import ibtool

from ibtool.formats import ibnetdiscover, lft
from ibtool.routing import hdor
from ibtool.routing.hdor_single import Loaded

pytestmark = [pytest.mark.ibsim, pytest.mark.slow]

CASES = {
    # family args, failures (each a list of what fails together, as `sim run --faults` names it)
    "kns-4^3": (["kns", "--k", 4, "--n", 3], [["R[1,1,1] 3"], ["S[1,5]"], ["R[2,3,1]"], ["R[1,2,3] 2", "S[2,9]"]]),
    "kns-6^3": (["kns", "--k", 6, "--n", 3], [["R[2,3,4] 4"], ["S[0,17]"]]),
    "fat-tree": (["fattree", "--k", 2, "--n", 3], [["S[0,1,0] 3"], ["S[1,0,1]"], ["S[0,1,1]"]]),
}


def _entries(path):
    out, block = set(), ""
    for ln in path.read_text().splitlines():
        if ln.startswith("Unicast lids"):
            block = ln.split(" guid ")[1].split()[0]
        elif ln.startswith("0x"):
            out.add(block + "@" + ln.split(":")[0].strip() + "=" + ln.split()[1])
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_each_row_is_what_sim_run_and_verify_all_measure(case, tmp_path):
    args, fails = CASES[case]
    plan = tmp_path / "plan"
    ibtool("topo", *args, "--out", plan, check=0)
    steps = [{"down": fails[0]}] + [{"down": b, "up": a} for a, b in itertools.pairwise(fails)]
    sc = tmp_path / "faults.yaml"
    sc.write_text(yaml.safe_dump({"sweep_interval": 2, "settle": 120, "steps": steps}))
    run = tmp_path / "run"
    ibtool("sim", "run", plan, "--faults", sc, "--out", run, timeout=1800, check=0)
    rep = json.loads(ibtool("verify", "all", run, "--json", timeout=1800).stdout)
    wi = tmp_path / "wi"
    r = ibtool("whatif", "run", run / "step-0", "--plan", plan, "--out", wi, "--json",
               *[x for f in fails for x in ("--only", "+".join(f))], timeout=1800, check=0)
    res = json.loads(r.stdout)
    rows = {tuple(sorted(x["down"])): x for x in res["rows"]}
    base = ibnetdiscover.read(run / "step-0" / "ibnetdiscover.out")
    kns = Loaded(base, hdor.compute(base)) if args[0] == "kns" else None
    for k, fl in enumerate(fails, 1):
        step = run / f"step-{k}"
        row = rows[tuple(sorted(fl))]
        v = rep["steps"][f"step-{k}"]["routes"]
        summary = json.loads((step / "summary.json").read_text())
        assert row["outcome"] == "routed" and summary["ok"], (fl, row["outcome"], summary)
        # the same tables
        if kns is not None:
            one = kns.route([base.index(x) for x in fl if " " not in x],
                            [_link(base, x) for x in fl if " " in x], base.index(res["sm"]))
            assert hdor.compare_tables(lft.read(step / "dump_fts.out"), kns.tables(one)) == [], fl
            assert row["vls"] == one.vls
        else:
            mine = [p.parent for p in wi.glob("chunks/*.ibsim/attempt-*/step-*/summary.json")
                    if sorted(json.loads(p.read_text())["down"]) == sorted(summary["down"])]
            assert len(mine) == 1 and _entries(mine[0] / "dump_fts.out") == _entries(step / "dump_fts.out"), fl
        # the same HCAs lost, the same pairs undelivered
        now = ibnetdiscover.read(step / "ibnetdiscover.out")
        lost = sorted(set(base.names) - set(now.names))
        assert sorted(row["hcas_lost"]) == sorted(x for x in lost if x.startswith("H")), fl
        assert (row["pairs"], row["delivered"], row["undelivered"], row["undelivered_switch_to_switch"]) == \
            (v["pairs"], v["delivered"], v["undelivered"], v["undelivered_switch_to_switch"]), fl
        # the same loads
        b = v["balance"]
        assert row["routes_per_link"] == b["routes_per_link"], fl
        assert row["a2a_max_load"] == b["all_to_all_max_link_load"], fl
        assert row["perm_max_load"] == b["permutations"]["max_link_load"]["max"], fl
        # the same dependency graph per VL
        d = v["deadlock"]
        assert (row["deadlock_free"], row["dependencies_per_vl"]) == (d["free"], d["dependencies_per_vl"]), fl
    assert res["before"]["a2a_max_load"] == rep["steps"]["step-0"]["routes"]["balance"]["all_to_all_max_link_load"]


def _link(f, spec):
    dev, port = spec.rsplit(" ", 1)
    x, p = f.index(dev), int(port)
    return next(li for li in range(f.num_links) if (f.link_a[li], f.link_pa[li]) == (x, p)
                or (f.link_b[li], f.link_pb[li]) == (x, p))


def test_the_same_decline(tmp_path):
    """Ports of one VL (OpenSM's max_op_vls 1): the C engine declines a cable's failure (HD31) and
    OpenSM routes it with nue, the plan's next engine; hdor offline with --vls 1 declines it with
    the same code and reason, and says what OpenSM does."""
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", plan, check=0)
    run = tmp_path / "run"
    ibtool("sim", "run", plan, "--fail", "R[1,1] 2", "--conf", "max_op_vls=1", "--out", run, timeout=600,
           check=1)  # the plan's first engine declined: a fallback, exit 1
    step = json.loads((run / "step-1" / "summary.json").read_text())
    assert step["engine"] == "nue" and step["hdor_declined"].startswith("HD31: ")
    r = ibtool("whatif", "run", run / "step-0", "--plan", plan, "--vls", 1, "--only", "R[1,1] 2", "--out",
               tmp_path / "wi", "--json", check=0)
    row = json.loads(r.stdout)["rows"][0]
    assert (row["outcome"], row["class"]) == ("declined", "declined")
    assert f"{row['decline']['code']}: {row['decline']['reason']}" == step["hdor_declined"]
    assert "HD31" in row["advice"] and "falls back" in row["advice"]
