"""hdor in OpenSM's own tree, and on two OpenSM releases (docs/plugin.md "The in-tree variant" and
"OpenSM 3.3.24").

The patch series opensm_plugin/intree/0*.patch is applied with `git am` (intree/build.sh) on
Debian's OpenSM 3.3.23 (`make -C opensm_plugin intree`) and on upstream's 3.3.24 snapshot (`make
intree-3.3.24`); a stock 3.3.24 is built for the plugin (`make plugin-3.3.24`: the OpenSM and a
libhdor.so built against its headers). Each build takes one to three minutes on 2 cores once and
is kept in build/ (re-running make only checks it). The smoke matrix: a KNS with a cable missing
from its first sweep, routed against its description under ibsim by the plugin and by the
built-in engine on both releases: the same tables, SL2VL tables and coordinates dump all four
times."""

from __future__ import annotations

import shutil
import subprocess
from types import SimpleNamespace

import pytest

from hdor_digests import check as check_digests, current_test, of_run
from hdor_walk import ENGINE_FILES, PLUGIN, ROOT, check_routes, libhdor, rebuild, run_opensm  # noqa: F401
from ibtool.formats import ibnetdiscover
from ibtool.topologies.kns import kns
from support import ibtool

pytestmark = [pytest.mark.slow, pytest.mark.ibsim]

INTREE = ROOT / "build" / "opensm-intree"
INTREE24 = ROOT / "build" / "opensm-intree-3.3.24"
STOCK24 = ROOT / "build" / "opensm-3.3.24"
SERIES = sorted((PLUGIN / "intree").glob("0*.patch"))


def make(target: str):
    p = subprocess.run(["make", "-C", str(PLUGIN), target], capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    return p.stdout


@pytest.fixture(scope="module")
def intree_opensm():
    make("intree")
    exe = INTREE / "opensm"
    assert exe.exists()
    return exe


@pytest.fixture(scope="module")
def opensm_3324():
    """upstream's 3.3.24: with hdor built in, and stock with the plugin built against it."""
    make("intree-3.3.24")
    make("plugin-3.3.24")
    return SimpleNamespace(intree=INTREE24 / "opensm", stock=STOCK24 / "opensm", plugin_dir=STOCK24)


def subjects(series) -> list[str]:
    out = []
    for p in series:
        line = next(x for x in p.read_text().splitlines() if x.startswith("Subject: "))
        out.append(line.split("] ", 1)[1])
    return out


def test_the_series_is_the_engine_files_as_they_are():
    """The series carries the engine's files as they are (intree/mkseries.sh regenerates it; its
    --check rebuilds the series on the snapshot and compares byte for byte)."""
    text = "".join(p.read_text() for p in SERIES)
    for f in ENGINE_FILES:
        head = f"--- /dev/null\n+++ b/opensm/{f.name}\n"
        assert head in text, f.name
        body = text.split(head, 1)[1].split("\n", 1)[1]  # after the @@ line
        lines = []
        for x in body.splitlines():
            if not x.startswith("+"):
                break
            lines.append(x[1:])
        assert "\n".join(lines) + "\n" == f.read_text(), f"{f.name}: regenerate: make -C opensm_plugin series"
    p = subprocess.run([str(PLUGIN / "intree" / "mkseries.sh"), "--check"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def built_in(release: str, request):
    """The OpenSM of `release` with hdor built in (its fixture builds it once)."""
    if release == "3.3.23":
        return request.getfixturevalue("intree_opensm")
    return request.getfixturevalue("opensm_3324").intree


RELEASES = ["3.3.23", "3.3.24"]


@pytest.mark.parametrize("release", RELEASES)
def test_intree_build_is_the_series_applied_with_git_am(release, request):
    exe = built_in(release, request)
    src = exe.parent / "src" / f"opensm-{release}"
    log = subprocess.run(["git", "-C", str(src), "log", "--format=%s", f"-{len(SERIES)}"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log[::-1] == subjects(SERIES)
    for f in ENGINE_FILES:  # the plugin's engine files, as they are
        assert (src / "opensm" / f.name).read_bytes() == f.read_bytes(), f.name
    assert '"hdor"' in (src / "opensm" / "osm_opensm.c").read_text()
    assert "hdor Routing Algorithm" in (src / "doc" / "current-routing.txt").read_text()
    assert "\\-\\-hdor_config" in (src / "man" / "opensm.8.in").read_text()
    # the binary is that release and knows hdor by name (the plugin is not involved)
    out = subprocess.run(["strings", str(exe.resolve())], capture_output=True, text=True).stdout
    assert "osm_ucast_hdor.c" in out and f"OpenSM {release}" in out
    usage = subprocess.run([str(exe), "--help"], capture_output=True, text=True).stdout
    assert "--hdor_config <path to file>" in usage


@pytest.mark.parametrize("release", RELEASES)
def test_intree_routes_kns_with_R_hdor(release, request, tmp_path):
    exe = built_in(release, request)
    f = kns(k=4, n=2, hcas_per_router=2, multiplicity=2, radix=12)
    net = tmp_path / "kns.net"
    ibnetdiscover.write(f, net)
    run = tmp_path / "run"
    # no event_plugin_name, no LD_LIBRARY_PATH: hdor must be the built-in one
    rc, log, _ = run_opensm(net, run, str(exe), "# in-tree\n", args=["-R", "hdor"], env={"LD_LIBRARY_PATH": ""})
    assert rc == 0, log[-3000:]
    assert f"OpenSM {release}" in log
    assert "hdor tables configured on all switches" in log
    assert "hdor: routed k=4 n=2 s=1: 24 switches, 56 LIDs" in log
    assert "hdor: declined" not in log
    assert "Loading plugin" not in log and "registered external routing engine" not in log
    res = check_routes(run)
    assert res["hca_paths"] == 32 * 31
    # the tables before issue 28, recorded for 3.3.23: the same on every release
    check_digests(f"c/{current_test().split('[')[0]}", of_run(run / "osm"))


@pytest.mark.parametrize("release", RELEASES)
def test_intree_declines_fat_tree(release, request, tmp_path):
    from hdor_walk import fat_tree

    net = tmp_path / "ft.net"
    ibnetdiscover.write(fat_tree(), net)
    rc, log, _ = run_opensm(net, tmp_path / "run", str(built_in(release, request)), "",
                            args=["-R", "hdor,minhop"], discover=False)
    assert rc == 0
    assert "hdor: declined (HD10): 4 routers, but k^n = 4^2" in log
    assert "minhop tables configured on all switches" in log


# ---------------------------------------------------------------------------------------------
# The smoke matrix: {plugin, built in} x {3.3.23, 3.3.24} on one degraded KNS

@pytest.fixture(scope="module")
def degraded(tmp_path_factory):
    """A KNS 4^2 plan (its description hdor.conf) and its net without one router-switch cable."""
    d = tmp_path_factory.mktemp("degraded")
    plan = d / "plan"
    ibtool("topo", "kns", "--k", 4, "--n", 2, "--radix", 8, "--out", plan, check=0)
    f = ibnetdiscover.read(plan / "topology.net")
    router = sorted(x for x in f.names if x.startswith("R["))[5]
    x = f.index(router)
    switch = next(f.names[y] for _, y, _ in f.neighbors(x) if f.names[y].startswith("S["))
    net = d / "degraded.net"
    ibnetdiscover.write(rebuild(f, drop_link=lambda a, b: {a, b} == {router, switch}), net)
    return SimpleNamespace(net=net, conf=plan / "hdor.conf", cable=f"{router} - {switch}")


CONF = "routing_engine hdor,nue\nqos TRUE\n"


def route_degraded(degraded, run, exe, *, plugin_dir=None, conf_option=False, args=()):
    """One sweep: the plugin loaded from `plugin_dir` with hdor.conf beside opensm.conf, or the
    built-in engine given the description by its hdor_config option (opensm.conf or
    `--hdor_config`)."""
    run.mkdir(parents=True)
    conf = CONF
    env = {"LD_LIBRARY_PATH": ""}
    if plugin_dir:
        conf = "event_plugin_name hdor\n" + conf
        env = {"LD_LIBRARY_PATH": str(plugin_dir)}
        shutil.copyfile(degraded.conf, run / "hdor.conf")
    elif conf_option:
        conf += f"hdor_config {degraded.conf}\n"
    rc, log, _ = run_opensm(degraded.net, run, str(exe), conf, args=list(args), env=env, discover=False)
    assert rc == 0, log[-3000:]
    assert "hdor tables configured on all switches" in log, log[-3000:]
    assert "hdor: declined" not in log
    assert "degraded KNS: 1 failed link(s), 0 failed node(s)" in log
    described = run / "hdor.conf" if plugin_dir else degraded.conf
    assert f"hdor: the KNS is described by {described}: k=4 n=2, 40 devices" in log
    assert ("registered external routing engine 'hdor'" in log) == bool(plugin_dir)
    return log


def test_smoke_matrix_plugin_and_builtin_on_3323_and_3324(opensm_3324, intree_opensm, libhdor, degraded,
                                                          tmp_path):
    from ibtool.sim.runner import require

    runs = {
        "plugin 3.3.23": dict(exe=require("opensm", "opensm"), plugin_dir=PLUGIN),
        "built in 3.3.23": dict(exe=intree_opensm, conf_option=True),
        "plugin 3.3.24": dict(exe=opensm_3324.stock, plugin_dir=opensm_3324.plugin_dir),
        "built in 3.3.24": dict(exe=opensm_3324.intree, args=["--hdor_config", str(degraded.conf)]),
    }
    got = {}
    for name, kw in runs.items():
        log = route_degraded(degraded, tmp_path / name.replace(" ", "-"), **kw)
        assert f"OpenSM {name.split()[-1]}" in log, name
        got[name] = of_run(tmp_path / name.replace(" ", "-") / "osm")
    assert "sl2vl" in got["plugin 3.3.23"]  # the detours' VLs are in the comparison
    for name, digests in got.items():
        assert digests == got["plugin 3.3.23"], f"{name} differs from the plugin on Debian's 3.3.23"


def test_builtin_hdor_config_naming_a_missing_file_declines(opensm_3324, degraded, tmp_path):
    run = tmp_path / "run"
    rc, log, _ = run_opensm(degraded.net, run, str(opensm_3324.intree),
                            CONF + f"hdor_config {tmp_path / 'missing.conf'}\n", env={"LD_LIBRARY_PATH": ""},
                            discover=False)
    assert rc == 0
    assert f"ERR HD04: hdor: cannot read {tmp_path / 'missing.conf'}" in log
    assert "hdor: declined (HD04)" in log and "nue tables configured on all switches" in log
