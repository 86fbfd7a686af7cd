"""Every option that ends in an opensm.conf is checked against OpenSM 3.3.23's own range or list,
by one checker (ibtool/sim/opensm_options.py), the same way in every command (issue 24).

Before: `sim run --engine ""` routed with minhop (exit 0), `--conf lmc=99` was written as
`lmc 99` (OpenSM replaces it by 0, saying so in its log only), `bench run --engines ""` meant
"the routing in place", and a plan's conf was handed to OpenSM unchecked.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from support import FIXTURES, ibtool
from ibtool.errors import InputError
from ibtool.sim import opensm_options as oo

PLAN_NET = FIXTURES / "real" / "plan-kns-k3-n2.net"


def one_error(p, code=2) -> str:
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr.strip()


@pytest.fixture(scope="module")
def opensm_defaults(tmp_path_factory):
    """Debian's real OpenSM 3.3.23 writes every option it knows with its default (`opensm -c`)."""
    exe = shutil.which("opensm", path="/usr/sbin:/sbin:/usr/bin")
    assert exe, "opensm not installed (make setup installs it)"
    conf = tmp_path_factory.mktemp("osm") / "opensm.conf"
    p = subprocess.run([exe, "-c", str(conf)], capture_output=True, text=True, timeout=60,
                       cwd=conf.parent)
    assert p.returncode == 0 and conf.is_file(), p.stdout + p.stderr
    return conf


def test_the_table_is_opensms_own(opensm_defaults):
    """The same keys as the real OpenSM (dimn_ports_file: an alias it reads but does not write),
    and every value it writes by default passes."""
    text = opensm_defaults.read_text()
    written = {ln.split()[0] for ln in text.splitlines() if ln.strip() and not ln.startswith("#")}
    assert written == set(oo.OPTIONS) - {"dimn_ports_file"}
    oo.check_text(text, str(opensm_defaults))


@pytest.mark.parametrize("key, value, says", [
    ("lmc", "99", "99 is outside 0..7"),
    ("lmc", "8", "8 is outside 0..7"),
    ("sm_priority", "0x10", "0x10 is outside 0..15"),
    ("max_op_vls", "0", "0 is outside 1..5"),
    ("sweep_interval", "-1", "-1 is outside 0..0xffffffff"),
    ("sweep_interval", "4294967296", "4294967296 is outside 0..0xffffffff"),
    ("subnet_timeout", "ten", "'ten' is not a number"),
    ("qos", "true", "'true' is not TRUE or FALSE (OpenSM reads anything but TRUE as FALSE)"),
    ("force_link_speed", "9", "'9' is not one of OpenSM's values (0..7, 15)"),
    ("force_link_width", "254", "'254' is not one of OpenSM's values (0..31, 255)"),
    ("part_enforce", "both,in", "'both,in' is not one of OpenSM's values (both, in, off, out)"),
    ("console", "socket", "'socket' is not one of OpenSM's values (local, loopback, off)"),
    ("qos_sl2vl", "0,1,2", "3 VLs; one for each of the 16 SLs"),
    ("qos_vlarb_high", "0:4,15:4", "'15' in '15:4' is outside 0..14"),
    ("qos_high_limit", "256", "256 is outside -1..255"),
    ("routing_engine", "", "no value"),
    ("lmcc", "1", "OpenSM 3.3.23 has no option 'lmcc' (did you mean lmc?)"),
])
def test_values_opensm_would_drop_or_replace_are_refused(key, value, says):
    with pytest.raises(InputError) as e:
        oo.check(key, value, f"--conf {key}={value}")
    assert str(e.value) == f"--conf {key}={value}: {says}"


@pytest.mark.parametrize("key, value", [("lmc", "7"), ("lmc", "07"), ("sm_priority", "0xf"), ("qos", "FALSE"),
                                        ("force_link_speed", "15"), ("qos_high_limit", "-1"),
                                        ("qos_sl2vl", ",".join(["0"] * 16)), ("root_guid_file", "roots"),
                                        ("routing_engine", "hdor,minhop"), ("event_plugin_name", "hdor foo")])
def test_values_opensm_takes_pass(key, value):
    assert oo.check(key, value) == value


# ------------------------------------------------------------------ the same checker in every command

def test_sim_run_conf_and_engine(tmp_path):
    msg = one_error(ibtool("sim", "run", PLAN_NET, "--out", tmp_path / "r", "--conf", "lmc=99"))
    assert msg == "ibtool: error: --conf lmc=99: 99 is outside 0..7"
    msg = one_error(ibtool("sim", "run", PLAN_NET, "--out", tmp_path / "r", "--engine", ""))
    assert msg == "ibtool: error: --engine: no routing engine given"
    assert not (tmp_path / "r").exists()


def test_sim_run_opensm_config_is_checked_line_by_line(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("# site\nsm_priority 3\nlmc 99   # too many\n")
    msg = one_error(ibtool("sim", "run", PLAN_NET, "--out", tmp_path / "r", "--opensm-config", conf))
    assert msg == f"ibtool: error: {conf}:3: lmc 99: 99 is outside 0..7"


def test_sim_run_of_a_plan_whose_conf_was_edited(tmp_path):
    plan = tmp_path / "kns"
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--out", plan, check=0)
    with open(plan / "opensm.conf", "a") as fh:
        fh.write("qos_max_vls 16\n")
    msg = one_error(ibtool("sim", "run", plan, "--out", tmp_path / "r"))
    n = len((plan / "opensm.conf").read_text().splitlines())
    assert msg == f"ibtool: error: {plan / 'opensm.conf'}:{n}: qos_max_vls 16: 16 is outside 0..15"


def test_topo_engine(tmp_path):
    msg = one_error(ibtool("topo", "kns", "--k", 3, "--n", 2, "--engine", "", "--out", tmp_path / "p"))
    assert msg == "ibtool: error: --engine: no routing engine given"


def test_bench_run_engines(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts: [{name: here, address: 127.0.0.1, slots: 2}]\nrunner: local\n")
    msg = one_error(ibtool("bench", "run", "-i", inv, "-b", "hpcc", "--engines", "", "-o", tmp_path / "c"))
    assert msg == "ibtool: error: --engines: no routing engine given"
    msg = one_error(ibtool("bench", "run", "-i", inv, "-b", "hpcc", "--engines", "updn,nope", "-o", tmp_path / "c"))
    assert msg.startswith("ibtool: error: --engines: unknown routing engine 'nope'")


def test_plugin_install_plan(tmp_path):
    plan = tmp_path / "kns"
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--out", plan, check=0)
    root = tmp_path / "root"
    r = ibtool("plugin", "install", "--plan", plan, "--planned-guids", "--destdir", root, "--dry-run", check=0)
    assert "  added 'qos TRUE'" in r.stdout and "  added 'routing_engine hdor,nue'" in r.stdout
    # the plan's description goes beside the conf, where hdor reads it
    assert f"would install {root / 'etc/opensm/hdor.conf'} (from {plan / 'hdor.conf'}: KNS k=3 n=2 s=1" in r.stdout
    ibtool("plugin", "install", "--plan", plan, "--planned-guids", "--engines", "hdor,updn", "--destdir", root, check=0)
    etc = root / "etc/opensm"
    assert (etc / "hdor.conf").read_bytes() == (plan / "hdor.conf").read_bytes()
    # updn's roots from the description, beside it (the plan's own root-guids name the same two)
    assert "\nroot_guid_file /etc/opensm/hdor-root-guids\n" in (etc / "opensm.conf").read_text()
    assert (etc / "hdor-root-guids").read_text() == (plan / "root-guids").read_text()
    (etc / "opensm.conf").unlink()
    with open(plan / "opensm.conf", "a") as fh:
        fh.write("sm_sl 16\n")
    msg = one_error(ibtool("plugin", "install", "--plan", plan, "--destdir", root, "--dry-run"))
    n = len((plan / "opensm.conf").read_text().splitlines())
    assert msg == f"ibtool: error: {plan / 'opensm.conf'}:{n}: sm_sl 16: 16 is outside 0..15"
    msg = one_error(ibtool("plugin", "install", "--engines", "", "--destdir", root, "--dry-run"))
    assert msg == "ibtool: error: --engines: no routing engine given"


def test_plugin_install_plan_installs_the_plans_files_beside_the_conf(tmp_path):
    ft = tmp_path / "ft"
    ibtool("topo", "fattree", "--k", 2, "--n", 3, "--out", ft, check=0)
    root = tmp_path / "root"
    ibtool("plugin", "install", "--plan", ft, "--engines", "hdor,ftree", "--destdir", root, check=0)
    conf = (root / "etc/opensm/opensm.conf").read_text()
    assert "\nroot_guid_file /etc/opensm/root-guids\n" in conf
    assert "\ncn_guid_file /etc/opensm/cn-guids\n" in conf
    for name in ("root-guids", "cn-guids"):
        assert (root / "etc/opensm" / name).read_bytes() == (ft / name).read_bytes()
    msg = one_error(ibtool("plugin", "install", "--plan", ft, "--destdir", root, "--dry-run"))
    assert msg == f"ibtool: error: --plan {ft}: its routing_engine ftree does not list hdor (give --engines)"


def test_a_repeated_key_is_read_as_opensm_reads_it(tmp_path):
    """OpenSM sets a key anew at each line that names it. The real OpenSM says which value it
    took (`opensm -F CONF -c OUT` dumps the options it read); ibtool's one reader, and the two
    commands that read a plan's conf (`sim run PLAN` takes its engine, `plugin install --plan`
    its engine and options), must take the same."""
    from ibtool.cli.plugin import plan_options
    from ibtool.plan import Plan
    exe = shutil.which("opensm", path="/usr/sbin:/sbin:/usr/bin")
    assert exe, "opensm not installed (make setup installs it)"
    plan = tmp_path / "kns"
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--out", plan, check=0)
    conf = plan / "opensm.conf"
    before = oo.read(conf.read_text())
    with open(conf, "a") as fh:  # a second routing_engine (and lmc twice), as an admin's edit leaves it
        fh.write("lmc 1\nrouting_engine 'updn,minhop'  # tried later\nlmc 2\n")
    dumped = tmp_path / "dumped.conf"
    p = subprocess.run([exe, "-F", str(conf), "-c", str(dumped)], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert p.returncode == 0 and dumped.is_file(), p.stdout + p.stderr
    took = oo.read(dumped.read_text())
    assert before["routing_engine"] != took["routing_engine"]  # the plan's own line was not the one taken
    mine = oo.read(conf.read_text())
    assert (mine["routing_engine"], mine["lmc"]) == (took["routing_engine"], took["lmc"])
    assert Plan.at(plan / "topology.net").engines() == took["routing_engine"].split(",")
    engines, options = plan_options(plan)
    assert engines == took["routing_engine"].split(",") and dict(options)["lmc"] == took["lmc"]


# ------------------------------------------------------------------ item 5: sim run DIR

def test_sim_run_on_a_directory(tmp_path):
    msg = one_error(ibtool("sim", "run", tmp_path, "--out", tmp_path / "r"))
    assert msg == (f"ibtool: error: {tmp_path}: is a directory, not a net file; a plan directory "
                   "(`ibtool topo --out DIR`) holds topology.net, and this one has none")


@pytest.mark.ibsim
def test_sim_run_on_a_plan_directory_uses_its_topology_and_engine(tmp_path):
    plan = tmp_path / "ft"
    ibtool("topo", "fattree", "--k", 2, "--n", 3, "--out", plan, check=0)
    r = ibtool("sim", "run", plan, "--out", tmp_path / "r", "--no-discover", "--json", check=0)
    import json
    s = json.loads(r.stdout)
    assert s["net"] == str(plan / "topology.net") and s["engine"] == "ftree" and s["ok"]
