"""`ibtool plugin build` / `ibtool plugin install`: staged installs (--destdir), conf updates,
and a staged install that Debian's opensm actually loads under ibsim."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from support import ibtool
from hdor_walk import ENGINE_FILES, PLUGIN, libhdor  # noqa: F401
from ibtool.cli.plugin import multiarch_libdir, update_conf
from ibtool.formats import ibnetdiscover
from ibtool.sim.runner import ibsim
from ibtool.topologies.kns import kns

pytestmark = pytest.mark.usefixtures("libhdor")


def test_update_conf_adds_keys_to_empty():
    text, changes = update_conf("", ["hdor", "nue"])
    assert "event_plugin_name hdor\n" in text and "routing_engine hdor,nue\n" in text
    assert changes == ["added 'event_plugin_name hdor'", "added 'routing_engine hdor,nue'"]


def test_update_conf_rewrites_in_place_and_keeps_other_plugins():
    old = "# site\nrouting_engine minhop\nlmc 1\n#event_plugin_name x\nevent_plugin_name foo\nrouting_engine updn\n"
    text, changes = update_conf(old, ["hdor", "updn"])
    lines = text.splitlines()
    assert lines[1] == "routing_engine hdor,updn"
    assert lines[2] == "lmc 1" and lines[3] == "#event_plugin_name x"
    assert lines[4] == "event_plugin_name foo hdor"  # later plugin names are split on spaces only
    assert lines[5].startswith("# routing_engine updn")  # a later duplicate would win in OpenSM
    active = [ln for ln in lines if ln.startswith("routing_engine")]
    assert active == ["routing_engine hdor,updn"]
    assert len(changes) == 3
    again, none = update_conf(text, ["hdor", "updn"])
    assert again == text and none == []


def test_update_conf_reads_lines_as_opensm_does():
    """One opensm.conf reader (issue 37): an inline comment is no part of the value OpenSM reads,
    so a plugin list with a comment gets hdor where OpenSM reads it (the plugin's own parser put
    hdor after the '#', where OpenSM never loads it), and a line that already says what is wanted
    (quoted, commented) is left as it is."""
    from ibtool.sim import opensm_options
    old = "event_plugin_name osmeventplugin  # the site's monitor\nrouting_engine 'hdor,nue'  # hdor first\n"
    text, changes = update_conf(old, ["hdor", "nue"])
    took = opensm_options.read(text)
    assert took["event_plugin_name"].split() == ["osmeventplugin", "hdor"]
    assert took["routing_engine"] == "hdor,nue"
    assert text.splitlines() == ["event_plugin_name osmeventplugin hdor  # the site's monitor",
                                 "routing_engine 'hdor,nue'  # hdor first"]
    assert changes == ["event_plugin_name: 'osmeventplugin' -> 'osmeventplugin hdor' (line 1)"]


def test_build_command(tmp_path):
    r = ibtool("plugin", "build", check=0)
    assert f"built {PLUGIN / 'libhdor.so'}" in r.stdout
    # warning-free with the flags of the Makefile (-Wall -Wextra), from scratch: in a copy, as the
    # library OpenSM loads in the other tests must not be rewritten under them (pytest-xdist)
    copy = tmp_path / "opensm_plugin"
    copy.mkdir()
    for src in [PLUGIN / "Makefile", PLUGIN / "libhdor.map", *ENGINE_FILES]:
        shutil.copy2(src, copy / src.name)
    p = subprocess.run(["make", "-C", str(copy), "libhdor.so"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "warning" not in (p.stdout + p.stderr).lower(), p.stderr
    nm = subprocess.run(["nm", "-D", "--defined-only", str(copy / "libhdor.so")], capture_output=True, text=True)
    assert " osm_event_plugin" in nm.stdout


def test_install_dry_run_changes_nothing(tmp_path):
    root = tmp_path / "root"
    r = ibtool("plugin", "install", "--destdir", root, "--dry-run", check=0)
    assert f"would install {root}{multiarch_libdir()}/libhdor.so" in r.stdout
    assert f"would create {root}/etc/opensm/opensm.conf" in r.stdout
    assert "added 'event_plugin_name hdor'" in r.stdout
    assert not root.exists()


def test_install_staged_then_unchanged(tmp_path):
    root = tmp_path / "root"
    (root / "etc/opensm").mkdir(parents=True)
    conf = root / "etc/opensm/opensm.conf"
    conf.write_text("routing_engine updn\nroot_guid_file /etc/opensm/roots\n")
    r = ibtool("plugin", "install", "--destdir", root, "--prefix", "/opt/ibtool", "--engines", "hdor,updn", check=0)
    lib = root / "opt/ibtool/lib/libhdor.so"
    assert lib.read_bytes() == (PLUGIN / "libhdor.so").read_bytes()
    assert (root / "etc/ld.so.conf.d/ibtool-hdor.conf").read_text() == "/opt/ibtool/lib\n"
    assert conf.read_text().splitlines()[:2] == ["routing_engine hdor,updn", "root_guid_file /etc/opensm/roots"]
    assert "event_plugin_name hdor" in conf.read_text()
    assert (root / "etc/opensm/opensm.conf.ibtool-bak").read_text() == "routing_engine updn\nroot_guid_file /etc/opensm/roots\n"
    assert "routing_engine: 'updn' -> 'hdor,updn' (line 1)" in r.stdout
    r2 = ibtool("plugin", "install", "--destdir", root, "--prefix", "/opt/ibtool", "--engines", "hdor,updn", check=0)
    assert r2.stdout.count("unchanged") == 3, r2.stdout
    bad = ibtool("plugin", "install", "--destdir", root, "--engines", "minhop", check=2)
    assert "does not list hdor" in bad.stderr


def test_install_refuses_a_conf_it_cannot_update_before_changing_anything(tmp_path):
    """A conf that is not text or not a file, or a destination under a file: one line, no traceback;
    a bad conf stops the install before the library is copied."""
    root = tmp_path / "root"
    (root / "etc/opensm").mkdir(parents=True)
    conf = root / "etc/opensm/opensm.conf"
    conf.write_bytes(b"\xff\xfe\x00binary\nrouting_engine\n")
    for extra in ((), ("--dry-run",)):
        r = ibtool("plugin", "install", "--destdir", root, *extra, check=2)
        assert r.stderr.strip() == f"ibtool: error: --conf {conf}: not a text file (not UTF-8); is it an opensm.conf?"
    assert sorted(p.name for p in (root / "etc/opensm").iterdir()) == ["opensm.conf"]
    assert not (root / "usr").exists()
    conf.unlink()
    conf.mkdir()
    r = ibtool("plugin", "install", "--destdir", root, check=2)
    assert r.stderr.strip() == f"ibtool: error: --conf {conf}: not a regular file"
    assert not (root / "usr").exists()
    (tmp_path / "afile").write_text("x")
    r = ibtool("plugin", "install", "--destdir", tmp_path / "afile" / "root", check=2)
    assert r.stderr == f"ibtool: error: --destdir {tmp_path / 'afile' / 'root'}: cannot create directory: Not a directory\n"
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


def test_install_keeps_the_conf_permissions(tmp_path):
    root = tmp_path / "root"
    (root / "etc/opensm").mkdir(parents=True)
    conf = root / "etc/opensm/opensm.conf"
    conf.write_text("routing_engine updn\n")
    conf.chmod(0o600)
    ibtool("plugin", "install", "--destdir", root, check=0)
    assert "routing_engine hdor,nue" in conf.read_text()
    assert conf.stat().st_mode & 0o777 == 0o600
    assert (root / "etc/opensm/opensm.conf.ibtool-bak").stat().st_mode & 0o777 == 0o600
    assert (root / multiarch_libdir().relative_to("/") / "libhdor.so").stat().st_mode & 0o777 == 0o644


@pytest.mark.ibsim
def test_staged_install_is_loaded_by_debian_opensm(tmp_path):
    """The staged conf + library, used as OpenSM would find them (config file, loader path)."""
    root = tmp_path / "root"
    ibtool("plugin", "install", "--destdir", root, check=0)
    libdir = root / multiarch_libdir().relative_to("/")
    conf = root / "etc/opensm/opensm.conf"
    f = kns(k=3, n=2)
    net = tmp_path / "kns.net"
    ibnetdiscover.write(f, net)
    osm = tmp_path / "osm"
    osm.mkdir()
    log = tmp_path / "opensm.log"
    with ibsim(net, tmp_path / "work", f) as sim:
        env = sim.env(OSM_TMP_DIR=str(osm), OSM_CACHE_DIR=str(osm), LD_LIBRARY_PATH=str(libdir))
        p = subprocess.run(["/usr/sbin/opensm", "-o", "-F", str(conf), "-f", str(log), "-D", "0x03"],
                           cwd=sim.work, env=env, capture_output=True, timeout=120)
    text = log.read_text(errors="replace")
    assert p.returncode == 0, text[-2000:]
    assert "hdor tables configured on all switches" in text
    assert "SUBNET UP" in text
    assert (osm / "opensm-hdor.dump").read_text().startswith("# hdor k=3 n=2 routers=9 switches=6 hcas=9 lids=24")


@pytest.mark.ibsim
def test_layout_guard_refuses_a_misbuilt_plugin(tmp_path):
    """A plugin compiled without osm_config.h first (ENABLE_OSM_PERF_MGR unset, so OpenSM's structs
    have another layout) passes OpenSM's version check; hdor's back-pointer guard must refuse to
    run, say why, and leave the fabric to minhop."""
    from hdor_walk import run_opensm

    bad = tmp_path / "bad"
    bad.mkdir()
    cc = subprocess.run(["gcc", "-std=gnu11", "-O2", "-fPIC", "-shared", "-I/usr/include/infiniband",
                         "-include", "opensm/osm_opensm.h", "-o", str(bad / "libhdor.so"),
                         *[str(f) for f in ENGINE_FILES if f.suffix == ".c"]],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    f = kns(k=3, n=2)
    net = tmp_path / "kns.net"
    ibnetdiscover.write(f, net)
    rc, log, p = run_opensm(net, tmp_path / "run", "/usr/sbin/opensm",
                            "event_plugin_name hdor\nrouting_engine hdor,minhop\n",
                            env={"LD_LIBRARY_PATH": str(bad)}, discover=False)
    assert rc == 0
    assert "hdor: refusing to run: the OpenSM structure layout does not match" in p.stderr.decode()
    assert "cannot load plugin 'hdor'" in log
    assert "minhop tables configured on all switches" in log and "hdor tables configured" not in log
    # the same source built by the Makefile (osm_config.h forced first) is accepted
    rc, log, p = run_opensm(net, tmp_path / "run2", "/usr/sbin/opensm",
                            "event_plugin_name hdor\nrouting_engine hdor,minhop\n",
                            env={"LD_LIBRARY_PATH": str(PLUGIN)}, discover=False)
    assert "hdor tables configured on all switches" in log and "refusing" not in p.stderr.decode()


def test_install_kns_conf_beside_the_conf_with_the_safe_fallback(tmp_path):
    """--kns-conf: the description beside opensm.conf (where hdor reads it), qos TRUE, routing_engine
    hdor,nue by default, and with --engines hdor,updn updn's roots taken from it (the plan's own
    roots); --dry-run prints it and writes nothing; a description hdor would refuse stops the install
    before any change. (The plan's own description, with --planned-guids: a simulated fabric's.)"""
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", plan, check=0)
    root = tmp_path / "root"
    dry = ibtool("plugin", "install", "--destdir", root, "--kns-conf", plan / "hdor.conf", "--planned-guids",
                 "--dry-run", check=0)
    assert f"would install {root}/etc/opensm/hdor.conf (from {plan / 'hdor.conf'}: KNS k=3 n=2 s=1: 9 routers, " \
           "6 switches, 9 HCAs, 27 cables)" in dry.stdout
    assert "  | hdor-kns 1 k=3 n=2 s=1" in dry.stdout and not root.exists()
    ibtool("plugin", "install", "--destdir", root, "--kns-conf", plan / "hdor.conf", "--planned-guids", check=0)
    assert (root / "etc/opensm/hdor.conf").read_bytes() == (plan / "hdor.conf").read_bytes()
    conf = (root / "etc/opensm/opensm.conf").read_text()
    assert "routing_engine hdor,nue\n" in conf and "qos TRUE\n" in conf and "root_guid_file" not in conf
    ibtool("plugin", "install", "--destdir", root, "--kns-conf", plan / "hdor.conf", "--engines", "hdor,updn",
           "--planned-guids", check=0)
    conf = (root / "etc/opensm/opensm.conf").read_text()
    assert "routing_engine hdor,updn\n" in conf and "root_guid_file /etc/opensm/hdor-root-guids\n" in conf
    assert (root / "etc/opensm/hdor-root-guids").read_text() == (plan / "root-guids").read_text()
    bad = tmp_path / "bad.conf"
    bad.write_text((plan / "hdor.conf").read_text().replace("ports=8 [0,0]", "ports=8 [0,7]", 1))
    root2 = tmp_path / "root2"
    r = ibtool("plugin", "install", "--destdir", root2, "--kns-conf", bad, check=2)
    assert r.stderr.strip().startswith(f"ibtool: error: {bad}:") and "coordinate 7 is not below k = 3" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not root2.exists()


def test_install_refuses_a_plans_placeholder_guids_unless_asked(tmp_path):
    """A plan's description names the plan's placeholder GUIDs: installed for a real fabric, hdor
    would decline it at every pass (HD20). `--plan P` (its hdor.conf) and `--kns-conf P/hdor.conf` are
    refused, before any change, with the way to describe the real fabric; --planned-guids installs
    it (ibsim emulating the plan has those GUIDs). The files the plan's conf names (root_guid_file)
    go beside the installed conf, which names them there."""
    plan = tmp_path / "plan"
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--engine", "hdor,updn", "--out", plan, check=0)
    root = tmp_path / "root"
    for args in (["--plan", plan], ["--kns-conf", plan / "hdor.conf"], ["--plan", plan, "--dry-run"]):
        r = ibtool("plugin", "install", "--destdir", root, *args, check=2)
        what = f"--plan {plan}: its hdor.conf" if args[0] == "--plan" else f"--kns-conf {plan / 'hdor.conf'}"
        assert r.stderr.startswith(f"ibtool: error: {what} describes the planned fabric: its GUIDs are the plan's "
                                   "placeholders"), r.stderr
        assert "  ibtool route hdor --fabric fabric.out --out hdor.lft --kns-conf hdor.conf\n" in r.stderr
        assert "--planned-guids" in r.stderr and not root.exists()

    # the real fabric's description (its own GUIDs), with the plan's engines and options
    real = tmp_path / "real.conf"
    real.write_text((plan / "hdor.conf").read_text().replace("0x0002c9000000", "0x0002c9030a00"))
    r = ibtool("plugin", "install", "--destdir", root, "--plan", plan, "--kns-conf", real, "--engines", "hdor,nue",
               check=0)
    etc = root / "etc/opensm"
    assert (etc / "hdor.conf").read_bytes() == real.read_bytes()
    conf = (etc / "opensm.conf").read_text()
    assert "\nroot_guid_file /etc/opensm/root-guids\n" in conf and str(plan) not in conf
    assert (etc / "root-guids").read_bytes() == (plan / "root-guids").read_bytes()
    assert "note: root_guid_file /etc/opensm/root-guids lists the plan's placeholder GUIDs" in r.stderr
    # updn after hdor: its roots from the real description, beside it
    ibtool("plugin", "install", "--destdir", root, "--plan", plan, "--kns-conf", real, check=0)
    conf = (etc / "opensm.conf").read_text()
    assert "\nroot_guid_file /etc/opensm/hdor-root-guids\n" in conf
    assert (etc / "hdor-root-guids").read_text().split() == [
        g.replace("0x0002c9000000", "0x0002c9030a00") for g in (plan / "root-guids").read_text().split()]

    # asked: the plan's own description (a fabric with the plan's GUIDs)
    root2 = tmp_path / "root2"
    ibtool("plugin", "install", "--destdir", root2, "--plan", plan, "--planned-guids", check=0)
    assert (root2 / "etc/opensm/hdor.conf").read_bytes() == (plan / "hdor.conf").read_bytes()
