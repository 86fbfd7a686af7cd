"""Issue 36: every verdict true. The engine named is the one whose tables run (item 1), no PASS
over a check that could not run (item 2: deadlock freedom of an engine that uses VLs without the
path SLs; item 10: a plan, a summary or a dump that is not there), a fallback is a failure unless
accepted (item 3), and a fault scenario that would set nothing or cut the SM off is refused before
anything starts (item 10). On the real ibsim and OpenSM where it is about what OpenSM did."""

import json
import shutil

import pytest

from support import ibtool
from ibtool.errors import InputError
from ibtool.formats import ibnetdiscover
from ibtool.sim import faults, opensm


@pytest.fixture(scope="module")
def kns(tmp_path_factory):
    d = tmp_path_factory.mktemp("kns") / "plan"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", d, check=0)
    return d


def _summary(run):
    return json.loads((run / "summary.json").read_text())


def _checks(rep):
    return {c["name"]: c for c in rep["checks"]}


# ------------------------------------------------------------------------------------- item 1

def test_a_success_line_of_an_engine_that_deferred_to_the_default_is_minhop():
    """OpenSM 3.3.23 prints "file tables configured" after file's callback handed the work to its
    default algorithm (osm_ucast_file.c: "LFTs file name is not given; using default routing
    algorithm", a callback returning 1): minhop's tables, file named. Lines of a real log."""
    log = ("Nov 29 02:15:23 511083 [12AD46C0] 0x04 -> ucast_mgr_route: building routing with 'file' routing "
           "algorithm...\n"
           "Nov 29 02:15:23 511095 [12AD46C0] 0x04 -> do_ucast_file_load: LFTs file name is not given; using "
           "default routing algorithm\n"
           "Nov 29 02:15:23 511123 [12AD46C0] 0x02 -> osm_ucast_mgr_process: file tables configured on all switches\n"
           "Nov 29 02:15:23 511200 [12AD46C0] 0x02 -> SUBNET UP\n")
    o = opensm.routing_outcome(log, ["file"])
    assert (o.engine, o.default_for, o.fallback, o.ok) == ("minhop", "file", True, False)
    # the next sweep loaded a file: file's own tables
    again = log + log.replace("do_ucast_file_load: LFTs file name is not given; using default routing algorithm",
                              "do_ucast_file_load: loaded")
    assert (opensm.routing_outcome(again, ["file"]).engine, opensm.routing_outcome(again, ["file"]).ok) == \
        ("file", True)
    # a multicast dump as lfts_file: OpenSM says it uses its default and loads nothing (empty tables)
    mcast = log.replace("0x04 -> do_ucast_file_load: LFTs file name is not given; using default routing algorithm",
                        "0x81 -> do_ucast_file_load: ERR 6303: Multicast dump file detected; skipping parsing. "
                        "Using default routing algorithm")
    o = opensm.routing_outcome(mcast, ["file"])
    assert (o.engine, o.default_for, o.ok) == ("file", None, False) and "ERR 6303" in o.no_routes


@pytest.mark.ibsim
def test_file_engine_without_lfts_file_is_said_as_what_opensm_did(kns, tmp_path):
    """`sim run --engine file` without lfts_file: OpenSM logs "file tables configured" over its
    default routing. The run names minhop, fails (the first engine did not route) and `verify
    all` says so; with an lfts_file the file engine's own tables pass."""
    run = tmp_path / "run"
    r = ibtool("sim", "run", kns / "topology.net", "--engine", "file", "--out", run)
    assert "file tables configured on all switches" in (run / "opensm.log").read_text()
    assert "LFTs file name is not given; using default routing algorithm" in (run / "opensm.log").read_text()
    assert r.returncode == 1, r.stdout + r.stderr
    assert "tables configured by minhop (FALLBACK: file deferred to OpenSM's default)" in r.stdout
    s = _summary(run)
    assert (s["engine"], s["default_for"], s["fallback"], s["ok"]) == ("minhop", "file", True, False)
    v = ibtool("verify", "all", run, "--json", "--permutations", "0")
    run_check = _checks(json.loads(v.stdout))["run"]
    assert v.returncode == 1 and not run_check["ok"], v.stdout
    assert run_check["summary"].startswith("subnet up, tables configured by minhop; FALLBACK: the first engine "
                                           "file did not route (it deferred to OpenSM's default algorithm")
    # a multicast dump as lfts_file: OpenSM logs "ERR 6303 ... Using default routing algorithm" and
    # "file tables configured", and leaves every table empty: no routes, a failure
    mcast = tmp_path / "mcast.dump"
    mcast.write_text("Multicast mlids [0xc000-0xc000] of switch Lid 1 guid 0x0002c90000000010 (R[0,0]):\n"
                     "0xc000 :001\n")
    empty = tmp_path / "empty"
    r = ibtool("sim", "run", kns / "topology.net", "--engine", "file", "--conf", f"lfts_file={mcast}",
               "--no-path-sls", "--out", empty)
    s = _summary(empty)
    assert "ERR 6303: Multicast dump file detected" in (empty / "opensm.log").read_text()
    assert "0 valid lids dumped" in (empty / "dump_fts.out").read_text()
    assert r.returncode == 1 and "; NO ROUTES: its lfts_file is a multicast dump (ERR 6303)" in r.stdout, r.stdout
    assert (s["engine"], s["ok"]) == ("file", False) and s["no_routes"].startswith("its lfts_file is a multicast")
    # the same engine with a file of tables (OpenSM's own dump of that run): file's tables, a pass
    lfts = tmp_path / "lfts.dump"
    shutil.copy(run / "osm" / "opensm-lfts.dump", lfts)
    good = tmp_path / "good"
    r = ibtool("sim", "run", kns / "topology.net", "--engine", "file", "--conf", f"lfts_file={lfts}", "--out", good)
    s = _summary(good)
    assert r.returncode == 0 and (s["engine"], s["default_for"], s["fallback"]) == ("file", None, False), r.stdout


# ------------------------------------------------------------------------------------- item 2

@pytest.mark.ibsim
def test_no_pass_over_a_credit_loop_not_checked(kns, tmp_path):
    """dfsssp spreads routes over VLs by path SL. Without the path SLs its routes on one VL form a
    cycle: that is NOT CHECKED (exit 5, JUnit skipped with the reason), not an info line under a
    PASS. `sim run` collects the SLs by default for such an engine, and then it is checked: PASS."""
    bare = tmp_path / "bare"
    ibtool("sim", "run", kns / "topology.net", "--engine", "dfsssp", "--conf", "qos=TRUE", "--no-path-sls",
           "--out", bare, check=0)
    junit = tmp_path / "v.xml"
    v = ibtool("verify", "all", bare, "--json", "--junit", junit, "--permutations", "0")
    assert v.returncode == 5, v.stdout[-3000:]  # before: 0, PASS over the cycle
    rep = json.loads(v.stdout)
    dl = _checks(rep)["routes: deadlock freedom"]
    assert (rep["verdict"], rep["ok"]) == ("NOT CHECKED", False)
    assert dl["not_checked"] and not dl["ok"] and "--path-sls" in dl["summary"]
    assert rep["routes"]["deadlock"]["cycle"] and rep["routes"]["deadlock"]["free"] is None
    xml = junit.read_text()
    assert '<skipped message="dfsssp gives each path its own SL' in xml and 'type="NOT CHECKED"' in xml
    assert 'skipped="1"' in xml
    text = ibtool("verify", "all", bare, "--permutations", "0").stdout
    assert text.startswith("verify: NOT CHECKED\n") and "  routes: deadlock freedom: NOT CHECKED  " in text
    # by default `sim run` asks the SA for every path's SL: the loop is checked per VL, and free
    full = tmp_path / "full"
    ibtool("sim", "run", kns / "topology.net", "--engine", "dfsssp", "--conf", "qos=TRUE", "--out", full, check=0)
    assert (full / "saquery-paths.out").is_file() and _summary(full)["path_sls"]["records"] > 0
    v = ibtool("verify", "all", full, "--json", "--permutations", "0")
    rep = json.loads(v.stdout)
    assert (v.returncode, rep["verdict"]) == (0, "PASS"), [c for c in rep["checks"] if not c["ok"]]
    assert "path SLs" in _checks(rep)["routes: deadlock freedom"]["summary"]


# ------------------------------------------------------------------------------------- item 3

@pytest.mark.ibsim
def test_fallback_is_a_failure_unless_accepted(tmp_path):
    """hdor declines a fat tree and nue, the next engine of the list, routes it: `sim run`, `sim
    up` and `verify all` fail (exit 1), JUnit too; --accept-fallback passes it, still said."""
    ft = tmp_path / "ft"
    ibtool("topo", "fattree", "--k", "2", "--n", "3", "--out", ft, check=0)
    run = tmp_path / "run"
    r = ibtool("sim", "run", ft, "--engine", "hdor,nue", "--out", run)
    s = _summary(run)
    assert r.returncode == 1 and "tables configured by nue (FALLBACK: requested hdor,nue)" in r.stdout, r.stdout
    assert (s["engine"], s["fallback"], s["ok"]) == ("nue", True, False) and s["hdor_declined"]
    junit = tmp_path / "v.xml"
    v = ibtool("verify", "all", run, "--json", "--junit", junit, "--permutations", "0")
    rc = _checks(json.loads(v.stdout))["run"]
    assert v.returncode == 1 and not rc["ok"] and "FALLBACK: the first engine hdor did not route" in rc["summary"]
    assert '<failure message="subnet up, tables configured by nue; FALLBACK' in junit.read_text()
    v = ibtool("verify", "all", run, "--accept-fallback", "--json", "--permutations", "0")
    assert v.returncode == 0 and "accepted (--accept-fallback)" in _checks(json.loads(v.stdout))["run"]["summary"]
    ok = tmp_path / "ok"
    r = ibtool("sim", "run", ft, "--engine", "hdor,nue", "--accept-fallback", "--out", ok)
    assert r.returncode == 0 and "(FALLBACK: requested hdor,nue; accepted: --accept-fallback)" in r.stdout, r.stdout
    assert ibtool("verify", "all", ok, "--permutations", "0").returncode == 0
    # sim up: the same rule, and the fabric stays up to be looked at
    up = tmp_path / "up"
    try:
        r = ibtool("sim", "up", ft / "topology.net", "--engine", "hdor,nue", "--out", up)
        assert r.returncode == 1 and "OpenSM fell back: nue configured the tables, not hdor" in r.stderr, r.stderr
    finally:
        ibtool("sim", "down", up)
    try:
        r = ibtool("sim", "up", ft / "topology.net", "--engine", "hdor,nue", "--accept-fallback", "--out", up)
        assert r.returncode == 0, r.stderr
    finally:
        ibtool("sim", "down", up)


@pytest.mark.ibsim
def test_a_net_without_its_plans_opensm_conf_says_which_engine_and_why(tmp_path):
    ft = tmp_path / "ft"
    ibtool("topo", "fattree", "--k", "2", "--n", "3", "--out", ft, check=0)
    alone = tmp_path / "copy" / "topology.net"
    alone.parent.mkdir()
    shutil.copy(ft / "topology.net", alone)
    r = ibtool("sim", "run", alone, "--no-discover", "--out", tmp_path / "run", check=0)
    assert (f"ibtool: note: routing with minhop, OpenSM's default: no --engine and no opensm.conf beside {alone} "
            f"(a plan's, as `ibtool topo` writes it); this net file is a fattree plan, whose engine is ftree"
            in r.stderr), r.stderr
    assert "give its plan directory (--plan DIR" in r.stderr, r.stderr
    s = _summary(tmp_path / "run")
    assert s["engine"] == "minhop" and s["engine_note"].startswith("routing with minhop, OpenSM's default: no --engine")
    # pointed at its plan (issue 37): the copy is routed as the plan says, and nothing is to be said
    r = ibtool("sim", "run", alone, "--plan", ft, "--no-discover", "--out", tmp_path / "run2", check=0)
    s = _summary(tmp_path / "run2")
    assert s["net"] == str(alone) and s["engine"] == "ftree" and s["ok"] and "note:" not in r.stderr, r.stderr
    r = ibtool("sim", "run", "--plan", ft / "topology.net", "--no-discover", "--out", tmp_path / "run3", check=0)
    s = _summary(tmp_path / "run3")
    assert s["net"] == str(ft / "topology.net") and s["engine"] == "ftree" and s["ok"], r.stderr


def test_sim_run_needs_a_net_or_a_plan(tmp_path):
    r = ibtool("sim", "run", "--out", tmp_path / "run")
    assert (r.returncode, r.stderr) == (2, "ibtool: error: give the net file or plan to emulate: NET|PLAN, or "
                                           "--plan PLAN\n")
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------ item 10

@pytest.fixture(scope="module")
def passing_run(kns, tmp_path_factory):
    """A run that passes every check: hdor on its KNS, the path SLs collected (by default)."""
    run = tmp_path_factory.mktemp("runs") / "hdor"
    ibtool("sim", "run", kns, "--out", run, check=0)
    assert ibtool("verify", "all", run, "--permutations", "0").returncode == 0
    return run


def _break_summary_net(d):
    s = _summary(d)
    s["net"] = str(d / "gone" / "topology.net")
    (d / "summary.json").write_text(json.dumps(s))


def _dir_instead(rel):
    def do(d):
        p = d / rel
        p.unlink(missing_ok=True)
        p.mkdir()
    return do


@pytest.mark.ibsim
@pytest.mark.parametrize("change, name, why", [
    (_break_summary_net, "topology", "gone/topology.net named by {d}/summary.json is not there (give --plan PLAN)"),
    (lambda d: (d / "summary.json").unlink(), "run", "{d}/summary.json is missing: whether the subnet came up"),
    (lambda d: (d / "summary.json").write_text("{}\n"), "run", "{d}/summary.json is empty"),
    (lambda d: (d / "summary.json").write_text(""), "topology", "{d}/summary.json is empty, which names it"),
    (_dir_instead("summary.json"), "run", "{d}/summary.json is not a file"),
    (lambda d: (d / "dump_fts.out").write_text(""), "routes: the switches' tables",
     "{d}/dump_fts.out is empty: the routes were traced in OpenSM's own {d}/osm/opensm-lfts.dump"),
    (_dir_instead("dump_fts.out"), "routes: the switches' tables", "{d}/dump_fts.out is not a file"),
    (_dir_instead("osm/opensm-sl2vl.dump"), "input osm/opensm-sl2vl.dump", "not read (the VL of each hop"),
    (_dir_instead("saquery-paths.out"), "input saquery-paths.out", "not read (the SL of each path"),
])
def test_a_check_meant_to_run_that_did_not_is_not_checked(passing_run, tmp_path, change, name, why):
    d = tmp_path / "run"
    shutil.copytree(passing_run, d)
    change(d)
    v = ibtool("verify", "all", d, "--json", "--permutations", "0")
    assert v.returncode == 5, (v.stdout[-3000:], v.stderr)  # before: 0 (a PASS), or 2 for the empty summary
    rep = json.loads(v.stdout)
    c = _checks(rep).get(name)
    assert rep["verdict"] == "NOT CHECKED"
    assert c and c["not_checked"] and not c["ok"] and why.format(d=d) in c["summary"], rep["checks"]


@pytest.mark.parametrize("scenario, said", [
    ("steps:\n  - errors: {'R[1,1] 3': {BogusCounter: 5}}\n",
     "step 1: errors: 'R[1,1] 3': 'BogusCounter' is not a PortCounters counter (known: SymbolErrorCounter, "),
    ("steps:\n  - errors: {'R[1,1] 3': {SymbolErrorCounter: 99999999999999999999}}\n",
     "step 1: errors: 'R[1,1] 3': SymbolErrorCounter 99999999999999999999 is not a whole number 0..65535 "
     "(a 16-bit counter)"),
    ("steps:\n  - errors: {'R[1,1] 3': {LocalLinkIntegrityErrors: 16}}\n", "0..15 (a 4-bit counter)"),
    ("steps:\n  - down: ['R[1,1] 3']\n  - errors: {'R[1,1] 3': {SymbolErrorCounter: 5}}\n",
     "step 2: errors: 'R[1,1] 3': that cable is down at this step, so its counters cannot be read"),
    ("steps:\n  - down: ['S[1,1]']\n  - errors: {'R[1,1] 3': {SymbolErrorCounter: 5}}\n",
     "step 2: errors: 'R[1,1] 3': that cable is down at this step"),
    ("steps:\n  - down: ['R[0,0]']\n", "step 1: down R[0,0] cuts the SM off: OpenSM runs on R[0,0], ibsim's default "
                                      "node (the first device of "),
    ("steps:\n  - down: ['R[0,0] 2', 'R[0,0] 3']\n",
     "step 1: down R[0,0] 2, R[0,0] 3 cuts the SM off from every other switch: OpenSM runs on R[0,0]"),
])
def test_a_fault_step_that_would_set_or_check_nothing_is_refused_before_anything_starts(kns, tmp_path,
                                                                                         scenario, said):
    """Issue 36 item 10: these steps used to PASS (a counter ibsim skipped, a value it refused, a
    cable that is down) or route an empty fabric (the SM cut off) and exit 0."""
    sc = tmp_path / "faults.yaml"
    sc.write_text(scenario)
    run = tmp_path / "run"
    r = ibtool("sim", "run", kns, "--faults", sc, "--out", run)
    assert r.returncode == 2 and r.stderr.startswith(f"ibtool: error: {sc}: ") and said in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not run.exists()
    # the library refuses it too, whoever calls it
    with pytest.raises(InputError):
        faults.check(ibnetdiscover.read(kns / "topology.net"), faults.read(sc, ibnetdiscover.read(kns / "topology.net")),
                     kns / "topology.net")
    # (a cable down alone is a fault, not a refusal)
    fine = tmp_path / "fine.yaml"
    fine.write_text("steps:\n  - down: ['R[0,0] 2']\n  - up: ['R[0,0] 2']\n    errors: {'R[0,0] 2': "
                    "{SymbolErrorCounter: 65535}}\n")
    plan = ibnetdiscover.read(kns / "topology.net")
    faults.check(plan, faults.read(fine, plan), kns / "topology.net")


@pytest.mark.ibsim
def test_a_fault_step_without_path_sls_is_not_a_false_credit_loop(kns, tmp_path):
    """hdor's detour after a fault takes a higher VL by its path SL. Without the path SLs the
    step failed with "credit loop (SL2VL dump)" (every route taken on SL 0) where the same step
    with them passes: it is NOT CHECKED (exit 5), and with the SLs it passes."""
    run = tmp_path / "run"
    ibtool("sim", "run", kns, "--engine", "hdor", "--fail", "R[1,1] 3", "--no-path-sls", "--out", run, check=0)
    v = ibtool("verify", "all", run, "--json", "--permutations", "0")
    assert v.returncode == 5, v.stdout[-3000:]  # before: 1, "credit loop (SL2VL dump)"
    rep = json.loads(v.stdout)
    step1 = _checks(rep["steps"]["step-1"])
    assert (rep["verdict"], rep["steps"]["step-1"]["verdict"]) == ("NOT CHECKED", "NOT CHECKED")
    assert step1["routes: deadlock freedom"]["not_checked"] and "credit loop" not in v.stdout
    text = ibtool("verify", "all", run, "--permutations", "0").stdout
    assert "step-1: NOT CHECKED  down R[1,1] 3; tables by hdor; not checked: routes: deadlock freedom" in text


# ------------------------------------------------------------------------- the docs say the same

def test_docs_list_every_check_and_the_exit_codes_the_code_gives():
    """docs/verify.md's table names every check the report can give (PASS / FAIL / NOT CHECKED),
    and README's exit-code table, docs/verify.md and docs/ci.md give the codes the code uses."""
    import re

    from support import ROOT
    from ibtool.errors import CheckFailed, NotChecked
    from ibtool.verify import report
    assert report.EXIT == {"PASS": 0, "FAIL": CheckFailed.exit_code, "NOT CHECKED": NotChecked.exit_code}
    code = "".join((ROOT / "ibtool" / "verify" / f).read_text() for f in ("report.py", "run.py"))
    names = set(re.findall(r'"name": "([^"{]+)"', code)) | set(re.findall(r'not_checked_check\(\s*"([^"{]+)"', code))
    names |= {"input FILE"}  # f"input {rel}": one row for every input file
    doc = (ROOT / "docs" / "verify.md").read_text()
    table = doc[doc.index("### Every check, and when it is PASS, FAIL or NOT CHECKED"):]
    table = table[:table.index("\n\n", table.index("| check"))]
    listed = set(re.findall(r"`([^`]+)`", "\n".join(row.split("|")[1] for row in table.splitlines()[4:])))
    assert names <= listed, names - listed
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\d+)` \| (.*) \|$", readme, re.MULTILINE))
    assert rows["1"].startswith("a check failed") and rows["5"].startswith("NOT CHECKED") and "never a pass" in rows["5"]
    assert NotChecked.exit_code == 5 and "**5** NOT CHECKED" in doc and "**1** FAIL" in doc
    ci = (ROOT / "docs" / "ci.md").read_text()
    assert "exits 0 when every check passed,\n  1 when a check failed, and 5 (NOT CHECKED)" in ci
    assert "`<skipped>` with the reason" in ci
